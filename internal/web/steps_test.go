package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// stepsEnv is a server (SQLite, bubblewrap) with one user besides its admin: their API
// client, and a browserless session signed in as them with its CSRF token.
type stepsEnv struct {
	env  *apptest.Env
	user *client.Client
	b    *browserless
	csrf string
}

func newStepsEnv(t *testing.T, name, role string) stepsEnv {
	t.Helper()
	env := apptest.New(t, apptest.Backends[0])
	u, err := env.Admin.CreateUser(context.Background(), name, role, "a good password")
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	return stepsEnv{env: env, user: env.Client(t, u.Token), b: b, csrf: b.signIn(name, "a good password")}
}

// TestEditorSecondaryStepAsks: in the editor's sandbox, as on the run page, a secondary
// next action ("Börja om") sent without confirmed=1 runs nothing and asks first; sent
// again confirmed, it runs once. Script asks with a dialog, but the server must not rely
// on it.
func TestEditorSecondaryStepAsks(t *testing.T) {
	se := newStepsEnv(t, "bo", "author")
	author, b, csrf := se.user, se.b, se.csrf
	ctx := context.Background()
	_, v, err := author.CreateTool(ctx, "steg", "Steg", "", stepsSource, false)
	if err != nil {
		t.Fatal(err)
	}
	if rn, err := author.EditorRun(ctx, v.ID, nil, nil, time.Minute); err != nil || rn.Status != "succeeded" {
		t.Fatalf("the sandbox run: %+v, %v", rn, err)
	}
	_, _, page := b.do("GET", "/editor/steg?version="+v.ID, nil, http.Header{"Accept-Language": {"sv"}})
	rev := revField.FindStringSubmatch(page)
	if rev == nil || !strings.Contains(page, `data-confirm="Vill du verkligen ”Börja om”?`) {
		t.Fatalf("the editor offers no revision or no confirming Börja om:\n%s", page)
	}
	before := countRuns(t, author)

	status, _, page := b.do("POST", "/editor/versions/"+v.ID+"/actions/borja_om",
		url.Values{"csrf": {csrf}, "expected_state_rev": {rev[1]}, "in.junk": {"x"}}, http.Header{"Accept-Language": {"sv"}})
	if status != http.StatusOK || !strings.Contains(page, "data-confirm-step") || !strings.Contains(page, `action="/editor/versions/`+v.ID+`/actions/borja_om"`) {
		t.Fatalf("an unconfirmed Börja om answered %d without the editor's confirmation step:\n%s", status, page)
	}
	// The question sends back the revision and the action's own fields, nothing else.
	if strings.Contains(page, `name="in.junk"`) || !strings.Contains(page, `name="expected_state_rev" value="`+rev[1]+`"`) {
		t.Errorf("the confirmation step echoes a field the action does not have, or lacks the revision")
	}
	if n := countRuns(t, author); n != before {
		t.Fatalf("an unconfirmed Börja om ran: %d runs, were %d", n, before)
	}

	status, h, page := b.do("POST", "/editor/versions/"+v.ID+"/actions/borja_om",
		url.Values{"csrf": {csrf}, "expected_state_rev": {rev[1]}, "confirmed": {"1"}}, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/editor/steg?version="+v.ID+"&run=") {
		t.Fatalf("the confirmed Börja om answered %d to %q:\n%s", status, h.Get("Location"), page)
	}
	if n := countRuns(t, author); n != before+1 {
		t.Fatalf("the confirmed Börja om made %d runs; want one", n-before)
	}
}

// TestEditorKeptFilesMustFit: a sandbox session continued from the previous version
// keeps its files, but a run without files gets them only when they fit this version's
// file slot; the editor's form must not promise otherwise (no "kept files are used"
// caption, and the file is required).
func TestEditorKeptFilesMustFit(t *testing.T) {
	se := newStepsEnv(t, "bo", "author")
	author, b, csrf := se.user, se.b, se.csrf
	ctx := context.Background()
	var v2 struct {
		ID string `json:"id"`
	}
	slot := func(ext string) json.RawMessage {
		return json.RawMessage(`[{"name": "fil", "label": "Fil", "kind": "file", "accept": ["` + ext + `"], "min": 1, "max": 1}]`)
	}
	_, v1, err := author.AddTool(ctx, client.NewTool{Slug: "steg", Title: "Steg", Source: stepsSource, InputSchema: slot(".txt")})
	if err != nil {
		t.Fatal(err)
	}
	txt := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(txt, []byte("hej"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rn, err := author.EditorRun(ctx, v1.ID, []string{txt}, nil, time.Minute); err != nil || rn.Status != "succeeded" {
		t.Fatalf("the first version's sandbox run: %+v, %v", rn, err)
	}
	if err := author.Do(ctx, http.MethodPost, "/api/v1/tools/steg/versions", map[string]any{"source": stepsSource, "input_schema": slot(".csv")}, &v2); err != nil {
		t.Fatal(err)
	}
	status, h, page := b.do("POST", "/editor/versions/"+v2.ID+"/session/continue", url.Values{"csrf": {csrf}, "from": {v1.ID}, "expected_state_rev": {"0"}}, nil)
	if status != http.StatusSeeOther {
		t.Fatalf("continuing answered %d:\n%s", status, page)
	}
	_, _, page = b.do("GET", h.Get("Location"), nil, http.Header{"Accept-Language": {"sv"}})
	if !strings.Contains(page, "a.txt") {
		t.Fatalf("the continued session does not show its kept file:\n%s", page)
	}
	if el := element(t, page, `id="sandbox-files"`); !strings.Contains(el, "required") {
		t.Errorf("the .csv slot is not required although the kept a.txt does not fit it: %s", el)
	}
}

// TestRetryOfAStaleStep: "Försök igen" on a failed step takes the same step with the same
// input against the session it failed on; once another step moved the session on, it is
// refused as a stale step is, and nothing runs.
func TestRetryOfAStaleStep(t *testing.T) {
	se := newStepsEnv(t, "ada", "user")
	env, ada, b, csrf := se.env, se.user, se.b, se.csrf
	ctx := context.Background()
	if _, _, err := env.Admin.CreateTool(ctx, "steg", "Steg", "", stepsSource, true); err != nil {
		t.Fatal(err)
	}
	first, err := ada.RunFiles(ctx, "steg", nil, nil, time.Minute)
	if err != nil || first.Status != "succeeded" {
		t.Fatalf("the first run: %+v, %v", first, err)
	}
	step := func(from, action string, form url.Values) string {
		t.Helper()
		_, _, page := b.do("GET", "/runs/"+from, nil, nil)
		rev := revField.FindStringSubmatch(page)
		if rev == nil {
			t.Fatalf("no revision on %s:\n%s", from, page)
		}
		form.Set("csrf", csrf)
		form.Set("expected_state_rev", rev[1])
		form.Set("confirmed", "1")
		status, h, page := b.do("POST", "/runs/"+from+"/actions/"+action, form, nil)
		if status != http.StatusSeeOther {
			t.Fatalf("%s answered %d:\n%s", action, status, page)
		}
		return strings.TrimPrefix(h.Get("Location"), "/runs/")
	}
	failed := step(first.RunID, "fortsatt", url.Values{"in.text": {"fel"}})
	if rn, err := ada.GetRun(ctx, failed, time.Minute); err != nil || rn.Status != "failed" {
		t.Fatalf("the failing step: %+v, %v", rn, err)
	}
	// The session moves on: Börja om, from the first run's page. (The page shows the step
	// at once, running; the session moves when it ends.)
	if rn, err := ada.GetRun(ctx, step(first.RunID, "borja_om", url.Values{}), time.Minute); err != nil || rn.Status != "succeeded" {
		t.Fatalf("Börja om: %+v, %v", rn, err)
	}
	before := countRuns(t, ada)
	status, _, page := b.do("POST", "/runs/"+failed+"/retry", url.Values{"csrf": {csrf}}, http.Header{"Accept-Language": {"sv"}})
	if status != http.StatusConflict || !strings.Contains(page, "Gå till senaste steget") {
		t.Errorf("retrying a step the session moved past answered %d:\n%s", status, page)
	}
	if n := countRuns(t, ada); n != before {
		t.Errorf("retrying a stale step ran it: %d runs, were %d", n, before)
	}
}

// TestRetryOfARunWithoutFiles: a failed first run that got no files (the session's kept
// files did not fit the slot) is tried again with none; the kept files being other ones
// is no reason to refuse it.
func TestRetryOfARunWithoutFiles(t *testing.T) {
	se := newStepsEnv(t, "ada", "user")
	env, ada, b, csrf := se.env, se.user, se.b, se.csrf
	ctx := context.Background()
	if _, _, err := env.Admin.CreateTool(ctx, "steg", "Steg", "", stepsSource, true); err != nil {
		t.Fatal(err)
	}
	txt := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(txt, []byte("hej"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rn, err := ada.RunFiles(ctx, "steg", []string{txt}, nil, time.Minute); err != nil || rn.Status != "succeeded" {
		t.Fatalf("the run that leaves a.txt kept: %+v, %v", rn, err)
	}
	var v2 struct {
		ID string `json:"id"`
	}
	if err := env.Admin.Do(ctx, http.MethodPost, "/api/v1/tools/steg/versions", map[string]any{"source": crashSource,
		"input_schema": json.RawMessage(`[{"name": "f", "label": "F", "kind": "file", "accept": [".csv"], "min": 0, "max": 1}]`)}, &v2); err != nil {
		t.Fatal(err)
	}
	if err := env.Admin.Do(ctx, http.MethodPost, "/api/v1/tool-versions/"+v2.ID+"/publish", nil, nil); err != nil {
		t.Fatal(err)
	}
	failed, err := ada.RunFiles(ctx, "steg", nil, nil, time.Minute)
	if err != nil || failed.Status != "failed" || len(failed.InputManifest.Files) != 0 {
		t.Fatalf("the failing run without files: %+v, %v", failed, err)
	}
	before := countRuns(t, ada)
	status, h, page := b.do("POST", "/runs/"+failed.RunID+"/retry", url.Values{"csrf": {csrf}}, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/runs/") || countRuns(t, ada) != before+1 {
		t.Fatalf("retrying a run that got no files answered %d to %q:\n%s", status, h.Get("Location"), page)
	}
}
