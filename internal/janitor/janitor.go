// Package janitor owns periodic cleanup: expired staged files, uploads that never
// finished, expired browser sign-ins, session file sets past their TTL, run artifacts past
// theirs, idle agent sandboxes, and what a crash leaves in the blob store. `skrip serve`
// runs it at start (the leftovers) and every SKRIP_CLEANUP_INTERVAL, on the one server
// that holds the janitor lease; `skrip cleanup` asks a server for one pass.
package janitor

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// Report is what one pass removed. It is the API's answer to a cleanup
// (wire.CleanupReport) itself, not a copy of it, so the two cannot part ways.
type Report = wire.CleanupReport

// sweeper is implemented by blob stores that can leave leftovers behind after a crash
// (temp files, unreferenced objects).
type sweeper interface {
	Sweep(ctx context.Context) (int, error)
}

// OrphanAge is how old an unreferenced session file must be before it is removed when
// other servers write to the same blob store: one of them may be storing that set now.
const OrphanAge = time.Hour

// Config says what the janitor keeps.
type Config struct {
	// ArtifactsTTL is how long a run's artifacts are kept after it finished; 0 keeps them.
	ArtifactsTTL time.Duration
	// SharedBlobs says that other servers write to the blob store (an external NATS).
	SharedBlobs bool
	// Cluster says that every server reaches every sandbox (they live on a cluster's
	// workers): idle ones are swept by the lease's holder only.
	Cluster bool
	// AuditRetention is how long audit events are kept; 0 keeps them for good.
	AuditRetention time.Duration
}

// Janitor removes what has expired.
type Janitor struct {
	accounts  *account.Service
	files     *staging.Service
	sessions  *session.Service
	runs      *run.Service
	sandboxes *sandbox.Service
	blobs     blob.Store
	cfg       Config
	lease     *store.Lease
	metrics   *metrics.Metrics
	log       *slog.Logger
	mu        sync.Mutex  // one pass at a time
	leader    atomic.Bool // held the lease when last asked, to log when that changes
}

// Deps are the services whose leftovers the janitor removes.
type Deps struct {
	Accounts  *account.Service
	Files     *staging.Service
	Sessions  *session.Service
	Runs      *run.Service
	Sandboxes *sandbox.Service
	Blobs     blob.Store
	// Lease is the janitor lease (Store.Lease(LeaseName)): the timed passes and the
	// leftovers at start run only on the server that holds it, once per installation
	// rather than once per server.
	Lease   *store.Lease
	Metrics *metrics.Metrics
	Log     *slog.Logger
}

// LeaseName names the janitor's lease among those of the database.
const LeaseName = "janitor"

// New returns a Janitor. Close releases its lease.
func New(d Deps, cfg Config) *Janitor {
	return &Janitor{accounts: d.Accounts, files: d.Files, sessions: d.Sessions, runs: d.Runs, sandboxes: d.Sandboxes,
		blobs: d.Blobs, cfg: cfg, lease: d.Lease, metrics: d.Metrics, log: d.Log}
}

// Close gives the janitor lease up for good, so that another server takes it at its next
// interval instead of when this process exits. Timed passes after Close are skipped.
func (j *Janitor) Close() error {
	j.lease.Release()
	return nil
}

// holds reports whether this server holds the janitor lease, taking it when it is free,
// and logs when that changes. A server that cannot tell does not pass: the database it
// would clean is the one not answering.
func (j *Janitor) holds(ctx context.Context, what string) bool {
	held, err := j.lease.Held(ctx)
	if err != nil {
		if ctx.Err() == nil {
			j.log.Warn("cannot tell whether this server holds the janitor lease; skipping "+what, "error", err)
		}
		held = false
	}
	if was := j.leader.Swap(held); was != held && err == nil {
		if held {
			j.log.Info("this server now holds the janitor lease: it runs the janitor's passes")
		} else {
			j.log.Info("another server holds the janitor lease: it runs the janitor's passes")
		}
	}
	if !held && err == nil {
		j.log.Debug("skipping " + what + ": another server holds the janitor lease")
	}
	return held
}

// Pass runs one cleanup pass and reports what it removed. It does not ask for the lease:
// `skrip cleanup` asked this server for a pass and waits for its report, and passes on
// two servers at once are safe, only wasteful (the lease is there to spare the work).
func (j *Janitor) Pass(ctx context.Context) (Report, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var r Report
	exp, err := j.files.Expire(ctx)
	r.Files, r.FileBytes = exp.Files, exp.Bytes
	r.FileVersions, r.FileVersionsTrimmed = exp.Versions, exp.Trimmed
	j.count("file", exp.Files)
	j.count("file_version", exp.Versions)
	j.count("file_version_trimmed", exp.Trimmed)
	if err != nil {
		return r, err
	}
	if r.FileLinks, err = j.files.ExpireLinks(ctx); err != nil {
		return r, err
	}
	j.count("file_link", r.FileLinks)
	up, err := j.files.ExpireUploads(ctx)
	r.Uploads, r.UploadBytes = up.Uploads, up.Bytes
	j.count("upload", up.Uploads)
	if err != nil {
		return r, err
	}
	sess, err := j.sessions.Expire(ctx)
	r.SessionSets, r.SessionFiles, r.SessionBytes = sess.Sets, sess.Files, sess.Bytes
	j.count("session_set", sess.Sets)
	if err != nil {
		return r, err
	}
	arts, err := j.runs.ExpireArtifacts(ctx, j.cfg.ArtifactsTTL)
	r.ArtifactRuns, r.Artifacts, r.ArtifactBytes = arts.Runs, arts.Files, arts.Bytes
	j.count("run_artifact", arts.Files)
	if err != nil {
		return r, err
	}
	if err := j.leftovers(ctx, &r); err != nil {
		return r, err
	}
	n, err := j.accounts.ExpireSignIns(ctx)
	r.SignIns = n
	j.count("sign_in", int(n))
	if err != nil {
		return r, err
	}
	n, err = j.accounts.ExpireCLILogins(ctx)
	r.CLILogins = n
	j.count("cli_login", int(n))
	if err != nil {
		return r, err
	}
	if r.AuditEvents, err = j.accounts.ExpireAudit(ctx, j.cfg.AuditRetention); err != nil {
		return r, err
	}
	j.count("audit_event", int(r.AuditEvents))
	if r.Invitations, err = j.accounts.ExpireInvitations(ctx); err != nil {
		return r, err
	}
	j.count("invitation", int(r.Invitations))
	if r.Sandboxes, err = j.expireSandboxes(ctx); err != nil {
		return r, err
	}
	if r == (Report{}) {
		j.log.Debug("janitor pass", "removed", "nothing")
	}
	j.logReport("janitor pass", r)
	return r, nil
}

// Leftovers removes what a crash leaves in the blob store: its own debris and the blobs
// no row refers to. `skrip serve` calls it at start, before it serves, so that nothing
// waits for the first pass. Only the server holding the janitor lease removes them; on
// another it removes nothing.
func (j *Janitor) Leftovers(ctx context.Context) (Report, error) {
	if !j.holds(ctx, "the leftovers at start") {
		return Report{}, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	var r Report
	err := j.leftovers(ctx, &r)
	j.logReport("removed leftovers of an earlier run of the server", r)
	return r, err
}

func (j *Janitor) leftovers(ctx context.Context, r *Report) error {
	var errs []error
	if sw, ok := j.blobs.(sweeper); ok {
		n, err := sw.Sweep(ctx)
		r.BlobLeftovers = n
		j.count("blob_leftover", n)
		errs = append(errs, err)
	}
	minAge := time.Duration(0)
	if j.cfg.SharedBlobs {
		minAge = OrphanAge
	}
	n, err := j.sessions.SweepOrphans(ctx, minAge)
	r.OrphanSessionFiles = n
	j.count("orphan_blob", n)
	errs = append(errs, err)
	n, err = j.runs.SweepOrphans(ctx)
	r.OrphanArtifacts = n
	j.count("orphan_blob", n)
	errs = append(errs, err)
	return errors.Join(errs...)
}

func (j *Janitor) count(kind string, n int) {
	j.metrics.JanitorDeletions.WithLabelValues(kind).Add(float64(n))
}

func (j *Janitor) logReport(msg string, r Report) {
	if r == (Report{}) {
		return
	}
	j.log.Info(msg, "sign_ins", r.SignIns, "cli_logins", r.CLILogins, "sandboxes", r.Sandboxes, "files", r.Files, "file_bytes", r.FileBytes, "file_versions", r.FileVersions, "file_versions_trimmed", r.FileVersionsTrimmed, "file_links", r.FileLinks, "uploads", r.Uploads, "upload_bytes", r.UploadBytes,
		"session_sets", r.SessionSets, "session_files", r.SessionFiles, "session_bytes", r.SessionBytes,
		"artifact_runs", r.ArtifactRuns, "artifacts", r.Artifacts, "artifact_bytes", r.ArtifactBytes,
		"blob_leftovers", r.BlobLeftovers, "orphan_session_files", r.OrphanSessionFiles, "orphan_artifacts", r.OrphanArtifacts,
		"audit_events", r.AuditEvents, "invitations", r.Invitations)
}

// expireSandboxes destroys the idle agent sandboxes and counts them.
func (j *Janitor) expireSandboxes(ctx context.Context) (int, error) {
	n, err := j.sandboxes.Expire(ctx)
	j.metrics.JanitorDeletions.WithLabelValues("sandbox").Add(float64(n))
	return n, err
}

// RunSandboxes destroys idle agent sandboxes every interval until ctx ends: their idle
// timeouts are far shorter than the full pass's interval. Outside a cluster it runs on
// every server, lease or not: a server destroys only the sandboxes it holds, which no
// other can reach. In a cluster every API node reaches every worker's sandboxes, and
// only the lease's holder sweeps them.
func (j *Janitor) RunSandboxes(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		if j.cfg.Cluster && !j.holds(ctx, "the idle sandbox sweep") {
			return
		}
		// In a cluster the worker registry may not answer for a few seconds while NATS
		// elects a leader: that is tried again once, then left to the next tick, with a
		// warning, not an error.
		n, err := retryOnce(ctx, sandboxRetry, func() (int, error) {
			j.mu.Lock()
			defer j.mu.Unlock()
			return j.expireSandboxes(ctx)
		})
		if n > 0 {
			j.log.Info("janitor destroyed idle sandboxes", "sandboxes", n)
		}
		if err != nil && ctx.Err() == nil {
			j.log.Warn("destroying idle sandboxes failed; trying again at the next sweep", "error", err, "next_in", interval)
		}
	})
}

// Run runs a pass every interval until ctx ends, while this server holds the janitor
// lease: another server takes the lease, and the passes, within an interval of the
// holder's end. A failed pass is logged and retried at the next tick.
func (j *Janitor) Run(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		if !j.holds(ctx, "the janitor pass") {
			return
		}
		if _, err := j.Pass(ctx); err != nil && ctx.Err() == nil {
			j.log.Error("janitor pass failed", "error", err)
		}
	})
}

// every calls fn every interval until ctx ends; a zero interval never calls it.
// sandboxRetry is how long the idle sandbox sweep waits before it tries a failed sweep
// again.
const sandboxRetry = 2 * time.Second

// retryOnce calls fn, and once more after wait when it fails; it adds up what both did.
func retryOnce(ctx context.Context, wait time.Duration, fn func() (int, error)) (int, error) {
	n, err := fn()
	if err == nil || ctx.Err() != nil {
		return n, err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return n, err
	case <-t.C:
	}
	m, err := fn()
	return n + m, err
}

func every(ctx context.Context, interval time.Duration, fn func()) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
