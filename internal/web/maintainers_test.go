package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestEditorMaintainerRoutes: the editor's co-author and lock routes answer only the
// tool's maintainers and admins. An author who is not one is told a draft does not exist
// (404) and a published tool is not theirs (403); a user-role user may not use the
// editor (403). A maintainer the author added opens the editor, is warned of the
// author's lock, and may add, beat and take over; the audit log names the change.
func TestEditorMaintainerRoutes(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	for name, role := range map[string]string{"anna": "author", "bob": "author", "cy": "author", "ulf": "user"} {
		if _, err := env.Admin.CreateUser(ctx, name, role, "a good password"); err != nil {
			t.Fatal(err)
		}
	}
	anna := newBrowserless(t, env.URL)
	annaCSRF := anna.signIn("anna", "a good password")
	if status, _, page := anna.do("POST", "/editor", url.Values{"csrf": {annaCSRF}, "slug": {"delad"}, "title": {"Delad"},
		"source": {"def run_tool(i, o):\n    return 'x'\n"}}, nil); status != http.StatusSeeOther {
		t.Fatalf("creating the tool: %d %s", status, page)
	}
	if status, _, page := anna.do("GET", "/editor/delad", nil, nil); status != 200 || !strings.Contains(page, "Medförfattare") || strings.Contains(page, "Redigeras av anna") {
		t.Fatalf("anna's editor: %d\n%s", status, page)
	}
	others := map[string]string{}
	for _, name := range []string{"bob", "cy", "ulf"} {
		b := newBrowserless(t, env.URL)
		others[name] = b.signIn(name, "a good password")
		routes := []struct {
			path string
			form url.Values
		}{
			{"/editor/delad/maintainers", url.Values{"user": {name}}},
			{"/editor/delad/maintainers/remove", url.Values{"user": {"anna"}}},
			{"/editor/delad/lock", nil},
			{"/editor/delad/lock/take", nil},
		}
		want := http.StatusNotFound // a draft they do not maintain
		if name == "ulf" {
			want = http.StatusForbidden // not an author at all
		}
		for _, r := range routes {
			f := url.Values{"csrf": {others[name]}}
			for k, v := range r.form {
				f[k] = v
			}
			if status, _, page := b.do("POST", r.path, f, nil); status != want {
				t.Errorf("%s posts %s: %d, want %d\n%.300s", name, r.path, status, want, page)
			}
		}
		if status, _, _ := b.do("GET", "/editor/delad", nil, nil); status != want {
			t.Errorf("%s opens the editor: %d, want %d", name, status, want)
		}
	}
	// Anna adds bob (a user-role ulf is refused, on the editor page).
	if status, _, page := anna.do("POST", "/editor/delad/maintainers", url.Values{"csrf": {annaCSRF}, "user": {"ulf"}}, nil); status != http.StatusBadRequest ||
		!strings.Contains(page, "författare eller högre") || !strings.Contains(page, `value="ulf"`) {
		t.Fatalf("adding ulf: %d\n%s", status, page)
	}
	if status, h, _ := anna.do("POST", "/editor/delad/maintainers", url.Values{"csrf": {annaCSRF}, "user": {"bob"}}, nil); status != http.StatusSeeOther ||
		!strings.Contains(h.Get("Location"), "maint=added") {
		t.Fatalf("adding bob: %d %v", status, h)
	}
	bob := newBrowserless(t, env.URL)
	bobCSRF := bob.signIn("bob", "a good password")
	status, _, page := bob.do("GET", "/editor/delad", nil, nil)
	if status != 200 || !strings.Contains(page, "Redigeras av anna sedan") || !strings.Contains(page, "data-editlock-take") {
		t.Fatalf("bob's editor: %d\n%s", status, page)
	}
	status, _, page = bob.do("POST", "/editor/delad/lock", url.Values{"csrf": {bobCSRF}}, nil)
	if status != 200 || !strings.Contains(page, `"mine":false`) || !strings.Contains(page, `"name":"anna"`) {
		t.Fatalf("bob's heartbeat: %d %s", status, page)
	}
	if status, _, _ := bob.do("POST", "/editor/delad/lock/take", url.Values{"csrf": {bobCSRF}}, nil); status != http.StatusSeeOther {
		t.Fatalf("bob takes over: %d", status)
	}
	if _, _, page := anna.do("GET", "/editor/delad", nil, nil); !strings.Contains(page, "Redigeras av bob sedan") {
		t.Fatalf("anna after bob took over:\n%s", page)
	}
	// Cy, an author who is not a maintainer, is still refused; anna removes bob.
	if status, _, _ := bob.do("POST", "/editor/delad/maintainers/remove", url.Values{"csrf": {bobCSRF}, "user": {"anna"}}, nil); status != http.StatusConflict {
		t.Fatalf("bob removes the author: %d, want 409", status)
	}
	if status, _, _ := anna.do("POST", "/editor/delad/maintainers/remove", url.Values{"csrf": {annaCSRF}, "user": {"bob"}}, nil); status != http.StatusSeeOther {
		t.Fatalf("anna removes bob: %d", status)
	}
	if status, _, _ := bob.do("GET", "/editor/delad", nil, nil); status != http.StatusNotFound {
		t.Fatalf("bob's editor after his removal: %d, want 404", status)
	}
	page2, err := env.Admin.Audit(ctx, 50, "")
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range page2.Events {
		if e.Target == "delad" {
			seen = append(seen, e.Action)
		}
	}
	if strings.Join(seen, ",") != "maintainer_removed,maintainer_added" {
		t.Fatalf("audit: %v", seen)
	}
}
