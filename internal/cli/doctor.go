package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/version"
)

func (e *env) doctorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Show the settings in force, the database and the machine's tools skrip can use",
		Long: "Show what `skrip serve` would use with the same flags, env and --config: each setting and where it\n" +
			"came from, the database and its version, the blob store, and the programs of this machine skrip can use.\n\n" +
			settingsHelp(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			loaded, err := e.loadConfig(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 20*time.Second)
			defer cancel()
			e.doctor(ctx, loaded)
			return nil
		},
	}
	config.RegisterFlags(cmd.Flags())
	return cmd
}

func (e *env) doctor(ctx context.Context, loaded *config.Loaded) {
	cfg := loaded.Config
	w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "skrip %s (%s %s/%s)\n\n", version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)

	fmt.Fprintln(w, "Settings\tvalue\tfrom")
	for _, v := range loaded.Values {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", v.Env(), v.Display(), v.Source)
	}

	fmt.Fprintln(w, "\nDatabase\t\t")
	where := cfg.Path("skrip.db")
	kind := "SQLite"
	if store.IsPostgresURL(cfg.DatabaseURL) {
		kind, where = "PostgreSQL", "SKRIP_DATABASE_URL"
	}
	ver, applied, err := store.Inspect(ctx, cfg.DatabaseURL, cfg.Path("skrip.db"))
	if err != nil {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", kind, where, "not usable: "+err.Error())
	} else {
		fmt.Fprintf(w, "  %s\t%s\t%s, %d migrations applied\n", kind, where, ver, applied)
	}

	fmt.Fprintln(w, "\nBlob store\t\t")
	switch cfg.Blob {
	case "nats":
		where, state, cluster := natsState(ctx, cfg)
		fmt.Fprintf(w, "  nats\t%s\tbucket %s, %d replica(s)\n", where, cfg.NATSBucket, cfg.NATSReplicas)
		fmt.Fprintf(w, "  JetStream\t\t%s\n", state)
		if cluster != nil {
			printCluster(w, cfg, *cluster)
		}
	default:
		fmt.Fprintf(w, "  fs\t%s\t%s\n", cfg.Path("blobs"), dirState(cfg.Path("blobs")))
		if cfg.NATSURL != "" {
			// A worker's settings: no blob store of its own, the cluster's NATS.
			where, state, cluster := natsState(ctx, cfg)
			fmt.Fprintf(w, "  nats\t%s\t%s\n", where, state)
			if cluster != nil {
				printCluster(w, cfg, *cluster)
			}
		}
	}

	e.doctorRunner(ctx, w, cfg)

	fmt.Fprintln(w, "\nMachine\t\t")
	for _, t := range machineTools(ctx) {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", t.name, t.where, t.state)
	}
	w.Flush()
}

// natsState describes the NATS server the settings name and its JetStream account. An
// embedded server's store is opened only when no skrip server answers at --addr, so that
// two servers never share one store.
func natsState(ctx context.Context, cfg config.Config) (where, state string, cluster *dispatch.Overview) {
	var nc *nats.Conn
	if cfg.NATSURL != "" {
		where = natsserver.RedactURL(cfg.NATSURL)
		var err error
		if nc, err = natsserver.Dial(cfg.NATSURL, app.NATSAuth(cfg), nats.Name("skrip doctor"), nats.Timeout(3*time.Second)); err != nil {
			return where, "not reachable: " + err.Error(), nil
		}
	} else {
		dir := cfg.Path("nats")
		where = "embedded nats-server under " + dir
		if _, err := os.Stat(dir); err != nil {
			return where, "not created yet; `skrip serve --blob nats` creates it", nil
		}
		probe := &http.Client{Timeout: time.Second}
		if resp, err := probe.Get("http://" + cfg.Addr + "/healthz"); err == nil {
			resp.Body.Close()
			return where, "in use by the skrip server at " + cfg.Addr + "; not opened twice (its /readyz checks the store)", nil
		}
		srv, err := natsserver.Start(dir, natsserver.WithReadyTimeout(10*time.Second))
		if err != nil {
			return where, "cannot start: " + err.Error(), nil
		}
		defer srv.Shutdown()
		if nc, err = srv.Connect(nats.Name("skrip doctor")); err != nil {
			return where, "cannot connect: " + err.Error(), nil
		}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return where, err.Error(), nil
	}
	st, err := natsserver.JetStreamState(ctx, js)
	if err != nil {
		return where, "JetStream not usable: " + err.Error(), nil
	}
	if cfg.NATSURL != "" {
		o := dispatch.Describe(ctx, js, cfg.NATSBucket, cfg.NATSWorkBucket)
		cluster = &o
	}
	return where, fmt.Sprintf("server %s, %s", nc.ConnectedServerVersion(), st), cluster
}

// printCluster shows a cluster's queue, buckets and workers (docs/cluster.md).
func printCluster(w io.Writer, cfg config.Config, o dispatch.Overview) {
	mode := "off: SKRIP_BLOB=nats and a PostgreSQL SKRIP_DATABASE_URL turn it on for `skrip serve`"
	if cfg.Cluster() {
		mode = "on"
	}
	fmt.Fprintf(w, "\nCluster\t\t%s\n", mode)
	fmt.Fprintf(w, "  run queue\t%s\t%s, %d redelivered\n", protocol.Stream, o.Queue, o.Redelivered)
	for _, b := range o.Buckets {
		fmt.Fprintf(w, "  bucket\t\t%s\n", b)
	}
	if len(o.Workers) == 0 {
		fmt.Fprintf(w, "  workers\t\tnone seen (a worker's heartbeat lasts %s)\n", 3*protocol.HeartbeatEvery(cfg.RunAckWait))
	}
	now := time.Now()
	for _, hb := range o.Workers {
		fmt.Fprintf(w, "  worker %s\t%s\t%s, %d/%d busy, %d sandbox(es) (budget %s), seen %s, version %s\n", hb.Worker, hb.Host, hb.Runner,
			hb.Busy, hb.Concurrency, len(hb.Sandboxes), runner.HumanBytes(hb.BoxBudget), hb.Seen(now), hb.Version)
	}
}

// doctorRunner says which sandbox runs would use, the runtime tools get in it, and how
// each limit is enforced. It only inspects: a running server's runs and scratch
// directories are left alone.
func (e *env) doctorRunner(ctx context.Context, w io.Writer, cfg config.Config) {
	fmt.Fprintf(w, "\nRunner\tSKRIP_RUNNER=%s\t\n", cfg.Runner)
	quiet := slog.New(slog.DiscardHandler)
	if cfg.Runner != "bwrap" {
		image := cfg.RunnerImage
		if image == "" {
			image = docker.DefaultImage()
		}
		r, err := docker.Inspect(ctx, docker.Config{Image: image}, quiet)
		if err == nil {
			defer r.Close()
			fmt.Fprintf(w, "  docker\t%s\timage %s\n", r.Version(), image)
			rt, rtErr := r.Runtime(ctx)
			switch recipe, err := r.Recipe(ctx); {
			case err != nil:
				fmt.Fprintf(w, "  runtime\tNOT known\t%s\n", err)
			case recipe == rootfs.Recipe():
				fmt.Fprintf(w, "  runtime\tcurrent\timported from a rootfs of this skrip's recipe (%s)\n", recipe[:12])
			case recipe == "":
				fmt.Fprintf(w, "  runtime\tno recipe\tthe image records none (made from deploy/runner/Dockerfile, or by an older skrip): see its packages below\n")
			default:
				fmt.Fprintf(w, "  runtime\tWARNING\tthe image was imported from a rootfs of another recipe (%.12s, this skrip's is %.12s); %s\n", recipe, rootfs.Recipe(), runtimeHowTo)
			}
			warnMissing(w, rt)
			printLimits(ctx, w, r, cfg)
			printWarm(w, nil, cfg)
			printRuntime(w, "image "+image+", read from its own /"+rootfs.StatusFile, rt, rtErr)
			return
		}
		fmt.Fprintf(w, "  docker\tunavailable\t%s\n", err)
		if cfg.Runner == "docker" {
			fmt.Fprintf(w, "  \t\tskrip serve refuses to start without a sandbox\n")
			return
		}
	}
	bc := app.BwrapConfig(cfg)
	r, err := bwrap.Inspect(bc, quiet)
	if err != nil {
		fmt.Fprintf(w, "  bwrap\tunavailable\t%s\n", err)
		fmt.Fprintf(w, "  \t\tskrip serve refuses to start without a sandbox\n")
		return
	}
	root, source := bc.Rootfs, bc.Rootfs+", read from its /"+rootfs.StatusFile
	if root == "" {
		source = "the host's /usr, read from /" + rootfs.StatusFile
		fmt.Fprintf(w, "  bwrap\t%s\troot the host's /usr; memory, pids and CPU through %s\n", r.Version(), r.Limiter())
		fmt.Fprintf(w, "  runtime\tWARNING\tthe host's /usr is a fallback: tools get this machine's Python and packages, not skrip's runtime; %s\n", runtimeHowTo)
	} else {
		fmt.Fprintf(w, "  bwrap\t%s\troot %s; memory, pids and CPU through %s\n", r.Version(), root, r.Limiter())
		switch st, err := rootfs.Inspect(root); {
		case err != nil:
			fmt.Fprintf(w, "  runtime\tNOT known\t%s\n", err)
		case st.Current():
			fmt.Fprintf(w, "  runtime\tcurrent\t%s\n", st.Describe())
		default:
			fmt.Fprintf(w, "  runtime\tWARNING\t%s is %s, not of this skrip's recipe; %s\n", root, st.Describe(), runtimeHowTo)
		}
	}
	rt, rtErr := rootfs.ReadRuntime(cmp.Or(root, "/"))
	warnMissing(w, rt)
	printLimits(ctx, w, r, cfg)
	printWarm(w, r, cfg)
	printRuntime(w, source, rt, rtErr)
}

// printWarm shows the warm starts' budget, and, on bwrap (r), what interpreters a server
// on this work directory has parked now. The Docker runner's parked containers show in
// `docker ps --filter label=skrip.pool` and in the server's /metrics.
func printWarm(w io.Writer, r *bwrap.Runner, cfg config.Config) {
	if cfg.RunnerWarmMemory <= 0 {
		fmt.Fprintf(w, "\nWarm starts\toff\tSKRIP_RUNNER_WARM_MEMORY is 0: every run starts Python itself\n")
		return
	}
	fmt.Fprintf(w, "\nWarm starts\ton\tinterpreters parked ahead of runs may hold %s (SKRIP_RUNNER_WARM_MEMORY)\n", runner.HumanBytes(cfg.RunnerWarmMemory))
	if r == nil {
		return
	}
	if n, bytes, ok := r.WarmOnMachine(); ok {
		fmt.Fprintf(w, "  parked now\t%d\thold %s (parked by a server on this data dir, or running their run)\n", n, runner.HumanBytes(bytes))
	} else {
		fmt.Fprintf(w, "  parked now\tNOT known\tno cgroups here to read their memory from\n")
	}
}

// runtimeHowTo says how to get skrip's runtime.
const runtimeHowTo = "get it with `bash scripts/deps.sh` (in the repository) or `sudo skrip runner-image build`, which build " +
	rootfs.DefaultDir + " (bwrap uses it while SKRIP_BWRAP_ROOTFS is empty) and import it as the Docker runner's image"

// warnMissing warns when parts of the runtime are not installed.
func warnMissing(w io.Writer, rt []rootfs.Component) {
	var missing []string
	for _, c := range rt {
		if c.Version == "" {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "  runtime\tWARNING\tmissing, so the tools that use them fail: %s; %s\n", strings.Join(missing, ", "), runtimeHowTo)
	}
}

// printRuntime lists the runtime tools get: Python and the packages they use, with the
// Debian package versions.
func printRuntime(w io.Writer, source string, rt []rootfs.Component, err error) {
	// No tab in the heading: the source is long and would widen the version column.
	fmt.Fprintf(w, "\nRuntime (%s)\n", source)
	if err != nil {
		fmt.Fprintf(w, "  \tNOT known\t%s\n", err)
		return
	}
	for _, c := range rt {
		v := c.Version
		if v == "" {
			v = "MISSING"
		}
		fmt.Fprintf(w, "  %s\t%s\tDebian package %s\n", c.Name, v, c.Package)
		if c.Name == "pandoc" && c.Version != "" {
			// The original hub's tools are written for pandoc 3.8 (docs/runner-contract.md).
			fmt.Fprintf(w, "  pandoc's version\t%s\ttools' pandoc 3.8 options (--syntax-highlighting) reach it through skrip's wrapper, the shim's bin/pandoc\n",
				upstreamVersion(c.Version))
		}
	}
}

// upstreamVersion is a Debian version without its epoch and its Debian part:
// "1:3.1.11.1+ds-2" is pandoc's "3.1.11.1".
func upstreamVersion(v string) string {
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndexByte(v, '-'); i > 0 {
		v = v[:i]
	}
	if i := strings.IndexAny(v, "+~"); i > 0 {
		v = v[:i]
	}
	return v
}

// printLimits says how r enforces the limits of tool runs and of agent sandboxes.
func printLimits(ctx context.Context, w io.Writer, r runner.Engine, cfg config.Config) {
	printEnforcement(w, r.Enforcement(app.RunLimits(cfg)))
	sb := app.SandboxConfig(cfg)
	fmt.Fprintf(w, "\nAgent sandboxes\t%s runner\tdestroyed after %s unused, %d per user, one exec up to %s\n",
		r.Name(), sb.IdleTimeout, sb.MaxPerUser, sb.ExecTimeout)
	printEnforcement(w, r.BoxEnforcement(sb.Limits, sb.WorkspaceBytes))
	printBudget(ctx, w, r, cfg, sb.WorkspaceBytes)
}

// printBudget shows the memory budget of all workspaces together beside the machine's
// memory.
func printBudget(ctx context.Context, w io.Writer, r runner.Sandboxes, cfg config.Config, workspace int64) {
	mem, err := r.Memory(ctx)
	if err != nil {
		fmt.Fprintf(w, "  memory budget\tNOT known\t%s: skrip serve refuses to start\n", err)
		return
	}
	fmt.Fprintf(w, "  machine memory\t\t%s\n", mem)
	budget, err := app.SandboxBudget(ctx, cfg, r)
	if err != nil {
		fmt.Fprintf(w, "  memory budget\tREFUSED\t%s; skrip serve refuses to start\n", err)
		return
	}
	fmt.Fprintf(w, "  memory budget\tenforced\t%s for the /workspace of all sandboxes together (%s): room for %d of %s; a create past it gets 507\n",
		runner.HumanBytes(budget), sandbox.BudgetSetting, budget/runner.WorkspaceMemory(workspace), runner.HumanBytes(workspace))
}

func printEnforcement(w io.Writer, list []runner.Enforced) {
	for _, en := range list {
		state := "enforced"
		if !en.OK {
			state = "NOT fully enforced"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\n", en.Limit, state, en.How)
	}
}

func dirState(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "not created yet"
	}
	if !st.IsDir() {
		return "not a directory"
	}
	return "exists"
}

type tool struct{ name, where, state string }

// machineTools reports the programs and kernel features skrip can use on this machine.
func machineTools(ctx context.Context) []tool {
	probe := func(name, install string, versionArgs ...string) tool {
		path, err := exec.LookPath(name)
		if err != nil {
			return tool{name, "not found", "install: " + install}
		}
		out, _ := exec.CommandContext(ctx, path, versionArgs...).CombinedOutput()
		v := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
		if v == "" {
			v = "found"
		}
		return tool{name, path, v}
	}
	tools := []tool{
		probe("bwrap", "apt-get install bubblewrap", "--version"),
		probe("docker", "apt-get install docker.io", "version", "--format", "engine {{.Server.Version}}"),
		probe("python3", "apt-get install python3", "--version"),
		probe("weasyprint", "apt-get install weasyprint", "--version"),
	}
	return append(tools, cgroupState())
}

// cgroupState says which cgroup hierarchy the machine has.
func cgroupState() tool {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		b, _ := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
		return tool{"cgroups", "/sys/fs/cgroup", "v2: " + strings.TrimSpace(string(b))}
	}
	var v1 []string
	for _, c := range []string{"memory", "pids", "cpu"} {
		if _, err := os.Stat("/sys/fs/cgroup/" + c); err == nil {
			v1 = append(v1, c)
		}
	}
	if len(v1) > 0 {
		return tool{"cgroups", "/sys/fs/cgroup", "v1: " + strings.Join(v1, ", ")}
	}
	return tool{"cgroups", "not found", "limits fall back to rlimits"}
}
