package workflow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// stepTool counts its steps in the session state and offers one labelled action.
const stepTool = `
from skrip_toolkit import action
def run_tool(input_dir, output_dir):
    act = action()
    n = act["state"]["n"] + 1 if act else 0
    return {"outputs": [{"kind": "markdown", "markdown": "step %d" % n}],
            "next_actions": [{"action_id": "next", "label": "Next step", "kind": "form", "fields": []}], "state": {"n": n}}
`

// TestEditorUseCases checks the editor's use cases where the API and the web both get
// them: the view of a version (its session, its steps named by their offers' labels, the
// run beside it, the previous version to go on from), GoBack and ContinueFrom at the
// revision the caller saw, a step not kept, a version of another tool or the session's
// own, and who may.
func TestEditorUseCases(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	ac, anna := env.User(t, "anna", "author")
	_, bob := env.User(t, "bob", "author")
	_, ulf := env.User(t, "ulf", "user")
	_, v1c, err := ac.CreateTool(ctx, "steps", "Steps", "", stepTool, false)
	if err != nil {
		t.Fatal(err)
	}
	_, ovc, err := ac.CreateTool(ctx, "other", "Other", "", stepTool, false)
	if err != nil {
		t.Fatal(err)
	}
	wf := env.App.Workflow
	user := func(id string) store.User {
		u, err := env.App.Store.User(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	u, b, plain := user(anna.ID), user(bob.ID), user(ulf.ID)
	tool, err := env.App.Store.Tool(ctx, "steps")
	if err != nil {
		t.Fatal(err)
	}
	version := func(id string) store.ToolVersion {
		v, err := env.App.Store.ToolVersion(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v1 := version(v1c.ID)
	sandbox := session.Editor(v1.ID)
	first, err := wf.Initial(ctx, workflow.Initial{Tool: tool, Version: v1, User: u, Context: sandbox, Form: upload.Form{}})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, env.App.Runs, first.ID)
	var last store.Run
	for rev := int64(1); rev <= 3; rev++ { // revisions 2, 3, 4: n 1, 2, 3
		rn, err := wf.Action(ctx, workflow.Action{Tool: tool, Version: v1, User: u, Context: sandbox, ActionID: "next", ExpectedStateRev: rev})
		if err != nil {
			t.Fatal(err)
		}
		if last = wait(t, env.App.Runs, rn.ID); last.Status != store.StatusSucceeded {
			t.Fatalf("step %d: %s %s", rev+1, last.Status, last.ErrorSummary)
		}
	}

	ed, err := wf.EditorView(ctx, u, "steps", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if ed.Session == nil || ed.Session.StateRev != 4 || ed.Run == nil || ed.Run.ID != last.ID || !ed.Current || ed.Previous != nil {
		t.Fatalf("the view: %+v", ed)
	}
	if len(ed.Steps) != 4 || ed.Steps[0].Rev != 4 || !ed.Steps[0].Current || ed.Steps[0].Action != "Next step" || ed.Steps[3].Action != "" {
		t.Fatalf("the steps: %+v", ed.Steps)
	}

	isConflict := func(what string, err error, expected, current int64) {
		t.Helper()
		var e *errs.Error
		if !errors.Is(err, session.ErrConflict) || !errors.As(err, &e) || e.Details["expected"] != expected || e.Details["current"] != current {
			t.Fatalf("%s: %v; want a conflict from %d at %d", what, err, expected, current)
		}
	}
	refusals := []struct {
		name string
		err  error
		want error
	}{
		{"a user", errOf(wf.GoBack(ctx, plain, v1.ID, 4, 2)), catalog.ErrForbidden},
		{"another author", errOf(wf.GoBack(ctx, b, v1.ID, 4, 2)), catalog.ErrNoVersion},
		{"a step not kept", errOf(wf.GoBack(ctx, u, v1.ID, 4, 40)), session.ErrNoStep},
		{"an unknown version", errOf(wf.GoBack(ctx, u, "v_nope", 4, 2)), catalog.ErrNoVersion},
	}
	for _, tc := range refusals {
		if !errors.Is(tc.err, tc.want) {
			t.Fatalf("back by %s: %v; want %v", tc.name, tc.err, tc.want)
		}
	}
	_, err = wf.GoBack(ctx, u, v1.ID, 3, 2)
	isConflict("back at a stale revision", err, 3, 4)
	sess, err := wf.GoBack(ctx, u, v1.ID, 4, 2)
	if err != nil || sess.StateRev != 5 || sess.State != `{"n": 1}` && sess.State != `{"n":1}` {
		t.Fatalf("back to step 2: %+v %v", sess, err)
	}

	// Version 2 goes on from version 1, whose session it offers to go on from.
	v2c, err := ac.CreateVersion(ctx, "steps", stepTool)
	if err != nil {
		t.Fatal(err)
	}
	v2 := version(v2c.ID)
	ed, err = wf.EditorView(ctx, u, "steps", v2.ID, "")
	if err != nil || ed.Version.ID != v2.ID || ed.Session != nil || ed.Previous == nil || ed.Previous.ID != v1.ID || ed.Run != nil {
		t.Fatalf("version 2's view: %+v %v", ed, err)
	}
	rev := func(n int64) *int64 { return &n }
	if _, err := wf.ContinueFrom(ctx, u, workflow.Continue{VersionID: v2.ID, From: ovc.ID}); !errors.Is(err, workflow.ErrContinueFrom) {
		t.Fatalf("continue from another tool's version: %v", err)
	}
	if _, err := wf.ContinueFrom(ctx, u, workflow.Continue{VersionID: v1.ID, From: v1.ID}); !errors.Is(err, workflow.ErrContinueFrom) {
		t.Fatalf("continue from its own version: %v", err)
	}
	if _, err := wf.ContinueFrom(ctx, u, workflow.Continue{VersionID: v2.ID, From: v1.ID, Rev: rev(40)}); !errors.Is(err, session.ErrNoStep) {
		t.Fatalf("continue from a step not kept: %v", err)
	}
	if _, err := wf.ContinueFrom(ctx, plain, workflow.Continue{VersionID: v2.ID, From: v1.ID}); !errors.Is(err, catalog.ErrForbidden) {
		t.Fatalf("continue by a user: %v", err)
	}
	_, err = wf.ContinueFrom(ctx, u, workflow.Continue{VersionID: v2.ID, From: v1.ID, Expected: rev(1)})
	isConflict("continue at a stale revision", err, 1, 0)
	sess, err = wf.ContinueFrom(ctx, u, workflow.Continue{VersionID: v2.ID, From: v1.ID, Rev: rev(4), Expected: rev(0)})
	if err != nil || sess.StateRev != 1 || sess.Context != session.Editor(v2.ID).String() || sess.State != `{"n": 3}` && sess.State != `{"n":3}` {
		t.Fatalf("continue from step 4: %+v %v", sess, err)
	}
	// Its next step is offered by version 1's run of that step, and the view shows it.
	ed, err = wf.EditorView(ctx, u, "steps", v2.ID, "")
	if err != nil || ed.Session == nil || ed.Run == nil || ed.Run.ID != last.ID || !ed.Current {
		t.Fatalf("version 2's view after continuing: %+v %v", ed, err)
	}
	if _, _, err := wf.Offer(ctx, tool, u, session.Editor(v2.ID), "next"); err != nil {
		t.Fatalf("the continued session's offer: %v", err)
	}
	if _, _, err := wf.Offer(ctx, tool, u, session.Editor(v2.ID), "nope"); !errors.Is(err, workflow.ErrUnknownAction) {
		t.Fatalf("an action not on offer: %v", err)
	}
	// Another user's view of the tool is refused.
	if _, err := wf.EditorView(ctx, plain, "steps", "", ""); !errors.Is(err, catalog.ErrForbidden) {
		t.Fatalf("a user's view: %v", err)
	}
	if _, err := wf.EditorView(ctx, b, "steps", "", ""); err == nil {
		t.Fatal("another author sees the editor of anna's draft")
	}
}

// errOf is the error of a call that also returns a value.
func errOf[T any](_ T, err error) error { return err }
