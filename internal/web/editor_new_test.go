package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestNewToolForm: the new-tool form (GET /editor) offers the Swedish starter code and
// both schema boxes; POST /editor creates the tool with the schemas sent, and a schema
// the server refuses is named beside its box with everything typed kept and no tool made.
func TestNewToolForm(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "bo", "author", "a good password"); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	csrf := b.signIn("bo", "a good password")

	_, _, page := b.do("GET", "/editor", nil, nil)
	element(t, page, `<textarea`, `id="source"`, `name="source"`)
	if !strings.Contains(page, html.EscapeString(`"""Körs varje gång någon kör verktyget.`)) || strings.Contains(page, "Called with the uploaded files") {
		t.Fatalf("the starter code is not the Swedish one:\n%s", page)
	}
	for _, id := range []string{"input-schema", "settings-schema"} {
		element(t, page, `<textarea`, `id="`+id+`"`, `data-schema=`)
		if !strings.Contains(page, `<label for="`+id+`">`) {
			t.Errorf("the %s box has no label", id)
		}
	}
	if !strings.Contains(page, `src="/static/schema-form.js"`) || !strings.Contains(page, `data-max-files="`) {
		t.Fatal("the new-tool form has no schema form")
	}

	// A schema the server refuses: beside its box, all kept, no tool.
	bad := `[{"name": "a", "label": "A", "kind": "string"}, {"name": "a", "label": "B", "kind": "string"}]`
	status, _, page := b.do("POST", "/editor", url.Values{"csrf": {csrf}, "slug": {"ny"}, "title": {"Ny titel"}, "source": {echoSource},
		"input_schema": {bad}}, nil)
	if msg := fieldError(t, page, "input-schema"); status != http.StatusBadRequest || !strings.Contains(msg, "samma namn används två gånger") {
		t.Fatalf("a duplicate name answered %d with %q beside the schema:\n%s", status, msg, page)
	}
	if !strings.Contains(page, html.EscapeString(bad)) || !strings.Contains(page, `value="Ny titel"`) || !strings.Contains(page, "SKRIPTOTEKET_MEMORY_PATH") {
		t.Fatalf("what the author typed was not kept:\n%s", page)
	}
	if _, err := env.App.Store.Tool(ctx, "ny"); err == nil {
		t.Fatal("a tool was made with a refused schema")
	}
	// A refusal that names no box (a slug that is no slug) shows above the button.
	status, _, page = b.do("POST", "/editor", url.Values{"csrf": {csrf}, "slug": {"Ny Slug"}, "title": {"Ny"}, "source": {echoSource}}, nil)
	if status != http.StatusBadRequest || !strings.Contains(page, `<p class="error" role="alert">`) || fieldError(t, page, "input-schema") != "" {
		t.Fatalf("a bad slug answered %d:\n%s", status, page)
	}

	// Schemas that fit: the tool is made with them.
	in := `[{"name": "bilaga", "label": "Bilaga", "kind": "file", "max": 2}, {"name": "titel", "label": "Titel", "kind": "string"}]`
	set := `[{"name": "sign", "label": "Signatur", "kind": "string"}]`
	status, _, page = b.do("POST", "/editor", url.Values{"csrf": {csrf}, "slug": {"ny"}, "title": {"Ny"}, "source": {echoSource},
		"input_schema": {in}, "settings_schema": {set}}, nil)
	if status != http.StatusSeeOther {
		t.Fatalf("creating a tool with schemas answered %d:\n%s", status, page)
	}
	tool, err := env.App.Store.Tool(ctx, "ny")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := env.App.Store.Versions(ctx, tool.ID)
	if err != nil || len(vs) != 1 {
		t.Fatalf("versions: %v %v", vs, err)
	}
	if !strings.Contains(string(vs[0].InputSchema), `"bilaga"`) || !strings.Contains(string(vs[0].InputSchema), `"titel"`) || !strings.Contains(string(vs[0].SettingsSchema), `"sign"`) {
		t.Fatalf("the tool's schemas: %s / %s", vs[0].InputSchema, vs[0].SettingsSchema)
	}
	// The editor of the tool shows them in its boxes, the file field first as sent.
	_, _, page = b.do("GET", "/editor/ny", nil, nil)
	if i, j := strings.Index(page, "bilaga"), strings.Index(page, "titel"); i < 0 || j < i {
		t.Fatalf("the editor's schema box lost the order:\n%s", page)
	}
}

// TestStarterCodeRuns: the new-tool form's starter code runs as it is in the sandbox:
// it names the files it was given, and asks for one, as a user's error, without any.
func TestStarterCodeRuns(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "bo", "author", "a good password"); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	b.signIn("bo", "a good password")
	_, _, page := b.do("GET", "/editor", nil, nil)
	m := regexp.MustCompile(`(?s)<textarea id="source"[^>]*>(.*?)</textarea>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no code box on the new-tool form:\n%s", page)
	}
	starter := html.UnescapeString(m[1])
	_, v, err := env.Admin.CreateTool(ctx, "start", "Start", "", starter, false)
	if err != nil {
		t.Fatal(err)
	}
	// First without files (a later run would get the session's kept ones).
	rn, err := env.Admin.EditorRun(ctx, v.ID, nil, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rn.Status != "failed" || rn.ErrorSummary == nil || *rn.ErrorSummary != "Ladda upp minst en fil." {
		t.Fatalf("the starter code without files: %s %v", rn.Status, rn.ErrorSummary)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "elever.csv")
	if err := os.WriteFile(file, []byte("namn\nAda\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rn, err = env.Admin.EditorRun(ctx, v.ID, []string{file}, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rn.Status != "succeeded" || len(rn.Outputs) != 1 || rn.Outputs[0].Message != "Du laddade upp: elever.csv" {
		t.Fatalf("the starter code with a file: %s %+v %v", rn.Status, rn.Outputs, rn.ErrorSummary)
	}
}
