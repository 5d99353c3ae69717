// Package app assembles a skrip server from its settings: it opens the data dir, the
// database and the blob store, bootstraps the admin, and serves HTTP until its context
// ends, then shuts down gracefully. `skrip serve` and the end-to-end tests both use it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/workflow"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/blobcache"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/janitor"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/resumable"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/signon"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/version"
)

// App is a running skrip server's parts.
type App struct {
	cfg      config.Config
	log      *slog.Logger
	Store    *store.Store
	Accounts *account.Service
	// SignOn is OpenID Connect sign-in; nil when it is off.
	SignOn   *signon.Service
	Blobs    blob.Store
	Files    *staging.Service
	Janitor  *janitor.Janitor
	Runner   runner.Engine // runs tools, and keeps sandboxes unless in a cluster
	Runs     *run.Service
	Sessions *session.Service
	Catalog  *catalog.Service
	Workflow *workflow.Service
	// Sandboxes are the persistent agent sandboxes.
	Sandboxes *sandbox.Service
	// Uploads serves resumable uploads (the tus protocol at /api/v1/uploads/).
	Uploads *resumable.Handler
	Metrics *metrics.Metrics
	// Handler is what Serve answers with: the API and the web UI. A test may wrap it
	// before Serve (apptest checks every error body the suites produce).
	Handler http.Handler
	closers []func() error
	nc      *nats.Conn // the NATS connection, with SKRIP_BLOB=nats
	// sessionCache holds session files by checksum, with SKRIP_BLOB=nats.
	sessionCache *blobcache.Cache
}

// New opens everything cfg names. The caller must Close the App.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*App, error) {
	a := &App{cfg: cfg, log: log, Metrics: metrics.New()}
	if err := a.open(ctx); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func (a *App) open(ctx context.Context) error {
	if err := a.cfg.CheckServe(); err != nil {
		return err
	}
	if err := os.MkdirAll(a.cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("creating the data dir %s: %w", a.cfg.DataDir, err)
	}
	lock, err := lockDataDir(a.cfg.DataDir, "server")
	if err != nil {
		return err
	}
	a.closers = append(a.closers, lock.Close)
	st, err := store.Open(ctx, a.cfg.DatabaseURL, a.cfg.Path("skrip.db"))
	if err != nil {
		return err
	}
	a.Store = st
	a.closers = append(a.closers, st.Close)
	a.Accounts = account.New(st, account.Limits{Checks: a.cfg.PasswordChecks, Wait: a.cfg.PasswordCheckWait,
		FailuresPerName: a.cfg.SignInFailuresPerName, FailuresPerAddress: a.cfg.SignInFailuresPerAddress,
		MaxDelay: a.cfg.SignInMaxDelay, Entries: a.cfg.SignInThrottleEntries, Metrics: a.Metrics,
		TokenMaxLifetime: a.cfg.TokenMaxLifetime, WebSessionIdle: a.cfg.WebSessionIdle, WebSessionMax: a.cfg.WebSessionMax,
		CLILogins:          account.CLILoginLimits{Pending: a.cfg.CLILoginsPending, PerAddress: a.cfg.CLILoginsPerAddress, CodeFailures: a.cfg.CLICodeFailures},
		TokensPerUser:      a.cfg.TokensPerUser,
		AdminPasswordsOnly: a.cfg.Passwords == "admin"})
	if a.SignOn, err = signon.New(ctx, a.cfg.SignOn, a.Accounts, a.log); err != nil {
		return err
	}
	if err := a.Accounts.Bootstrap(ctx, a.cfg.BootstrapAdminToken, a.cfg.DataDir, a.log); err != nil {
		return err
	}
	if err := a.openBlobs(ctx); err != nil {
		return err
	}
	a.Files = staging.New(st, a.Blobs, staging.Limits{
		MaxFileBytes: a.cfg.FilesMaxFileBytes, UserQuotaBytes: a.cfg.FilesUserQuotaBytes, MaxTotalBytes: a.cfg.FilesMaxTotalBytes,
		LinkMaxTTL:  a.cfg.FilesLinkMaxTTL,
		UploadTTL:   a.cfg.FilesUploadTTL,
		Versions:    a.cfg.FilesVersions,
		UploadLinks: a.cfg.UploadLinksPerUser,
		OpenUploads: a.cfg.UploadsPerUser,
	}, a.Metrics, a.log)
	a.Sessions = session.New(st, a.Blobs, a.cfg.SessionFilesTTL, a.log)
	a.Sessions.UseQuota(a.cfg.FilesUserQuotaBytes, a.cfg.FilesMaxTotalBytes)
	if a.cfg.Blob == "nats" {
		// The objects are not files on this disk: runs get the session files by hard
		// link from a cache beside the input directories, fetched once per checksum.
		a.sessionCache, err = blobcache.Open(blobcache.Config{Dir: a.cfg.Path("cache", "session-files"), MaxBytes: a.cfg.SessionCacheBytes,
			Hits: a.Metrics.SessionCacheHits, Misses: a.Metrics.SessionCacheMisses})
		if err != nil {
			return fmt.Errorf("opening the session files' cache under %s: %w", a.cfg.Path("cache", "session-files"), err)
		}
		a.Sessions.UseCache(a.sessionCache)
	}
	if a.Runner, err = OpenRunner(ctx, a.cfg, a.log); err != nil {
		return err
	}
	a.closers = append(a.closers, a.Runner.Close)
	registerWarm(a.Metrics, a.Runner)
	if w, ok := a.Runner.(runner.Warmer); ok && a.cfg.RunnerConcurrency != 0 {
		// The tools run last before a restart are likely the next ones run.
		if sources, err := a.Store.RecentSources(ctx, 200); err != nil {
			a.log.Warn("finding the tools run lately, to park interpreters for them", "error", err)
		} else {
			w.Prime(sources, RunLimits(a.cfg))
		}
	}
	sbCfg := SandboxConfig(a.cfg)
	if sbCfg.MemoryBudget, err = SandboxBudget(ctx, a.cfg, a.Runner); err != nil {
		return err
	}
	if sbCfg.WorkspaceBytes > sbCfg.MemoryBudget {
		a.log.Warn("a sandbox of the largest workspace does not fit in the memory budget: creates asking for no smaller one get 507",
			"workspace", runner.HumanBytes(sbCfg.WorkspaceBytes), "budget", runner.HumanBytes(sbCfg.MemoryBudget), "setting", sandbox.BudgetSetting)
	}
	a.Sandboxes = sandbox.New(st, a.Runner, a.Runner.Name(), a.Files, sbCfg, a.log)
	conc := concurrency(a.cfg)
	if a.cfg.Cluster() {
		conc = 0 // runs go to the cluster's queue, this node's worker among others
	}
	a.Runs, err = run.New(st, a.Blobs, a.Runner, run.Config{
		Limits: RunLimits(a.cfg), Concurrency: conc, Queue: a.cfg.RunnerQueue, PerUser: a.cfg.RunsPerUser, LintsPerUser: a.cfg.LintsPerUser,
		WorkDir: a.cfg.Path("work", "inputs"), Policy: contract.DefaultPolicy(),
		Uploads:        upload.Limits{MaxFiles: a.cfg.UploadMaxFiles, MaxFileBytes: a.cfg.UploadMaxFileBytes, MaxTotalBytes: a.cfg.UploadMaxTotalBytes},
		Node:           node(a.cfg),
		SessionWritten: a.Sessions.Recorded,
		UserQuotaBytes: a.cfg.FilesUserQuotaBytes,
		MaxTotalBytes:  a.cfg.FilesMaxTotalBytes,
	}, a.Metrics, a.log)
	if err != nil {
		return err
	}
	a.closers = append(a.closers, func() error { a.Runs.Shutdown(a.cfg.ShutdownGrace); return nil })
	if a.cfg.Cluster() {
		if err := a.openCluster(ctx); err != nil {
			return err
		}
	}
	// This node's unfinished runs fail; a cluster's queue keeps the cluster's.
	if err := a.Runs.Recover(ctx); err != nil {
		return err
	}
	// After openCluster: a cluster's sandboxes are its workers'.
	if err := a.Sandboxes.Recover(ctx); err != nil {
		return fmt.Errorf("recovering the agent sandboxes: %w", err)
	}
	a.Janitor = janitor.New(janitor.Deps{Accounts: a.Accounts, Files: a.Files, Sessions: a.Sessions, Runs: a.Runs,
		Sandboxes: a.Sandboxes, Blobs: a.Blobs, Lease: st.Lease(janitor.LeaseName), Metrics: a.Metrics, Log: a.log},
		janitor.Config{ArtifactsTTL: a.cfg.RunArtifactsTTL, SharedBlobs: a.cfg.Blob == "nats" && a.cfg.NATSURL != "", Cluster: a.cfg.Cluster(),
			AuditRetention: a.cfg.AuditRetention})
	a.closers = append(a.closers, a.Janitor.Close)
	// Nothing is in flight yet: whatever a crash left in the blob store goes now.
	if _, err := a.Janitor.Leftovers(ctx); err != nil {
		a.log.Error("removing leftovers of an earlier run of the server; the janitor retries", "error", err)
	}
	a.Catalog = catalog.New(st, a.cfg.UploadMaxFiles)
	a.Catalog.SetReview(a.cfg.Review)
	a.Catalog.SetReportsPerHour(a.cfg.ReportsPerHour)
	a.Workflow = workflow.New(a.Runs, a.Sessions, a.Catalog, a.cfg.EditorRunTimeout)
	a.Handler, err = a.routes(st)
	return err
}

// RunLimits are the limits of a production run, from the settings.
func RunLimits(cfg config.Config) runner.Limits {
	return runner.Limits{WallTime: cfg.RunTimeout, MemoryBytes: cfg.RunMemoryBytes, Pids: cfg.RunPids, CPUs: cfg.RunCPUs,
		TmpBytes: cfg.RunTmpBytes, OutputBytes: cfg.RunOutputBytes, LogBytes: cfg.RunLogBytes}
}

// SandboxConfig is the limits of agent sandboxes, from the settings: a run's memory,
// pids, CPU, /tmp and log limits, and the sandbox settings.
func SandboxConfig(cfg config.Config) sandbox.Config {
	l := RunLimits(cfg)
	l.WallTime, l.OutputBytes = 0, 0
	return sandbox.Config{Limits: l, WorkspaceBytes: cfg.SandboxWorkspace, IdleTimeout: cfg.SandboxIdleTimeout,
		MaxIdleTimeout: cfg.SandboxMaxIdle, AdminMaxIdleTimeout: max(24*time.Hour, cfg.SandboxIdleTimeout, cfg.SandboxMaxIdle),
		UserShare: cfg.SandboxUserShare, ExecTimeout: cfg.SandboxExecTimeout, MaxPerUser: cfg.SandboxMaxPerUser, MaxTotal: cfg.SandboxMaxTotal,
		SpoolDir: cfg.Path("work", "sandbox-uploads"), Node: node(cfg)}
}

// SandboxBudget is the memory budget of the sandboxes' workspaces on r's machine, from
// the settings; a budget the machine cannot hold is an error that says so.
func SandboxBudget(ctx context.Context, cfg config.Config, r runner.Sandboxes) (int64, error) {
	mem, err := r.Memory(ctx)
	if err != nil {
		return 0, fmt.Errorf("checking %s against the machine's memory: %w", sandbox.BudgetSetting, err)
	}
	return sandbox.MemoryBudget(cfg.SandboxMemoryBudget, mem)
}

// node names this server among those sharing a database: its host and data dir.
func node(cfg config.Config) string { return cfg.Node() }

// registerWarm exports the parked interpreters of rn, when it parks any.
func registerWarm(m *metrics.Metrics, rn runner.Runner) {
	if w, ok := rn.(runner.Warmer); ok {
		m.RegisterWarm(func() (int, int, int64, int64, int64, int64) {
			st := w.WarmStats()
			return st.Parked, st.Coming, st.Bytes, st.Budget, st.Warm, st.Cold
		})
	}
}

// BwrapConfig is the bwrap runner's configuration from the settings. Its root is
// SKRIP_BWRAP_ROOTFS, or when that is empty the rootfs scripts/deps.sh and `skrip
// runner-image build` prepare (rootfs.DefaultDir) if it is there, else the host's /usr.
func BwrapConfig(cfg config.Config) bwrap.Config {
	return bwrap.Config{WorkDir: cfg.Path("work", "bwrap"), Rootfs: rootfs.Choose(cfg.BwrapRootfs), UID: cfg.BwrapUID, GID: cfg.BwrapGID,
		WarmMemory: cfg.RunnerWarmMemory}
}

// OpenRunner opens the sandbox SKRIP_RUNNER names: docker (the engine must answer and
// the image exist), bwrap, or auto (docker when it can, else bwrap). There is no
// unsandboxed mode: when no sandbox works here, it fails with what to install.
func OpenRunner(ctx context.Context, cfg config.Config, log *slog.Logger) (runner.Engine, error) {
	openDocker := func() (runner.Engine, error) {
		image := cfg.RunnerImage
		if image == "" {
			image = docker.DefaultImage()
		}
		server, _ := filepath.Abs(cfg.DataDir)
		pool := cfg.RunnerConcurrency
		if pool <= 0 {
			pool = runtime.NumCPU()
		}
		return docker.New(ctx, docker.Config{Image: image, Server: server, PoolSize: min(pool, 8), PoolLimits: RunLimits(cfg),
			WarmMemory: cfg.RunnerWarmMemory}, log)
	}
	openBwrap := func() (runner.Engine, error) {
		return bwrap.New(BwrapConfig(cfg), log)
	}
	switch cfg.Runner {
	case "docker":
		r, err := openDocker()
		if err != nil {
			return nil, fmt.Errorf("no sandbox for tool runs (SKRIP_RUNNER=docker): %w", err)
		}
		return r, nil
	case "bwrap":
		r, err := openBwrap()
		if err != nil {
			return nil, fmt.Errorf("no sandbox for tool runs (SKRIP_RUNNER=bwrap): %w", err)
		}
		return r, nil
	default:
		r, derr := openDocker()
		if derr == nil {
			return r, nil
		}
		log.Info("not using the Docker runner", "reason", derr.Error())
		r, berr := openBwrap()
		if berr != nil {
			return nil, fmt.Errorf("no sandbox for tool runs: docker: %v; bwrap: %w", derr, berr)
		}
		return r, nil
	}
}

// openBlobs opens the blob store the settings name: files under <data>/blobs, or a
// JetStream Object Store on the NATS server at SKRIP_NATS_URL or on an embedded one.
func (a *App) openBlobs(ctx context.Context) error {
	if a.cfg.Blob != "nats" {
		fs, err := fsblob.New(a.cfg.Path("blobs"))
		if err != nil {
			return fmt.Errorf("opening the blob directory %s: %w", a.cfg.Path("blobs"), err)
		}
		a.Blobs = fs
		a.closers = append(a.closers, fs.Close)
		return nil
	}
	var nc *nats.Conn
	auth := NATSAuth(a.cfg)
	if a.cfg.NATSURL == "" {
		if !auth.IsZero() {
			return errors.New("the SKRIP_NATS_USER, _PASSWORD, _TOKEN, _CREDS, _NKEY_SEED and _TLS_* settings are for the NATS server at SKRIP_NATS_URL, which is empty; the embedded nats-server takes none (no other process can reach it)")
		}
		srv, err := natsserver.Start(a.cfg.Path("nats"), natsserver.WithLogger(a.log.With("component", "nats")))
		if err != nil {
			return fmt.Errorf("starting the embedded nats-server under %s: %w", a.cfg.Path("nats"), err)
		}
		a.closers = append(a.closers, func() error { srv.Shutdown(); return nil })
		if nc, err = srv.Connect(nats.Name("skrip")); err != nil {
			return err
		}
	} else {
		var err error
		nc, err = natsserver.Dial(a.cfg.NATSURL, auth, nats.Name("skrip"), nats.MaxReconnects(-1),
			nats.PingInterval(2*time.Second), nats.MaxPingsOutstanding(3))
		if err != nil {
			return err
		}
	}
	a.closers = append(a.closers, func() error { nc.Close(); return nil })
	a.nc = nc
	ns, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: a.cfg.NATSBucket, Replicas: a.cfg.NATSReplicas,
		Description: "skrip: staged files, session files and run artifacts (docs/operating.md)",
		Node:        node(a.cfg), Exclusive: a.cfg.NATSURL == "", Log: a.log})
	if err != nil {
		return fmt.Errorf("opening the JetStream Object Store bucket %s: %w", a.cfg.NATSBucket, err)
	}
	a.Blobs = ns
	a.closers = append(a.closers, ns.Close)
	return nil
}

// NATSAuth is the credentials and TLS settings for the NATS server at SKRIP_NATS_URL.
func NATSAuth(cfg config.Config) natsserver.Auth {
	return natsserver.Auth{User: cfg.NATSUser, Password: cfg.NATSPassword, Token: cfg.NATSToken, CredsFile: cfg.NATSCreds,
		NKeySeedFile: cfg.NATSNKeySeed, TLSCA: cfg.NATSTLSCA, TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey}
}

// Close releases what New opened, in reverse order.
func (a *App) Close() error {
	var err error
	for i := len(a.closers) - 1; i >= 0; i-- {
		err = errors.Join(err, a.closers[i]())
	}
	a.closers = nil
	return err
}

// sandboxSweep is how often idle sandboxes are looked for at most: their timeouts are
// minutes, far shorter than the janitor's interval.
const sandboxSweep = 30 * time.Second

// sweepInterval is how often idle sandboxes are looked for: every sandboxSweep, or
// twice within the default idle timeout when that is shorter, and never less often
// than the full janitor pass.
func sweepInterval(cfg config.Config) time.Duration {
	return min(cfg.CleanupInterval, sandboxSweep, max(cfg.SandboxIdleTimeout/2, time.Second))
}

// Serve answers HTTP on ln until ctx ends, then stops accepting and waits up to the
// shutdown grace for requests in flight.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	srv := a.httpServer(ctx)
	var inflight sync.WaitGroup
	srv.Handler = counted(srv.Handler, &inflight)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(jsonErrors{Listener: ln, maxHeaderBytes: int64(srv.MaxHeaderBytes)}) }()
	jctx, stopJanitor := context.WithCancel(ctx)
	defer stopJanitor()
	go a.Janitor.Run(jctx, a.cfg.CleanupInterval)
	go a.Janitor.RunSandboxes(jctx, sweepInterval(a.cfg))
	a.log.Info("skrip is serving", "addr", "http://"+ln.Addr().String(), "version", version.Version,
		"database", string(a.Store.Dialect()), "data_dir", a.cfg.DataDir)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info("shutting down", "grace", a.cfg.ShutdownGrace.String())
	// A resumable upload's request under way stops reading now, keeps the bytes it
	// got and answers 503, rather than holding the shutdown up and then losing them.
	if a.Uploads != nil {
		a.Uploads.Interrupt()
	}
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		a.log.Warn("requests still running at the end of the grace period were cut off", "error", err)
		srv.Close()
		// A handler cut off goes on until it sees so: one that was taking a resumable
		// upload's bytes stores those it got, and the upload resumes from there. Give
		// them that time rather than ending the process under them.
		ended := make(chan struct{})
		go func() { inflight.Wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(cutOffWait):
			a.log.Warn("requests cut off were still running " + cutOffWait.String() + " later")
		}
	}
	return nil
}

// cutOffWait is how long Serve waits for the handlers of requests it cut off to end.
const cutOffWait = 10 * time.Second

// counted is h, with the requests it is serving counted in wg.
func counted(h http.Handler, wg *sync.WaitGroup) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wg.Add(1)
		defer wg.Done()
		h.ServeHTTP(w, r)
	})
}
