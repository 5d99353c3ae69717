package run

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
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestCancelAsTheWorkerTakesTheRun replays one interleaving of Cancel and a worker that
// TestQueueAdmission hit now and then: Cancel flags the job while its run is queued, the
// worker takes the job and starts the run, and only then does Cancel try to end the run
// as queued, which finds it running and leaves it. The run must still end cancelled,
// not stay running until the next restart.
func TestCancelAsTheWorkerTakesTheRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		dir := t.TempDir()
		log := slog.New(slog.DiscardHandler)
		r, err := bwrap.New(bwrap.Config{WorkDir: filepath.Join(dir, "bwrap")}, log)
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
		now := time.Now()
		u := store.User{ID: "u_1", Name: "ada", Role: store.RoleAuthor, CreatedAt: now}
		tool := store.Tool{ID: "t_1", Slug: "t", Title: "T", AuthorID: u.ID, CreatedAt: now, UpdatedAt: now}
		v := store.ToolVersion{ID: "v_1", ToolID: tool.ID, Source: "def run_tool(i, o): pass", Entrypoint: "run_tool", CreatedBy: u.ID, CreatedAt: now}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateTool(ctx, tool, v, true); err != nil {
			t.Fatal(err)
		}
		// No workers: the test is the worker.
		s, err := New(st, blobs, r, Config{Limits: runner.Limits{WallTime: time.Minute, MemoryBytes: 256 << 20, Pids: 64, CPUs: 1, LogBytes: 1 << 10},
			Queue: 1, WorkDir: filepath.Join(dir, "inputs"), Policy: contract.DefaultPolicy()}, metrics.New(), log)
		if err != nil {
			t.Fatal(err)
		}
		in, err := s.NewInputDir()
		if err != nil {
			t.Fatal(err)
		}
		queued, err := s.Submit(ctx, Request{Tool: tool, Version: v, User: u, Context: "default", Kind: "initial", InputDir: in})
		if err != nil {
			t.Fatal(err)
		}

		l := s.exec.(*local)
		l.mu.Lock()
		j := l.active[queued.ID]
		l.mu.Unlock()
		j.canceled.Store(true) // Cancel, first: the job is flagged and its context ended
		j.cancel()
		next, _ := l.jobs.pop()
		l.execute(next) // the worker takes it and starts the run
		l.retire(j)
		if ok, err := st.CancelQueuedRun(ctx, queued.ID, "cancelled", s.now()); err != nil || ok {
			t.Fatalf("Cancel's CancelQueuedRun = %v, %v; the interleaving needs it to find the run started", ok, err)
		}

		got, err := st.GetRun(ctx, queued.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.StatusCancelled || got.ErrorSummary != "cancelled" || got.FinishedAt == nil {
			t.Errorf("the run is %s (%q), finished %v; want cancelled", got.Status, got.ErrorSummary, got.FinishedAt)
		}
		if len(l.slots) != 0 {
			t.Errorf("%d slots held, want none", len(l.slots))
		}
	})
}
