package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestEditorSecondaryStepAsks: in the editor's sandbox, as on the run page, a secondary
// next action ("Börja om") sent without confirmed=1 runs nothing and asks first; sent
// again confirmed, it runs once. Script asks with a dialog, but the server must not rely
// on it.
func TestEditorSecondaryStepAsks(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	u, err := env.Admin.CreateUser(ctx, "bo", "author", "a good password")
	if err != nil {
		t.Fatal(err)
	}
	author := env.Client(t, u.Token)
	_, v, err := author.CreateTool(ctx, "steg", "Steg", "", stepsSource, false)
	if err != nil {
		t.Fatal(err)
	}
	if rn, err := author.EditorRun(ctx, v.ID, nil, nil, time.Minute); err != nil || rn.Status != "succeeded" {
		t.Fatalf("the sandbox run: %+v, %v", rn, err)
	}
	b := newBrowserless(t, env.URL)
	csrf := b.signIn("bo", "a good password")
	_, _, page := b.do("GET", "/editor/steg?version="+v.ID, nil, http.Header{"Accept-Language": {"sv"}})
	rev := revField.FindStringSubmatch(page)
	if rev == nil || !strings.Contains(page, `data-confirm="Vill du verkligen ”Börja om”?`) {
		t.Fatalf("the editor offers no revision or no confirming Börja om:\n%s", page)
	}
	before := countRuns(t, author)

	status, _, page := b.do("POST", "/editor/versions/"+v.ID+"/actions/borja_om",
		url.Values{"csrf": {csrf}, "expected_state_rev": {rev[1]}}, http.Header{"Accept-Language": {"sv"}})
	if status != http.StatusOK || !strings.Contains(page, "data-confirm-step") || !strings.Contains(page, `action="/editor/versions/`+v.ID+`/actions/borja_om"`) {
		t.Fatalf("an unconfirmed Börja om answered %d without the editor's confirmation step:\n%s", status, page)
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
