package run_test

// The run service's own rules, called directly on a real store, blob store and the
// bubblewrap runner: queue admission, cancelling a queued or a running run, the shutdown
// grace, and Recover after a crash.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// sleepTool prints that it started, then runs sleep(1) with the argument its "sleep"
// input names: a number no other process on the machine has on its command line, so the
// test can see the run's process on the host and see it gone.
const sleepTool = `
import json, os, subprocess
def run_tool(input_dir, output_dir):
    arg = json.loads(os.environ["SKRIPTOTEKET_INPUTS"])["sleep"]
    print("started", flush=True)
    subprocess.run(["sleep", arg], check=True)
    print("slept " + arg)
    return {"outputs": [{"kind": "markdown", "markdown": "done"}]}
`

// env is one run service over a fresh store, with a user and a published sleepTool.
type env struct {
	svc              *run.Service
	st               *store.Store
	workDir, scratch string // the service's input dirs; the runner's per-run scratch dirs
	blobDir          string // the blob store's files
	req              run.Request
	seq              atomic.Int64
}

func newEnv(t *testing.T, st *store.Store, concurrency, queue int) *env {
	t.Helper()
	return newEnvWith(t, st, concurrency, queue, nil)
}

// newEnvWith is newEnv with set, when not nil, changing the service's config first.
func newEnvWith(t *testing.T, st *store.Store, concurrency, queue int, set func(*run.Config)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
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
	now := time.Now()
	u := store.User{ID: "u_1", Name: "ada", Role: store.RoleAuthor, CreatedAt: now}
	tool := store.Tool{ID: "t_1", Slug: "sleep", Title: "Sleep", AuthorID: u.ID, CreatedAt: now, UpdatedAt: now}
	v := store.ToolVersion{ID: "v_1", ToolID: tool.ID, Source: sleepTool, Entrypoint: "run_tool", CreatedBy: u.ID, CreatedAt: now}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if tool, err = st.CreateTool(ctx, tool, v, true); err != nil {
		t.Fatal(err)
	}
	workDir := filepath.Join(dir, "inputs")
	limits := runner.Limits{WallTime: 5 * time.Minute, MemoryBytes: 256 << 20, Pids: 64, CPUs: 1, TmpBytes: 16 << 20, OutputBytes: 16 << 20, LogBytes: 64 << 10}
	cfg := run.Config{Limits: limits, Concurrency: concurrency, Queue: queue, WorkDir: workDir, Policy: contract.DefaultPolicy()}
	if set != nil {
		set(&cfg)
	}
	svc, err := run.New(st, blobs, r, cfg, metrics.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Shutdown(0) })
	return &env{svc: svc, st: st, workDir: workDir, scratch: filepath.Join(dir, "bwrap", "runs"), blobDir: filepath.Join(dir, "blobs"),
		req: run.Request{Tool: tool, Version: v, User: u, Context: "default", Kind: "initial"}}
}

// marker returns a sleep(1) argument of secs seconds that no other process has.
func (e *env) marker(secs int) string {
	return fmt.Sprintf("%d.%06d%03d", secs, os.Getpid()%1_000_000, e.seq.Add(1))
}

// submit submits a sleepTool run that sleeps for arg, in a fresh input dir.
func (e *env) submit(t *testing.T, arg string) (store.Run, string, error) {
	t.Helper()
	dir, err := e.svc.NewInputDir()
	if err != nil {
		t.Fatal(err)
	}
	req := e.req
	req.InputDir, req.Inputs = dir, map[string]any{"sleep": arg}
	r, err := e.svc.Submit(context.Background(), req)
	if err != nil {
		os.RemoveAll(dir) // as a caller does when Submit refuses
	}
	return r, dir, err
}

// mustSubmit is submit, failing the test when the run is not admitted.
func (e *env) mustSubmit(t *testing.T, arg string) (store.Run, string) {
	t.Helper()
	r, dir, err := e.submit(t, arg)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return r, dir
}

// final waits for run id to end and returns it.
func (e *env) final(t *testing.T, id string) store.Run {
	t.Helper()
	r, err := e.svc.Wait(context.Background(), id, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !store.Terminal(r.Status) {
		t.Fatalf("run %s is still %s", id, r.Status)
	}
	return r
}

// status returns run id's stored status.
func (e *env) status(t *testing.T, id string) store.Run {
	t.Helper()
	r, err := e.st.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// processes returns the pids of the host's processes whose command line has arg.
func processes(arg string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range bytes.Split(b, []byte{0}) {
			if string(a) == arg {
				out = append(out, d.Name())
				break
			}
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sleeping waits until the run with marker arg runs its sleep(1).
func sleeping(t *testing.T, arg string) {
	t.Helper()
	waitFor(t, "a run sleeping "+arg, func() bool { return len(processes(arg)) > 0 })
}

// gone fails t when a process of the run with marker arg, its input dir or its scratch
// dir is still there.
func (e *env) gone(t *testing.T, r store.Run, arg, inputDir string) {
	t.Helper()
	if p := processes(arg); len(p) > 0 {
		t.Errorf("run %s (%s) left processes %v", r.ID, r.Status, p)
	}
	if _, err := os.Stat(inputDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run %s (%s) left its input dir: %v", r.ID, r.Status, err)
	}
	if _, err := os.Stat(filepath.Join(e.scratch, r.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run %s (%s) left its scratch dir in the runner: %v", r.ID, r.Status, err)
	}
}

// TestQueueAdmission: a service admits Concurrency runs that execute and Queue runs that
// wait; the next is refused with ErrBusy before its Before hook runs and without a run
// being stored; once a run ends its slot takes a new run at once.
func TestQueueAdmission(t *testing.T) {
	cases := []struct{ concurrency, queue int }{{1, 0}, {1, 1}, {2, 1}}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("concurrency=%d,queue=%d", tc.concurrency, tc.queue), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, st *store.Store) {
				e := newEnv(t, st, tc.concurrency, tc.queue)
				ctx := context.Background()
				var admitted []store.Run
				var args []string
				for range tc.concurrency + tc.queue {
					arg := e.marker(3600)
					r, _ := e.mustSubmit(t, arg)
					admitted, args = append(admitted, r), append(args, arg)
				}
				for _, arg := range args[:tc.concurrency] {
					sleeping(t, arg)
				}
				for i, r := range admitted {
					want := store.StatusRunning
					if i >= tc.concurrency {
						want = store.StatusQueued
					}
					if got := e.status(t, r.ID).Status; got != want {
						t.Errorf("run %d of %d is %s, want %s", i+1, len(admitted), got, want)
					}
				}

				dir, err := e.svc.NewInputDir()
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(dir)
				called := false
				req := e.req
				req.InputDir, req.Inputs = dir, map[string]any{"sleep": "1"}
				req.Before = func(context.Context) error { called = true; return nil }
				if r, err := e.svc.Submit(ctx, req); !errors.Is(err, run.ErrBusy) {
					t.Fatalf("Submit beyond concurrency+queue = %+v, %v; want ErrBusy", r, err)
				}
				if called {
					t.Error("a run refused for capacity called its Before hook")
				}
				if runs, _ := st.ListRuns(ctx, store.RunFilter{Limit: 100}); len(runs) != len(admitted) {
					t.Errorf("%d runs stored, want the %d admitted", len(runs), len(admitted))
				}

				// A running run ends: its slot is free by the time it is seen over.
				if ok, err := e.svc.Cancel(ctx, admitted[0].ID); err != nil || !ok {
					t.Fatalf("Cancel = %v, %v", ok, err)
				}
				e.final(t, admitted[0].ID)
				last, _, err := e.submit(t, e.marker(3600))
				if err != nil {
					t.Fatalf("Submit once a slot freed: %v", err)
				}
				for _, r := range append(admitted[1:], last) {
					e.svc.Cancel(ctx, r.ID)
					e.final(t, r.ID)
				}
			})
		})
	}
}

// TestCancel cancels a run while it waits in the queue and while it runs. Either way it
// ends cancelled, keeps what it printed so far, and leaves no process, input dir or
// scratch dir; a queued one never reaches the runner. Cancelling a run that is over, or
// that does not exist, reports false.
func TestCancel(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		whileQueue bool
	}{{"running", false}, {"queued", true}} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, st *store.Store) {
				e := newEnv(t, st, 1, 1)
				blockArg := e.marker(3600)
				block, blockDir := e.mustSubmit(t, blockArg)
				sleeping(t, blockArg)
				target, targetDir, targetArg := block, blockDir, blockArg
				if tc.whileQueue {
					targetArg = e.marker(3600)
					target, targetDir = e.mustSubmit(t, targetArg)
				}

				if ok, err := e.svc.Cancel(ctx, target.ID); err != nil || !ok {
					t.Fatalf("Cancel = %v, %v; want true", ok, err)
				}
				if tc.whileQueue {
					// A queued run is over at once, while the run ahead of it still runs.
					if r := e.status(t, target.ID); r.Status != store.StatusCancelled || r.FinishedAt == nil {
						t.Errorf("the queued run after Cancel: %s, finished %v; want cancelled at once", r.Status, r.FinishedAt)
					}
					if ok, err := e.svc.Cancel(ctx, block.ID); err != nil || !ok {
						t.Fatalf("Cancel of the run ahead = %v, %v", ok, err)
					}
					e.final(t, block.ID)
					// The worker takes the cancelled run off the queue and drops it.
					waitFor(t, "the cancelled run's input dir to go", func() bool {
						_, err := os.Stat(targetDir)
						return errors.Is(err, os.ErrNotExist)
					})
				}
				got := e.final(t, target.ID)
				if got.Status != store.StatusCancelled || got.ErrorSummary != "cancelled" || got.FinishedAt == nil {
					t.Errorf("cancelled run: %s (%q), finished %v; want cancelled", got.Status, got.ErrorSummary, got.FinishedAt)
				}
				if tc.whileQueue && (got.StartedAt != nil || len(got.Stdout) != 0) {
					t.Errorf("the run cancelled in the queue started at %v and printed %q", got.StartedAt, got.Stdout)
				}
				if !tc.whileQueue && string(got.Stdout) != "started\n" {
					t.Errorf("the run cancelled while running kept stdout %q, want what it printed: %q", got.Stdout, "started\n")
				}
				e.gone(t, got, targetArg, targetDir)
				e.gone(t, e.status(t, block.ID), blockArg, blockDir)
				if ok, err := e.svc.Cancel(ctx, target.ID); err != nil || ok {
					t.Errorf("Cancel of a run that is over = %v, %v; want false", ok, err)
				}
				if ok, err := e.svc.Cancel(ctx, "r_nosuchrun"); err != nil || ok {
					t.Errorf("Cancel of no run = %v, %v; want false", ok, err)
				}
				// Both slots are free again.
				for range 2 {
					r, _ := e.mustSubmit(t, e.marker(0))
					defer e.final(t, r.ID)
				}
			})
		})
	}
}

// TestShutdownGrace: Shutdown refuses new runs at once, lets the runs under way and the
// ones queued finish within the grace, and cancels those still going when it passes
// ("cancelled: the server shut down"), leaving no process or directory behind.
func TestShutdownGrace(t *testing.T) {
	cases := []struct {
		name  string
		secs  []int // of each run, submitted in order to one worker and a queue of one
		grace time.Duration
		want  []string
	}{
		{"all finish within the grace", []int{0, 0}, time.Minute, []string{store.StatusSucceeded, store.StatusSucceeded}},
		{"the running one outlives the grace", []int{3600}, time.Second, []string{store.StatusCancelled}},
		{"running and queued outlive the grace", []int{3600, 3600}, time.Second, []string{store.StatusCancelled, store.StatusCancelled}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, st *store.Store) {
				e := newEnv(t, st, 1, 1)
				var runs []store.Run
				var args, dirs []string
				for _, secs := range tc.secs {
					arg := e.marker(secs)
					r, dir := e.mustSubmit(t, arg)
					runs, args, dirs = append(runs, r), append(args, arg), append(dirs, dir)
				}
				if tc.secs[0] > 0 {
					sleeping(t, args[0])
				}
				start := time.Now()
				e.svc.Shutdown(tc.grace)
				took := time.Since(start)
				if took > tc.grace+30*time.Second {
					t.Errorf("Shutdown(%s) took %s", tc.grace, took)
				}
				for i, r := range runs {
					got := e.status(t, r.ID)
					if got.Status != tc.want[i] {
						t.Errorf("run %d after Shutdown: %s (%q), want %s", i+1, got.Status, got.ErrorSummary, tc.want[i])
					}
					if got.Status == store.StatusCancelled && got.ErrorSummary != "cancelled: the server shut down" {
						t.Errorf("run %d was cancelled with %q", i+1, got.ErrorSummary)
					}
					if got.Status == store.StatusSucceeded && !strings.Contains(string(got.Stdout), "slept "+args[i]) {
						t.Errorf("run %d finished with stdout %q", i+1, got.Stdout)
					}
					e.gone(t, got, args[i], dirs[i])
				}
				if r, _, err := e.submit(t, e.marker(0)); !errors.Is(err, run.ErrBusy) {
					t.Errorf("Submit after Shutdown = %+v, %v; want ErrBusy", r, err)
				}
			})
		})
	}
}

// TestRecover: at start, runs a crash left queued or running are marked failed, and
// finished runs are left as they were.
func TestRecover(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		e := newEnv(t, st, 1, 0)
		then := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		cases := []struct {
			status, want, summary, source string
		}{
			{store.StatusQueued, store.StatusFailed, "interrupted by server restart", store.SourceRunner},
			{store.StatusRunning, store.StatusFailed, "interrupted by server restart", store.SourceRunner},
			{store.StatusSucceeded, store.StatusSucceeded, "", ""},
			{store.StatusFailed, store.StatusFailed, "the tool failed", store.SourceTool},
			{store.StatusCancelled, store.StatusCancelled, "cancelled", ""},
			{store.StatusTimedOut, store.StatusTimedOut, "timed out", store.SourceRunner},
		}
		ids := make([]string, len(cases))
		for i, tc := range cases {
			r := store.Run{ID: fmt.Sprintf("r_%d", i), ToolID: e.req.Tool.ID, VersionID: e.req.Version.ID, UserID: e.req.User.ID, Context: "default",
				Kind: "initial", Status: store.StatusQueued, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]",
				InputManifest: `{"files":[]}`, CreatedAt: then}
			if err := st.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			if tc.status != store.StatusQueued {
				if _, err := st.ClaimRun(ctx, r.ID, 1, "", then); err != nil {
					t.Fatal(err)
				}
			}
			if store.Terminal(tc.status) {
				r.Status, r.ErrorSummary, r.ErrorSource, r.FinishedAt = tc.status, tc.summary, tc.source, &then
				if _, _, err := st.RecordRun(ctx, r, 1, nil); err != nil {
					t.Fatal(err)
				}
			}
			ids[i] = r.ID
		}
		if err := e.svc.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		for i, tc := range cases {
			got := e.status(t, ids[i])
			if got.Status != tc.want || got.ErrorSummary != tc.summary || got.ErrorSource != tc.source || got.FinishedAt == nil {
				t.Errorf("a run left %s: after Recover %s (%q, source %q), finished %v; want %s (%q, %q)", tc.status, got.Status, got.ErrorSummary,
					got.ErrorSource, got.FinishedAt, tc.want, tc.summary, tc.source)
			}
			if store.Terminal(tc.status) && !got.FinishedAt.Equal(then) {
				t.Errorf("Recover changed when a %s run finished: %v, want %v", tc.status, got.FinishedAt, then)
			}
		}
	})
}
