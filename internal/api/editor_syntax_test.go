package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// brokenCounter is counterTool with line 3 that does not compile.
const brokenCounter = "import json\n\ndef run_tool(input_dir, output_dir:\n    return {}\n"

// TestEditorSyntaxError: a version that does not compile does not run in the editor's
// sandbox (docs/api.md "The editor sandbox"): run-sandbox and start-action answer 400
// syntax_error with the line, no run is made and the session stays as it was; a
// version that compiles runs as before, checked once and then remembered.
func TestEditorSyntaxError(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		ctx := context.Background()
		ac, anna := env.User(t, "anna", "author")
		_, v1, err := ac.CreateTool(ctx, "counter", "Counter", "", counterTool, false)
		if err != nil {
			t.Fatal(err)
		}
		wantSyntax := func(what string, a answer) {
			t.Helper()
			e, _ := a.body["error"].(map[string]any)
			d, _ := e["details"].(map[string]any)
			if a.status != 400 || a.errCode() != "invalid_request" || a.reason() != "syntax_error" || d["line"] != 3.0 ||
				!strings.Contains(a.errMessage(), "line 3") || d["message"] == "" {
				t.Fatalf("%s: %d %s; want 400 syntax_error at line 3", what, a.status, a.raw)
			}
		}
		runSandbox := func(version string) answer {
			t.Helper()
			var body bytes.Buffer
			mw := multipart.NewWriter(&body)
			mw.WriteField("inputs", "{}")
			mw.Close()
			return send(t, env, "POST", "/api/v1/editor/tool-versions/"+version+"/run-sandbox?wait=30s", anna.Token, mw.FormDataContentType(), &body)
		}
		runs := func() int {
			t.Helper()
			a := send(t, env, "GET", "/api/v1/runs?tool=counter", anna.Token, "", nil)
			list, _ := a.body["runs"].([]any)
			if a.status != 200 {
				t.Fatalf("runs: %d %s", a.status, a.raw)
			}
			return len(list)
		}

		// A version saved through the API was never checked: the sandbox checks it.
		broken, err := ac.CreateVersion(ctx, "counter", brokenCounter)
		if err != nil {
			t.Fatal(err)
		}
		before := runs()
		wantSyntax("run-sandbox of a broken version", runSandbox(broken.ID))
		if n := runs(); n != before {
			t.Fatalf("a refused run-sandbox made a run: %d runs, were %d", n, before)
		}

		// The version that compiles runs, twice (the second time from memory).
		for i := 0; i < 2; i++ {
			if a := runSandbox(v1.ID); a.status != 201 || a.body["status"] != "succeeded" {
				t.Fatalf("run-sandbox of a version that compiles: %d %s", a.status, a.raw)
			}
		}

		// start-action: the broken version's session goes on from v1's, and its step
		// is refused; the session keeps its revision.
		if _, err := ac.EditorContinue(ctx, broken.ID, client.ContinueRequest{FromVersionID: v1.ID}); err != nil {
			t.Fatal(err)
		}
		sess, err := ac.EditorSession(ctx, broken.ID)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(map[string]any{"action_id": "inc", "input": map[string]any{"by": 1}, "expected_state_rev": sess.StateRev})
		before = runs()
		wantSyntax("start-action of a broken version", send(t, env, "POST", "/api/v1/editor/tool-versions/"+broken.ID+"/start-action", anna.Token,
			"application/json", bytes.NewReader(body)))
		if after, err := ac.EditorSession(ctx, broken.ID); err != nil || after.StateRev != sess.StateRev || runs() != before {
			t.Fatalf("a refused start-action changed the session or made a run: %+v %v", after, err)
		}
		// The step runs on the version that compiles.
		if res, err := ac.EditorAction(ctx, v1.ID, "inc", map[string]any{"by": 1}, 2); err != nil || res.StateRev == nil || *res.StateRev != 3 {
			t.Fatalf("start-action of a version that compiles: %+v %v", res, err)
		}
	})
}
