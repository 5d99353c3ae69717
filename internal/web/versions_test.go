package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/client"
)

// TestEditorVersionsPages: the editor's versions without a browser. The save form keeps
// a note; the compare form redirects to the diff page; the diff page sets the two
// versions side by side; restoring posts a new version; and another author can neither
// see the diff nor restore (404), nor compare versions of two tools (400).
func TestEditorVersionsPages(t *testing.T) {
	se := newStepsEnv(t, "vera", "author")
	author, b, csrf := se.user, se.b, se.csrf
	ctx := context.Background()
	sv := http.Header{"Accept-Language": {"sv"}}
	_, v1, err := author.CreateTool(ctx, "vers", "Vers", "", "a = 1\nb = 2\nc = 3\n", false)
	if err != nil {
		t.Fatal(err)
	}
	status, h, page := b.do("POST", "/editor/vers/versions", url.Values{"csrf": {csrf}, "source": {"a = 1\nb = 20\nc = 3\n"}, "note": {"B blev större"}}, sv)
	if status != http.StatusSeeOther {
		t.Fatalf("save: %d\n%s", status, page)
	}
	list, err := author.ToolVersions(ctx, "vers")
	if err != nil || len(list.Versions) != 2 || list.Versions[0].Note != "B blev större" || list.Versions[0].Number != 2 {
		t.Fatalf("after saving with a note: %+v %v", list, err)
	}
	v2 := list.Versions[0].ID
	_, _, page = b.do("GET", h.Get("Location"), nil, sv)
	for _, want := range []string{`data-note>B blev större</p>`, `name="against" value="` + v1.ID + `" checked`, `name="version" value="` + v2 + `" checked`,
		`action="/editor/versions/` + v1.ID + `/restore"`, "Versioner (2)"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the editor's versions lack %q:\n%s", want, page)
		}
	}
	// A note over its cap is refused beside its field, and the form keeps what was typed.
	status, _, page = b.do("POST", "/editor/vers/versions", url.Values{"csrf": {csrf}, "source": {"a = 2\n"}, "note": {strings.Repeat("x", 501)}}, sv)
	if status != http.StatusBadRequest || !strings.Contains(page, `id="version-note-error" data-field-error role="alert" >`) || !strings.Contains(page, strings.Repeat("x", 501)) {
		t.Fatalf("a long note: %d\n%s", status, page)
	}

	status, h, _ = b.do("GET", "/editor/vers/compare?against="+v1.ID+"&version="+v2, nil, sv)
	if status != http.StatusSeeOther || h.Get("Location") != "/editor/versions/"+v2+"/diff?against="+v1.ID {
		t.Fatalf("compare: %d %q", status, h.Get("Location"))
	}
	status, _, page = b.do("GET", h.Get("Location"), nil, sv)
	if status != http.StatusOK || !strings.Contains(page, "Version 2 jämförd med version 1") ||
		!strings.Contains(page, `<td class="code del"><del><span class="visually-hidden">borttagen: </span>b = 2</del></td>`) ||
		!strings.Contains(page, `<td class="code ins"><ins><span class="visually-hidden">tillagd: </span>b = 20</ins></td>`) ||
		!strings.Contains(page, `<td class="num">1</td><td class="code">a = 1</td><td class="num">1</td><td class="code">a = 1</td>`) {
		t.Fatalf("the diff page:\n%s", page)
	}

	// Another author, and versions of two tools.
	other := newBrowserlessAuthor(t, se, "otto")
	for _, p := range []string{"/editor/versions/" + v2 + "/diff?against=" + v1.ID} {
		if status, _, _ := other.do("GET", p, nil, sv); status != http.StatusNotFound {
			t.Errorf("another author GET %s: %d, want 404", p, status)
		}
	}
	if status, _, _ := other.b.do("POST", "/editor/versions/"+v1.ID+"/restore", url.Values{"csrf": {other.csrf}}, sv); status != http.StatusNotFound {
		t.Errorf("another author restores: %d, want 404", status)
	}
	_, ov, err := author.CreateTool(ctx, "annan", "Annan", "", "x = 1\n", false)
	if err != nil {
		t.Fatal(err)
	}
	if status, _, page := b.do("GET", "/editor/versions/"+v2+"/diff?against="+ov.ID, nil, sv); status != http.StatusBadRequest ||
		!strings.Contains(page, "Versionerna hör till olika verktyg") {
		t.Errorf("versions of two tools: %d\n%s", status, page)
	}

	// Restore version 1.
	status, h, _ = b.do("POST", "/editor/versions/"+v1.ID+"/restore", url.Values{"csrf": {csrf}}, sv)
	if status != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "restored=1") {
		t.Fatalf("restore: %d %q", status, h.Get("Location"))
	}
	list, _ = author.ToolVersions(ctx, "vers")
	restored, err := author.VersionOf(ctx, list.Versions[0].ID)
	if err != nil || list.Count != 3 || restored.Number != 3 || restored.Note != "Återställd från version 1" || restored.Source != v1.Source {
		t.Fatalf("after restoring: %+v %+v %v", list, restored, err)
	}
	_, _, page = b.do("GET", h.Get("Location"), nil, sv)
	if !strings.Contains(page, "Version 1 är återställd som en ny version") {
		t.Fatalf("the editor after restoring:\n%s", page)
	}
}

// otherAuthor is a second author signed in without a browser.
type otherAuthor struct {
	b    *browserless
	csrf string
	c    *client.Client
}

func (o otherAuthor) do(method, path string, form url.Values, hdr http.Header) (int, http.Header, string) {
	return o.b.do(method, path, form, hdr)
}

func newBrowserlessAuthor(t *testing.T, se stepsEnv, name string) otherAuthor {
	t.Helper()
	u, err := se.env.Admin.CreateUser(context.Background(), name, "author", "a good password")
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, se.env.URL)
	return otherAuthor{b: b, csrf: b.signIn(name, "a good password"), c: se.env.Client(t, u.Token)}
}
