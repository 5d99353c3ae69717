package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestEditorSessionBackAndContinue drives the editor sandbox's session routes (docs/api.md
// "The editor sandbox"): back to a kept step and continue from another version's session,
// from a chosen step, each only at the revision the caller saw; and their refusals: a
// stale revision (409 with expected and current), a step not kept (404), a version of
// another tool or the session's own (400), a missing field (400), a user (403) and
// another author (404).
func TestEditorSessionBackAndContinue(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		ctx := context.Background()
		ac, anna := env.User(t, "anna", "author")
		_, bob := env.User(t, "bob", "author")
		_, ulf := env.User(t, "ulf", "user")
		tool, v1, err := ac.CreateTool(ctx, "counter", "Counter", "", counterTool, false)
		if err != nil {
			t.Fatal(err)
		}
		state := func(raw string) float64 {
			t.Helper()
			var s struct {
				State struct{ N float64 }
			}
			if err := json.Unmarshal([]byte(raw), &s); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			return s.State.N
		}
		post := func(token, version, route string, body map[string]any) answer {
			t.Helper()
			b, _ := json.Marshal(body)
			return send(t, env, "POST", "/api/v1/editor/tool-versions/"+version+"/session/"+route, token, "application/json", strings.NewReader(string(b)))
		}
		wantError := func(what string, a answer, status int, code, reason string) {
			t.Helper()
			if a.status != status || a.errCode() != code || a.reason() != reason || a.errMessage() == "" {
				t.Fatalf("%s: %d %s; want %d %s (%s) with a message", what, a.status, a.raw, status, code, reason)
			}
		}
		step := func(version string, by, expected int64) {
			t.Helper()
			res, err := ac.EditorAction(ctx, version, "inc", map[string]any{"by": by}, expected)
			if err != nil || res.StateRev == nil || *res.StateRev != expected+1 {
				t.Fatalf("inc by %d at %d: %+v %v", by, expected, res, err)
			}
		}
		if rn, err := ac.EditorRun(ctx, v1.ID, nil, nil, time.Minute); err != nil || rn.Status != "succeeded" {
			t.Fatalf("run-sandbox: %+v %v", rn, err)
		}
		step(v1.ID, 2, 1) // rev 2: n 2
		step(v1.ID, 3, 2) // rev 3: n 5

		// Back: refused at a stale revision, for a step not kept, without its fields.
		a := post(anna.Token, v1.ID, "back", map[string]any{"rev": 2, "expected_state_rev": 2})
		wantError("back at a stale revision", a, 409, "conflict", "state_rev")
		if d := a.body["error"].(map[string]any)["details"].(map[string]any); d["expected"] != 2.0 || d["current"] != 3.0 {
			t.Fatalf("the conflict's details: %v; want expected 2, current 3", d)
		}
		wantError("back to a step not kept", post(anna.Token, v1.ID, "back", map[string]any{"rev": 99, "expected_state_rev": 3}), 404, "not_found", "no_step")
		wantError("back without rev", post(anna.Token, v1.ID, "back", map[string]any{"expected_state_rev": 3}), 400, "invalid_request", "")
		wantError("back without expected_state_rev", post(anna.Token, v1.ID, "back", map[string]any{"rev": 2}), 400, "invalid_request", "")
		wantError("back by a user", post(ulf.Token, v1.ID, "back", map[string]any{"rev": 2, "expected_state_rev": 3}), 403, "forbidden", "not_tool_author")
		wantError("back by another author", post(bob.Token, v1.ID, "back", map[string]any{"rev": 2, "expected_state_rev": 3}), 404, "not_found", "version_not_found")
		if s, err := ac.EditorSession(ctx, v1.ID); err != nil || s.StateRev != 3 {
			t.Fatalf("a refused back changed the session: %+v %v", s, err)
		}

		// Back to step 2: its state, as revision 4, and its next actions on offer.
		a = post(anna.Token, v1.ID, "back", map[string]any{"rev": 2, "expected_state_rev": 3})
		if a.status != 200 || a.body["state_rev"] != 4.0 || state(a.raw) != 2 || a.body["context"] != "sandbox:"+v1.ID || a.body["tool_id"] != tool.ID {
			t.Fatalf("back to step 2: %d %s", a.status, a.raw)
		}
		step(v1.ID, 1, 4) // rev 5: n 3

		// Continue: version 2 goes on from version 1's step 3 (n 5), and its actions.
		v2, err := ac.CreateVersion(ctx, "counter", counterTool)
		if err != nil {
			t.Fatal(err)
		}
		_, ov, err := ac.CreateTool(ctx, "other", "Other", "", counterTool, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ac.EditorRun(ctx, ov.ID, nil, nil, time.Minute); err != nil {
			t.Fatal(err)
		}
		wantError("continue from another tool's version", post(anna.Token, v2.ID, "continue", map[string]any{"from_version_id": ov.ID}), 400, "invalid_request", "continue_from")
		wantError("continue from its own version", post(anna.Token, v1.ID, "continue", map[string]any{"from_version_id": v1.ID}), 400, "invalid_request", "continue_from")
		wantError("continue without from_version_id", post(anna.Token, v2.ID, "continue", map[string]any{}), 400, "invalid_request", "")
		wantError("continue from a step not kept", post(anna.Token, v2.ID, "continue", map[string]any{"from_version_id": v1.ID, "rev": 77}), 404, "not_found", "no_step")
		wantError("continue from an unknown version", post(anna.Token, v2.ID, "continue", map[string]any{"from_version_id": "v_nope"}), 404, "not_found", "version_not_found")
		wantError("continue by a user", post(ulf.Token, v2.ID, "continue", map[string]any{"from_version_id": v1.ID}), 403, "forbidden", "not_tool_author")
		wantError("continue by another author", post(bob.Token, v2.ID, "continue", map[string]any{"from_version_id": v1.ID}), 404, "not_found", "version_not_found")
		if _, err := ac.EditorSession(ctx, v2.ID); err == nil {
			t.Fatal("a refused continue made a session")
		}
		a = post(anna.Token, v2.ID, "continue", map[string]any{"from_version_id": v1.ID, "rev": 3})
		if a.status != 200 || a.body["state_rev"] != 1.0 || state(a.raw) != 5 || a.body["context"] != "sandbox:"+v2.ID {
			t.Fatalf("continue from step 3: %d %s", a.status, a.raw)
		}
		step(v2.ID, 1, 1) // v2 rev 2: n 6

		// At a stale revision it is refused; at the current one (or none given) it
		// replaces the session with version 1's where it is now (n 3).
		a = post(anna.Token, v2.ID, "continue", map[string]any{"from_version_id": v1.ID, "expected_state_rev": 0})
		wantError("continue at a stale revision", a, 409, "conflict", "state_rev")
		if d := a.body["error"].(map[string]any)["details"].(map[string]any); d["expected"] != 0.0 || d["current"] != 2.0 {
			t.Fatalf("the conflict's details: %v; want expected 0, current 2", d)
		}
		a = post(anna.Token, v2.ID, "continue", map[string]any{"from_version_id": v1.ID, "expected_state_rev": 2})
		if a.status != 200 || a.body["state_rev"] != 3.0 || state(a.raw) != 3 {
			t.Fatalf("continue at the current revision: %d %s", a.status, a.raw)
		}
		s, err := ac.EditorContinue(ctx, v2.ID, client.ContinueRequest{FromVersionID: v1.ID})
		if err != nil || s.StateRev != 4 || state(`{"state":`+string(s.State)+`}`) != 3 {
			t.Fatalf("continue without a revision: %+v %v", s, err)
		}
		if s, err := ac.EditorGoBack(ctx, v2.ID, 2, 4); err != nil || s.StateRev != 5 || state(`{"state":`+string(s.State)+`}`) != 6 {
			t.Fatalf("the client's back: %+v %v", s, err)
		}
	})
}
