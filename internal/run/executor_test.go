package run_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/run/executortest"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestLocalExecutor runs the executor suite against this server's own pool: one worker
// and room-1 runs waiting, on the bubblewrap runner and a SQLite store. (The cluster's
// queue runs it in internal/dispatch.)
func TestLocalExecutor(t *testing.T) {
	executortest.Run(t, func(t *testing.T, room int) executortest.Env {
		dir := t.TempDir()
		log := slog.New(slog.DiscardHandler)
		st, err := store.Open(context.Background(), "", filepath.Join(dir, "skrip.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		r, err := bwrap.New(bwrap.Config{WorkDir: filepath.Join(dir, "bwrap"), Rootfs: rootfs.Choose("")}, log)
		if errors.Is(err, runner.ErrUnavailable) {
			testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap python3")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		blobs, err := fsblob.New(filepath.Join(dir, "blobs"))
		if err != nil {
			t.Fatal(err)
		}
		limits := runner.Limits{WallTime: 5 * time.Minute, MemoryBytes: 256 << 20, Pids: 64, CPUs: 1, TmpBytes: 16 << 20, OutputBytes: 16 << 20, LogBytes: 64 << 10}
		svc, err := run.New(st, blobs, r, run.Config{Limits: limits, Concurrency: 1, Queue: room - 1, WorkDir: filepath.Join(dir, "inputs"),
			Policy: contract.DefaultPolicy()}, metrics.New(), log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { svc.Shutdown(0) })
		return executortest.Env{Runs: svc, Store: st}
	})
}
