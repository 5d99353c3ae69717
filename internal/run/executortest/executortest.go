// Package executortest is the conformance suite of run.Executor, as blobtest is of the
// blob stores and runnertest of the runners: a run service behaves the same whether its
// runs execute on this server's pool or on a cluster's workers. Run it against each
// executor with a real store and a real runner:
//
//	executortest.Run(t, func(t *testing.T, room int) executortest.Env { ... })
//
// It covers what the service promises its callers: a full queue is ErrBusy and makes
// nothing, a cancel ends a queued run at once and stops a running one, statuses and
// lines reach a subscriber, a run past its wall time times out, an action run moves its
// session on only when it succeeds (a compare-and-swap), and a lost attempt is tried
// again where the executor retries.
package executortest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// Env is one run service under test, over a store of its own.
type Env struct {
	Runs  *run.Service
	Store *store.Store
	// Lose, when set, starts a worker of the test's own that takes the next run the
	// executor hands out, claims it as its first attempt and then goes silent, as a
	// worker that died: the executor must try the run again elsewhere. It returns once
	// that worker is ready; took waits for its claim and returns the run it took. nil: the
	// executor tries each run once (the local pool, in this process), and the suite
	// checks that no other attempt may claim or record a run instead.
	Lose func(t *testing.T) (took func(t *testing.T) string)
}

// Run runs the suite. newEnv makes a fresh service that admits room runs at once,
// queued and running together, and executes one at a time.
func Run(t *testing.T, newEnv func(t *testing.T, room int) Env) {
	t.Run("queue full is busy", func(t *testing.T) { testBusy(t, newFixture(t, newEnv, 2)) })
	t.Run("cancel queued and running", func(t *testing.T) { testCancel(t, newFixture(t, newEnv, 2)) })
	t.Run("events", func(t *testing.T) { testEvents(t, newFixture(t, newEnv, 2)) })
	t.Run("timeout", func(t *testing.T) { testTimeout(t, newFixture(t, newEnv, 2)) })
	t.Run("session effects", func(t *testing.T) { testSession(t, newFixture(t, newEnv, 2)) })
	t.Run("retries", func(t *testing.T) { testRetries(t, newFixture(t, newEnv, 2)) })
}

// tool prints that it started, sleeps for its "sleep" input, prints its "lines", fails
// when its action's input asks it to, and counts its action runs in the session state.
const tool = `
import json, os, time
def run_tool(input_dir, output_dir):
    inputs = json.loads(os.environ["SKRIPTOTEKET_INPUTS"])
    act = os.environ.get("SKRIPTOTEKET_ACTION")
    act = json.loads(act) if act else None
    print("started", flush=True)
    for line in inputs.get("lines", []):
        time.sleep(0.5)
        print(line, flush=True)
    time.sleep(float(inputs.get("sleep", 0)))
    if act is not None and act["input"].get("fail"):
        raise RuntimeError("asked to fail")
    n = 0 if act is None else act["state"]["n"] + 1
    return {"outputs": [{"kind": "json", "value": {"n": n}}],
            "next_actions": [{"action_id": "inc", "label": "Inc", "kind": "form", "fields": []}],
            "state": {"n": n}}
`

type fixture struct {
	env  Env
	user store.User
	tool store.Tool
	v    store.ToolVersion
}

func newFixture(t *testing.T, newEnv func(t *testing.T, room int) Env, room int) *fixture {
	t.Helper()
	env := newEnv(t, room)
	ctx := context.Background()
	now := time.Now()
	u := store.User{ID: ids.New("u"), Name: "ada-" + ids.New("n"), Role: store.RoleAuthor, CreatedAt: now}
	tl := store.Tool{ID: ids.New("t"), Slug: "conf-" + strings.ToLower(ids.New("s")), Title: "Conformance", AuthorID: u.ID, CreatedAt: now, UpdatedAt: now}
	v := store.ToolVersion{ID: ids.New("v"), ToolID: tl.ID, Source: tool, Entrypoint: "run_tool", CreatedBy: u.ID, CreatedAt: now}
	if err := env.Store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	tl, err := env.Store.CreateTool(ctx, tl, v, true)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{env: env, user: u, tool: tl, v: v}
}

// submit submits a run of the tool with inputs, in a fresh input dir, changed by mod.
func (f *fixture) submit(t *testing.T, inputs map[string]any, mod func(req *run.Request)) (store.Run, error) {
	t.Helper()
	dir, err := f.env.Runs.NewInputDir()
	if err != nil {
		t.Fatal(err)
	}
	req := run.Request{Tool: f.tool, Version: f.v, User: f.user, Context: "default", Kind: store.KindInitial, InputDir: dir, Inputs: inputs}
	if mod != nil {
		mod(&req)
	}
	r, err := f.env.Runs.Submit(context.Background(), req)
	if err != nil {
		os.RemoveAll(dir) // as a caller does when Submit refuses
	}
	return r, err
}

func (f *fixture) mustSubmit(t *testing.T, inputs map[string]any, mod func(req *run.Request)) store.Run {
	t.Helper()
	r, err := f.submit(t, inputs, mod)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return r
}

// action submits action run "inc" at session revision rev, with input.
func (f *fixture) action(t *testing.T, rev int64, input map[string]any) store.Run {
	t.Helper()
	sess := f.session(t)
	act := contract.Action{ActionID: "inc", Input: input, State: json.RawMessage(sess.State)}
	b, _ := json.Marshal(act)
	return f.mustSubmit(t, nil, func(req *run.Request) {
		if err := os.WriteFile(filepath.Join(req.InputDir, contract.ActionFileName), b, 0o444); err != nil {
			t.Fatal(err)
		}
		req.Kind, req.ActionID, req.ActionLabel, req.Action, req.ExpectedRev = store.KindAction, "inc", "Inc", &act, &rev
	})
}

func (f *fixture) session(t *testing.T) store.Session {
	t.Helper()
	s, err := f.env.Store.Session(context.Background(), store.SessionKey{ToolID: f.tool.ID, UserID: f.user.ID, Context: "default"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// final waits for run id to end and returns it.
func (f *fixture) final(t *testing.T, id string) store.Run {
	t.Helper()
	r, err := f.env.Runs.Wait(context.Background(), id, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !store.Terminal(r.Status) {
		t.Fatalf("run %s is still %s", id, r.Status)
	}
	return r
}

func (f *fixture) get(t *testing.T, id string) store.Run {
	t.Helper()
	r, err := f.env.Store.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// printed waits until run id is running and has printed "started".
func (f *fixture) printed(t *testing.T, id string) {
	t.Helper()
	past, sub := f.env.Runs.Subscribe(id, true)
	defer sub.Close()
	for _, e := range past {
		if e.Type == "stdout" && e.Data == "started" {
			return
		}
	}
	deadline := time.After(time.Minute)
	for {
		select {
		case <-sub.Ready():
			for _, e := range sub.Take() {
				if e.Type == "stdout" && e.Data == "started" {
					return
				}
			}
		case <-time.After(200 * time.Millisecond):
			// The run may have printed before the subscription; its record says it runs.
			if r := f.get(t, id); r.Status == store.StatusRunning && time.Since(*r.StartedAt) > 3*time.Second {
				return
			}
		case <-deadline:
			t.Fatalf("run %s never printed that it started: %s", id, f.get(t, id).Status)
		}
	}
}

// cancel cancels run id, wanting it stopped, and waits for it to end.
func (f *fixture) cancel(t *testing.T, id string) store.Run {
	t.Helper()
	if ok, err := f.env.Runs.Cancel(context.Background(), id); err != nil || !ok {
		t.Fatalf("Cancel(%s) = %v, %v", id, ok, err)
	}
	return f.final(t, id)
}

// testBusy: a service admits room runs; the next is refused with ErrBusy before its
// Before hook runs and without a run being stored; once runs end, runs are admitted
// again.
func testBusy(t *testing.T, f *fixture) {
	ctx := context.Background()
	a := f.mustSubmit(t, map[string]any{"sleep": 3600}, nil)
	b := f.mustSubmit(t, map[string]any{"sleep": 3600}, nil)
	called := false
	if r, err := f.submit(t, map[string]any{}, func(req *run.Request) {
		req.Before = func(context.Context) error { called = true; return nil }
	}); !errors.Is(err, run.ErrBusy) {
		t.Fatalf("Submit beyond the room = %+v, %v; want ErrBusy", r, err)
	}
	if called {
		t.Error("a run refused for capacity called its Before hook")
	}
	if runs, err := f.env.Store.UserRuns(ctx, f.user.ID); err != nil || len(runs) != 2 {
		t.Errorf("%d runs stored (%v), want the 2 admitted", len(runs), err)
	}
	f.cancel(t, a.ID)
	f.cancel(t, b.ID)
	// Room again: at once here, within the cluster's count's refresh there.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := f.submit(t, map[string]any{}, nil)
		if err == nil {
			if got := f.final(t, r.ID); got.Status != store.StatusSucceeded {
				t.Errorf("a run admitted once room freed: %s (%q)", got.Status, got.ErrorSummary)
			}
			return
		}
		if !errors.Is(err, run.ErrBusy) || time.Now().After(deadline) {
			t.Fatalf("Submit once the runs ended: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// testCancel: a run cancelled while queued ends at once without starting; one cancelled
// while running ends cancelled with what it printed so far. A run that is over is not
// cancelled again.
func testCancel(t *testing.T, f *fixture) {
	ctx := context.Background()
	running := f.mustSubmit(t, map[string]any{"sleep": 3600}, nil)
	f.printed(t, running.ID)
	queued := f.mustSubmit(t, map[string]any{"sleep": 3600}, nil)
	if got := f.get(t, queued.ID); got.Status != store.StatusQueued {
		t.Fatalf("the second run is %s while the first runs; want queued", got.Status)
	}
	if ok, err := f.env.Runs.Cancel(ctx, queued.ID); err != nil || !ok {
		t.Fatalf("Cancel of the queued run = %v, %v", ok, err)
	}
	if got := f.get(t, queued.ID); got.Status != store.StatusCancelled || got.ErrorSummary != "cancelled" || got.FinishedAt == nil || got.StartedAt != nil {
		t.Errorf("the queued run after Cancel: %s (%q), started %v, finished %v; want cancelled at once, never started",
			got.Status, got.ErrorSummary, got.StartedAt, got.FinishedAt)
	}
	got := f.cancel(t, running.ID)
	if got.Status != store.StatusCancelled || got.ErrorSummary != "cancelled" || got.FinishedAt == nil {
		t.Errorf("the running run after Cancel: %s (%q), finished %v; want cancelled", got.Status, got.ErrorSummary, got.FinishedAt)
	}
	if !strings.Contains(string(got.Stdout), "started") {
		t.Errorf("the run cancelled while running kept stdout %q; want what it printed", got.Stdout)
	}
	if ok, err := f.env.Runs.Cancel(ctx, running.ID); err != nil || ok {
		t.Errorf("Cancel of a run that is over = %v, %v; want false", ok, err)
	}
	if got := f.final(t, queued.ID); got.StartedAt != nil || len(got.Stdout) != 0 {
		t.Errorf("the run cancelled in the queue started at %v and printed %q", got.StartedAt, got.Stdout)
	}
}

// testEvents: a subscriber of a queued run sees it start, its lines in order and each
// once, and its end.
func testEvents(t *testing.T, f *fixture) {
	// The run waits behind another until its subscriber is in place.
	ahead := f.mustSubmit(t, map[string]any{"sleep": 3600}, nil)
	f.printed(t, ahead.ID)
	r := f.mustSubmit(t, map[string]any{"lines": []string{"early line", "late line"}}, nil)
	past, sub := f.env.Runs.Subscribe(r.ID, true)
	defer sub.Close()
	if len(past) != 0 {
		t.Errorf("a queued run had events before it ran: %+v", past)
	}
	f.cancel(t, ahead.ID)
	var events []run.Event
	deadline := time.After(2 * time.Minute)
wait:
	for {
		select {
		case <-sub.Ready():
			for _, e := range sub.Take() {
				events = append(events, e)
				if e.Type == "status" && store.Terminal(e.Data) {
					break wait
				}
			}
		case <-deadline:
			t.Fatalf("no final status; events so far: %+v", events)
		}
	}
	var seen []string
	for _, e := range events {
		switch e.Type {
		case "status":
			seen = append(seen, e.Data)
		case "stdout":
			seen = append(seen, e.Data)
		}
	}
	got := strings.Join(compact(seen), "|")
	if want := "running|started|early line|late line|succeeded"; got != want {
		t.Errorf("events: %s; want %s (all: %+v)", got, want, events)
	}
}

// compact drops a status repeated at once (a status may reach a node twice, from
// itself and from the node that recorded it).
func compact(s []string) []string {
	var out []string
	for _, x := range s {
		if len(out) > 0 && out[len(out)-1] == x && (x == store.StatusRunning || store.Terminal(x)) {
			continue
		}
		out = append(out, x)
	}
	return out
}

// testTimeout: a run past its wall time is stopped and recorded as timed out.
func testTimeout(t *testing.T, f *fixture) {
	r := f.mustSubmit(t, map[string]any{"sleep": 3600}, func(req *run.Request) { req.WallTime = 2 * time.Second })
	got := f.final(t, r.ID)
	if got.Status != store.StatusTimedOut || !strings.Contains(got.ErrorSummary, "2s") {
		t.Errorf("a run past its wall time: %s (%q); want timed_out after 2s", got.Status, got.ErrorSummary)
	}
	if d := got.FinishedAt.Sub(*got.StartedAt); d > 30*time.Second {
		t.Errorf("the run of a 2s wall time took %s", d)
	}
}

// testSession: an initial run that offers actions starts its session; an action run
// that succeeds moves it from the revision it was submitted at to the next, and one
// submitted at a revision that is no longer current, or that fails, leaves it as it is.
func testSession(t *testing.T, f *fixture) {
	first := f.final(t, f.mustSubmit(t, map[string]any{}, nil).ID)
	if first.Status != store.StatusSucceeded || first.StateRev == nil || *first.StateRev != 1 {
		t.Fatalf("the initial run: %s (%q), state_rev %v; want succeeded at 1", first.Status, first.ErrorSummary, first.StateRev)
	}
	inc := f.final(t, f.action(t, 1, map[string]any{}).ID)
	if inc.Status != store.StatusSucceeded || inc.StateRev == nil || *inc.StateRev != 2 {
		t.Fatalf("the action run at 1: %s (%q), state_rev %v; want succeeded at 2", inc.Status, inc.ErrorSummary, inc.StateRev)
	}
	if s := f.session(t); s.StateRev != 2 || !strings.Contains(s.State, `"n": 1`) && !strings.Contains(s.State, `"n":1`) || s.LatestRunID != inc.ID {
		t.Fatalf("the session after the action: rev %d, state %s, latest %s", s.StateRev, s.State, s.LatestRunID)
	}
	stale := f.final(t, f.action(t, 1, map[string]any{}).ID)
	if stale.Status != store.StatusSucceeded || stale.StateRev != nil {
		t.Errorf("an action run at a stale revision: %s, state_rev %v; want succeeded without a state_rev", stale.Status, stale.StateRev)
	}
	failed := f.final(t, f.action(t, 2, map[string]any{"fail": true}).ID)
	if failed.Status != store.StatusFailed || failed.StateRev != nil {
		t.Errorf("a failing action run: %s, state_rev %v; want failed without a state_rev", failed.Status, failed.StateRev)
	}
	if s := f.session(t); s.StateRev != 2 || s.LatestRunID != inc.ID {
		t.Errorf("the session after a stale and a failed action: rev %d, latest %s; want 2, %s", s.StateRev, s.LatestRunID, inc.ID)
	}
}

// testRetries: where the executor retries, a run whose attempt was lost with its worker
// is run again, recorded once as the next attempt, and moves its session once. Where it
// does not, the run's one attempt holds it: no other may claim or record it.
func testRetries(t *testing.T, f *fixture) {
	ctx := context.Background()
	if f.env.Lose == nil {
		r := f.mustSubmit(t, map[string]any{"sleep": 3600}, nil)
		f.printed(t, r.ID)
		if ok, err := f.env.Runs.Claim(ctx, r.ID, 1, "another"); err != nil || ok {
			t.Errorf("a second claim of the running attempt = %v, %v; want refused", ok, err)
		}
		if ok, err := f.env.Runs.Record(ctx, r.ID, 2, run.Report{}); err != nil || ok {
			t.Errorf("a record of an attempt that never was = %v, %v; want refused", ok, err)
		}
		got := f.cancel(t, r.ID)
		if got.Attempts != 1 || got.Status != store.StatusCancelled {
			t.Errorf("the run: %s, attempts %d; want cancelled after 1", got.Status, got.Attempts)
		}
		return
	}
	// The executor's worker is busy, so the test's worker takes the next run.
	busy := f.mustSubmit(t, map[string]any{"sleep": 3600}, nil)
	f.printed(t, busy.ID)
	took := f.env.Lose(t)
	r := f.mustSubmit(t, map[string]any{}, nil)
	if id := took(t); id != r.ID {
		t.Fatalf("the silent worker took %s, want %s", id, r.ID)
	}
	f.cancel(t, busy.ID)
	got := f.final(t, r.ID)
	if got.Status != store.StatusSucceeded || got.Attempts != 2 || got.StateRev == nil || *got.StateRev != 1 {
		t.Errorf("the run whose first attempt was lost: %s (%q), attempts %d, state_rev %v; want succeeded as attempt 2 at 1",
			got.Status, got.ErrorSummary, got.Attempts, got.StateRev)
	}
	if ok, err := f.env.Runs.Record(ctx, r.ID, 1, run.Report{}); err != nil || ok {
		t.Errorf("the lost attempt's late record = %v, %v; want refused", ok, err)
	}
	if s := f.session(t); s.StateRev != 1 {
		t.Errorf("the session after a retried run: rev %d, want 1", s.StateRev)
	}
}
