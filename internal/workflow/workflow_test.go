package workflow_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// recorder runs every spec on the real runner it wraps and keeps what it was given.
type recorder struct {
	runner.Runner
	mu    sync.Mutex
	specs map[string]runner.Spec // by run id
}

func (r *recorder) Run(ctx context.Context, spec runner.Spec) (runner.Result, error) {
	r.mu.Lock()
	r.specs[spec.ID] = spec
	r.mu.Unlock()
	return r.Runner.Run(ctx, spec)
}

func (r *recorder) spec(t *testing.T, runID string) runner.Spec {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.specs[runID]
	if !ok {
		t.Fatalf("run %s never reached the runner", runID)
	}
	return s
}

// memoryTool prints its inputs and offers an action, so that both kinds of run happen.
const memoryTool = `
import os
def run_tool(input_dir, output_dir):
    print("INPUTS=" + os.environ["SKRIPTOTEKET_INPUTS"])
    return {"outputs": [{"kind": "markdown", "markdown": "ok"}],
            "next_actions": [{"action_id": "again", "label": "Again", "kind": "form", "fields": []}], "state": {}}
`

// TestRunsCarryInputsAndMemory checks what every run hands the runner (docs/spec.md §5b): the
// normalised inputs in SKRIPTOTEKET_INPUTS, and as memory.json the user's saved settings
// that still fit the run's version, the editor's own in a sandbox context, on initial and
// action runs alike. The runs execute on the real runner the server opened.
func TestRunsCarryInputsAndMemory(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	ac, anna := env.User(t, "anna", "author")
	uc, ulf := env.User(t, "ulf", "user")
	_, olle := env.User(t, "olle", "user")

	var created struct {
		Tool    struct{ ID string }
		Version struct{ ID string }
	}
	err := ac.Do(ctx, http.MethodPost, "/api/v1/tools", map[string]any{"slug": "mem", "title": "Mem", "source": memoryTool, "publish": true,
		"input_schema":    json.RawMessage(`[{"name":"size","label":"Size","kind":"integer"},{"name":"name","label":"Name","kind":"string"}]`),
		"settings_schema": json.RawMessage(`[{"name":"signature","label":"Signature","kind":"string"},{"name":"per_page","label":"Per page","kind":"integer"}]`),
	}, &created)
	if err != nil {
		t.Fatal(err)
	}
	if err := uc.Do(ctx, http.MethodPut, "/api/v1/tools/mem/settings", map[string]any{"values": map[string]any{"signature": "Ulf", "per_page": 20}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := ac.Do(ctx, http.MethodPut, "/api/v1/tools/mem/settings", map[string]any{"values": map[string]any{"signature": "Anna in production"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := ac.Do(ctx, http.MethodPut, "/api/v1/editor/tool-versions/"+created.Version.ID+"/settings",
		map[string]any{"values": map[string]any{"signature": "Anna in the editor"}}, nil); err != nil {
		t.Fatal(err)
	}

	rec := &recorder{Runner: env.App.Runner, specs: map[string]runner.Spec{}}
	runs, err := run.New(env.App.Store, env.App.Blobs, rec, run.Config{Limits: app.RunLimits(env.Config), Concurrency: 1, Queue: 4,
		WorkDir: t.TempDir(), Policy: contract.DefaultPolicy(), SessionWritten: env.App.Sessions.Recorded}, metrics.New(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runs.Shutdown(5 * time.Second) })
	steps := workflow.New(runs, env.App.Sessions, env.App.Catalog, time.Minute)
	tool, err := env.App.Store.Tool(ctx, "mem")
	if err != nil {
		t.Fatal(err)
	}
	v1, err := env.App.Store.ToolVersion(ctx, created.Version.ID)
	if err != nil {
		t.Fatal(err)
	}
	user := func(id string) store.User {
		u, err := env.App.Store.User(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	initial := func(u store.User, v store.ToolVersion, sctx session.Context, inputs map[string]any) store.Run {
		t.Helper()
		rn, err := steps.Initial(ctx, workflow.Initial{Tool: tool, Version: v, User: u, Context: sctx, Form: upload.Form{Inputs: inputs}})
		if err != nil {
			t.Fatal(err)
		}
		return wait(t, runs, rn.ID)
	}
	memory := func(rn store.Run) string { return string(rec.spec(t, rn.ID).Memory) }

	// Production: the user's settings, the normalised inputs, on initial and action runs.
	rn := initial(user(ulf.ID), v1, session.Production(), map[string]any{"size": " 12 ", "name": "  Ulf "})
	if got := memory(rn); got != `{"settings":{"per_page":20,"signature":"Ulf"}}` {
		t.Fatalf("memory.json of ulf's run: %s", got)
	}
	if got := rec.spec(t, rn.ID).Env["SKRIPTOTEKET_INPUTS"]; got != `{"name":"Ulf","size":12}` {
		t.Fatalf("SKRIPTOTEKET_INPUTS: %s", got)
	}
	if !strings.Contains(string(rn.Stdout), `INPUTS={"name":"Ulf","size":12}`) {
		t.Fatalf("the tool saw: %q", rn.Stdout)
	}
	act, err := steps.Action(ctx, workflow.Action{Tool: tool, Version: v1, User: user(ulf.ID), Context: session.Production(), ActionID: "again", ExpectedStateRev: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := memory(wait(t, runs, act.ID)); got != `{"settings":{"per_page":20,"signature":"Ulf"}}` {
		t.Fatalf("memory.json of ulf's action run: %s", got)
	}
	// The action run keeps the label the action was offered with, for lists of runs.
	if stored, err := env.App.Store.GetRun(ctx, act.ID); err != nil || stored.ActionID != "again" || stored.ActionLabel != "Again" {
		t.Fatalf("the stored action run has id %q and label %q (%v); want again and Again", stored.ActionID, stored.ActionLabel, err)
	}
	// Nothing saved: {}.
	if got := memory(initial(user(olle.ID), v1, session.Production(), nil)); got != "{}" {
		t.Fatalf("memory.json with no settings: %s", got)
	}
	// The editor's sandbox gets the editor's settings, production the production ones.
	if got := memory(initial(user(anna.ID), v1, session.Editor(v1.ID), nil)); got != `{"settings":{"signature":"Anna in the editor"}}` {
		t.Fatalf("memory.json in the editor: %s", got)
	}
	if got := memory(initial(user(anna.ID), v1, session.Production(), nil)); got != `{"settings":{"signature":"Anna in production"}}` {
		t.Fatalf("memory.json of anna in production: %s", got)
	}

	// A version whose schema changed: what no longer fits is dropped field by field, and
	// the run runs. A version without a settings schema gets {}.
	var v2 struct{ ID string }
	if err := ac.Do(ctx, http.MethodPost, "/api/v1/tools/mem/versions", map[string]any{"source": memoryTool,
		"settings_schema": json.RawMessage(`[{"name":"per_page","kind":"enum","options":[{"value":"10"}]},{"name":"signature","kind":"text"}]`)}, &v2); err != nil {
		t.Fatal(err)
	}
	ver2, _ := env.App.Store.ToolVersion(ctx, v2.ID)
	rn = initial(user(ulf.ID), ver2, session.Production(), nil)
	if got := memory(rn); got != `{"settings":{"signature":"Ulf"}}` || rn.Status != store.StatusSucceeded {
		t.Fatalf("memory.json under a changed schema: %s (%s)", got, rn.Status)
	}
	var v3 struct{ ID string }
	if err := ac.Do(ctx, http.MethodPost, "/api/v1/tools/mem/versions", map[string]any{"source": memoryTool}, &v3); err != nil {
		t.Fatal(err)
	}
	ver3, _ := env.App.Store.ToolVersion(ctx, v3.ID)
	if got := memory(initial(user(ulf.ID), ver3, session.Production(), map[string]any{"free": []any{1.0}})); got != "{}" {
		t.Fatalf("memory.json without a settings schema: %s", got)
	}
}

// wait returns run id once it is over.
func wait(t *testing.T, runs *run.Service, id string) store.Run {
	t.Helper()
	rn, err := runs.Wait(context.Background(), id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !store.Terminal(rn.Status) {
		t.Fatalf("run %s still %s", id, rn.Status)
	}
	return rn
}

// sayTool offers an action with a field and says what it got, from action.json and from
// the inputs.
const sayTool = `
import os
from skrip_toolkit import action
def run_tool(input_dir, output_dir):
    act = action()
    print("INPUTS=" + os.environ["SKRIPTOTEKET_INPUTS"])
    said = act["input"]["name"] if act else ""
    return {"outputs": [{"kind": "markdown", "markdown": "said " + said}],
            "next_actions": [{"action_id": "say", "label": "Say", "kind": "form", "fields": [{"name": "name", "label": "Name", "kind": "string"}]}], "state": {}}
`

// TestActionRunRecordsItsInput: an action run keeps the action's input as its inputs
// (so that "Försök igen" can take the same step again), while its tool still gets that
// input from action.json only, with the inputs it always had ({}).
func TestActionRunRecordsItsInput(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	ac, _ := env.User(t, "anna", "author")
	_, ulf := env.User(t, "ulf", "user")
	if err := ac.Do(ctx, http.MethodPost, "/api/v1/tools", map[string]any{"slug": "say", "title": "Say", "source": sayTool, "publish": true}, nil); err != nil {
		t.Fatal(err)
	}
	tool, err := env.App.Store.Tool(ctx, "say")
	if err != nil {
		t.Fatal(err)
	}
	v, err := env.App.Store.ToolVersion(ctx, tool.PublishedVersionID)
	if err != nil {
		t.Fatal(err)
	}
	u, err := env.App.Store.User(ctx, ulf.ID)
	if err != nil {
		t.Fatal(err)
	}
	first, err := env.App.Workflow.Initial(ctx, workflow.Initial{Tool: tool, Version: v, User: u, Context: session.Production()})
	if err != nil {
		t.Fatal(err)
	}
	if rn := wait(t, env.App.Runs, first.ID); rn.Status != store.StatusSucceeded {
		t.Fatalf("the first run %s: %s", rn.Status, rn.ErrorSummary)
	}
	act, err := env.App.Workflow.Action(ctx, workflow.Action{Tool: tool, Version: v, User: u, Context: session.Production(),
		ActionID: "say", Input: map[string]any{"name": "Bo"}, ExpectedStateRev: 1})
	if err != nil {
		t.Fatal(err)
	}
	rn := wait(t, env.App.Runs, act.ID)
	in, err := run.InputsOf(rn)
	if err != nil || in["name"] != "Bo" || len(in) != 1 {
		t.Fatalf("the action run's inputs: %v (%v); want name Bo", in, err)
	}
	if !strings.Contains(string(rn.Stdout), "INPUTS={}") || !strings.Contains(rn.Outputs, "said Bo") {
		t.Fatalf("the tool printed %q and showed %s; want the inputs it always had, and the input from action.json", rn.Stdout, rn.Outputs)
	}
}
