// Package janitor owns periodic cleanup: expired staged files, uploads that never
// finished, expired browser sign-ins, session file sets past their TTL, idle agent sandboxes, and leftovers of the blob store. `skrip serve` runs it every
// SKRIP_CLEANUP_INTERVAL; `skrip cleanup` asks the server for one pass.
package janitor

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/files"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
)

// Report is what one pass removed.
type Report struct {
	Files         int   `json:"files"`
	FileBytes     int64 `json:"file_bytes"`
	SessionSets   int   `json:"session_sets"`
	SessionFiles  int   `json:"session_files"`
	SessionBytes  int64 `json:"session_bytes"`
	BlobLeftovers int   `json:"blob_leftovers"`
	SignIns       int64 `json:"sign_ins"`
	Sandboxes     int   `json:"sandboxes"`
}

// sweeper is implemented by blob stores that can leave leftovers behind after a crash
// (temp files, unreferenced objects).
type sweeper interface {
	Sweep(ctx context.Context) (int, error)
}

// Janitor removes what has expired.
type Janitor struct {
	accounts  *account.Service
	files     *files.Service
	sessions  *session.Service
	sandboxes *sandbox.Service
	blobs     blob.Store
	metrics   *metrics.Metrics
	log       *slog.Logger
	mu        sync.Mutex // one pass at a time
}

// New returns a Janitor.
func New(accounts *account.Service, f *files.Service, sessions *session.Service, sandboxes *sandbox.Service, blobs blob.Store, m *metrics.Metrics, log *slog.Logger) *Janitor {
	return &Janitor{accounts: accounts, files: f, sessions: sessions, sandboxes: sandboxes, blobs: blobs, metrics: m, log: log}
}

// Pass runs one cleanup pass and reports what it removed.
func (j *Janitor) Pass(ctx context.Context) (Report, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var r Report
	exp, err := j.files.Expire(ctx)
	r.Files, r.FileBytes = exp.Files, exp.Bytes
	j.metrics.JanitorDeletions.WithLabelValues("file").Add(float64(exp.Files))
	if err != nil {
		return r, err
	}
	sess, err := j.sessions.Expire(ctx)
	r.SessionSets, r.SessionFiles, r.SessionBytes = sess.Sets, sess.Files, sess.Bytes
	j.metrics.JanitorDeletions.WithLabelValues("session_set").Add(float64(sess.Sets))
	if err != nil {
		return r, err
	}
	if sw, ok := j.blobs.(sweeper); ok {
		n, err := sw.Sweep(ctx)
		r.BlobLeftovers = n
		j.metrics.JanitorDeletions.WithLabelValues("blob_leftover").Add(float64(n))
		if err != nil {
			return r, err
		}
	}
	n, err := j.accounts.ExpireSignIns(ctx)
	r.SignIns = n
	j.metrics.JanitorDeletions.WithLabelValues("sign_in").Add(float64(n))
	if err != nil {
		return r, err
	}
	if r.Sandboxes, err = j.expireSandboxes(ctx); err != nil {
		return r, err
	}
	if r != (Report{}) {
		j.log.Info("janitor pass", "sign_ins", r.SignIns, "sandboxes", r.Sandboxes, "files", r.Files, "file_bytes", r.FileBytes, "session_sets", r.SessionSets,
			"session_files", r.SessionFiles, "session_bytes", r.SessionBytes, "blob_leftovers", r.BlobLeftovers)
	}
	return r, nil
}

// expireSandboxes destroys the idle agent sandboxes and counts them.
func (j *Janitor) expireSandboxes(ctx context.Context) (int, error) {
	n, err := j.sandboxes.Expire(ctx)
	j.metrics.JanitorDeletions.WithLabelValues("sandbox").Add(float64(n))
	return n, err
}

// RunSandboxes destroys idle agent sandboxes every interval until ctx ends: their idle
// timeouts are far shorter than the full pass's interval.
func (j *Janitor) RunSandboxes(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		j.mu.Lock()
		n, err := j.expireSandboxes(ctx)
		j.mu.Unlock()
		if n > 0 {
			j.log.Info("janitor destroyed idle sandboxes", "sandboxes", n)
		}
		if err != nil && ctx.Err() == nil {
			j.log.Error("destroying idle sandboxes failed", "error", err)
		}
	})
}

// Run runs a pass every interval until ctx ends. A failed pass is logged and retried at
// the next tick.
func (j *Janitor) Run(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		if _, err := j.Pass(ctx); err != nil && ctx.Err() == nil {
			j.log.Error("janitor pass failed", "error", err)
		}
	})
}

// every calls fn every interval until ctx ends; a zero interval never calls it.
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
