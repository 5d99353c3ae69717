package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/store"
)

// echoSource is a tool that shows what it got: its inputs, its memory.json (the
// user's settings) and the names of its files.
const echoSource = `import json, os

def run_tool(input_dir, output_dir):
    inputs = json.loads(os.environ.get("SKRIPTOTEKET_INPUTS") or "{}")
    memory = {}
    path = os.environ.get("SKRIPTOTEKET_MEMORY_PATH")
    if path and os.path.exists(path):
        with open(path) as f:
            memory = json.load(f)
    files = sorted(os.listdir(input_dir))
    return {"outputs": [
        {"kind": "json", "title": "inputs", "value": inputs},
        {"kind": "json", "title": "settings", "value": memory.get("settings", {})},
        {"kind": "notice", "level": "info", "message": "files: " + ", ".join(files)},
    ]}
`

const echoInputSchema = `[
  {"name": "name", "label": "Ditt namn", "kind": "string"},
  {"name": "notes", "label": "Anteckningar", "kind": "text"},
  {"name": "size", "label": "Gruppstorlek", "kind": "integer"},
  {"name": "ratio", "label": "Andel", "kind": "number"},
  {"name": "shuffle", "label": "Blanda grupperna", "kind": "boolean"},
  {"name": "mode", "label": "Läge", "kind": "enum", "options": [{"value": "fast", "label": "Snabbt"}, {"value": "fair", "label": "Rättvist"}]},
  {"name": "lists", "label": "Klasslistor", "kind": "file", "accept": [".csv"], "min": 1, "max": 2}
]`

const echoSettingsSchema = `[
  {"name": "signature", "label": "Signatur", "kind": "string"},
  {"name": "per_page", "label": "Per sida", "kind": "integer"},
  {"name": "color", "label": "I färg", "kind": "boolean"},
  {"name": "font", "label": "Typsnitt", "kind": "enum", "options": [{"value": "serif", "label": "Med serifer"}, {"value": "sans", "label": "Utan serifer"}]},
  {"name": "days", "label": "Dagar", "kind": "multi_enum", "options": [{"value": "mon", "label": "Måndag"}, {"value": "tue", "label": "Tisdag"}, {"value": "wed", "label": "Onsdag"}]}
]`

const echoUsage = "# Så gör du\n\nLadda upp **klasslistan** som CSV.\n\n<script>alert(1)</script>\n"

// createEcho publishes the echo tool as c, with schemas and usage instructions.
func createEcho(t *testing.T, c *client.Client, slug string) {
	t.Helper()
	body := map[string]any{"slug": slug, "title": "Gruppera", "summary": "Delar en klass i grupper.", "usage_instructions": echoUsage,
		"source": echoSource, "input_schema": json.RawMessage(echoInputSchema), "settings_schema": json.RawMessage(echoSettingsSchema), "publish": true}
	if err := c.Do(context.Background(), http.MethodPost, "/api/v1/tools", body, nil); err != nil {
		t.Fatal(err)
	}
}

// part is one part of a multipart body: a text field, or a file when File is set.
type part struct{ Name, Value, File string }

func multipartBody(t *testing.T, parts ...part) (*bytes.Buffer, http.Header) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		if p.File != "" {
			fw, err := w.CreateFormFile(p.Name, p.File)
			if err != nil {
				t.Fatal(err)
			}
			fw.Write([]byte(p.Value))
			continue
		}
		w.WriteField(p.Name, p.Value)
	}
	w.Close()
	return &b, http.Header{"Content-Type": {w.FormDataContentType()}}
}

// element returns the first element of page whose start tag holds each of attrs.
func element(t *testing.T, page string, attrs ...string) string {
	t.Helper()
	for _, tag := range regexp.MustCompile(`<(input|textarea|select|fieldset|p|form)\b[^>]*>`).FindAllString(page, -1) {
		ok := true
		for _, a := range attrs {
			ok = ok && strings.Contains(tag, a)
		}
		if ok {
			return tag
		}
	}
	t.Fatalf("no element with %q on the page:\n%s", attrs, page)
	return ""
}

// fieldError is the text of the error beside the control id, "" when it is hidden.
func fieldError(t *testing.T, page, id string) string {
	t.Helper()
	m := regexp.MustCompile(`<p class="field-error" id="` + regexp.QuoteMeta(id) + `-error"[^>]*?( hidden)?>([^<]*)</p>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no error element for %s on the page:\n%s", id, page)
	}
	if m[1] != "" {
		return ""
	}
	return html.UnescapeString(m[2])
}

func TestTypedToolPage(t *testing.T) {
	apptest.Each(t, testTypedToolPage)
}

func testTypedToolPage(t *testing.T, be apptest.Backend) {
	env := apptest.New(t, be)
	ctx := context.Background()
	createEcho(t, env.Admin, "gruppera")
	if _, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	csrf := b.signIn("ada", "a good password")

	status, _, page := b.do("GET", "/tools/gruppera", nil, nil)
	if status != http.StatusOK {
		t.Fatalf("the tool page answered %d:\n%s", status, page)
	}
	// The summary and the usage instructions, rendered and sanitised, under the page's h1.
	for _, want := range []string{`<p class="lead">Delar en klass i grupper.</p>`, "<h3", "Så gör du</h3>", "<strong>klasslistan</strong>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the tool page lacks %s", want)
		}
	}
	if strings.Contains(page, "alert(1)") && strings.Contains(page, "<script>alert") {
		t.Error("the usage instructions' script reached the page")
	}
	// Every kind gets its control, with a label and its error tied to it.
	for _, c := range []struct {
		id    string
		attrs []string
	}{
		{"in-name", []string{`name="in.name"`}},
		{"in-notes", []string{`<textarea`, `name="in.notes"`}},
		{"in-size", []string{`name="in.size"`, `type="number"`, `step="1"`}},
		{"in-ratio", []string{`name="in.ratio"`, `type="number"`, `step="any"`}},
		{"in-shuffle", []string{`name="in.shuffle"`, `type="checkbox"`, `value="true"`}},
		{"in-mode", []string{`<select`, `name="in.mode"`}},
		{"files", []string{`type="file"`, `accept=".csv"`, `multiple`, `required`, `data-min="1"`, `data-max="2"`}},
	} {
		el := element(t, page, append([]string{`id="` + c.id + `"`}, c.attrs...)...)
		if !strings.Contains(el, c.id+"-error") {
			t.Errorf("%s does not name its error in aria-describedby: %s", c.id, el)
		}
		if !strings.Contains(page, `<label for="`+c.id+`">`) {
			t.Errorf("%s has no label", c.id)
		}
	}
	if !strings.Contains(page, `<option value="fair" >Rättvist</option>`) && !strings.Contains(page, `<option value="fair">Rättvist</option>`) {
		t.Error("the enum's options do not show their labels")
	}
	// The settings panel: every field, multi_enum as checkboxes.
	element(t, page, `<form`, `action="/tools/gruppera/settings"`)
	for _, attrs := range [][]string{{`id="set-signature"`}, {`id="set-per_page"`, `type="number"`}, {`id="set-color"`, `type="checkbox"`},
		{`id="set-font"`, `<select`}, {`type="checkbox"`, `name="set.days"`, `value="wed"`}} {
		element(t, page, attrs...)
	}

	// Settings: saved, confirmed in Swedish, shown again, and refused beside the field.
	status, h, page := b.do("POST", "/tools/gruppera/settings", url.Values{"csrf": {csrf}, "set.signature": {" Ada L "}, "set.per_page": {"12"},
		"set.color": {"true"}, "set.font": {"sans"}, "set.days": {"mon", "wed"}}, nil)
	if status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/tools/gruppera?settings=saved") {
		t.Fatalf("saving settings answered %d to %q:\n%s", status, h.Get("Location"), page)
	}
	_, _, page = b.do("GET", h.Get("Location"), nil, nil)
	if !strings.Contains(page, "Inställningarna är sparade.") {
		t.Fatal("no confirmation after saving settings")
	}
	element(t, page, `id="set-signature"`, `value="Ada L"`)
	element(t, page, `id="set-per_page"`, `value="12"`)
	element(t, page, `id="set-color"`, `checked`)
	element(t, page, `name="set.days"`, `value="wed"`, `checked`)
	if strings.Contains(element(t, page, `name="set.days"`, `value="tue"`), "checked") {
		t.Fatal("an unticked day shows ticked")
	}
	status, _, page = b.do("POST", "/tools/gruppera/settings", url.Values{"csrf": {csrf}, "set.signature": {"Bo"}, "set.per_page": {"tolv"}}, nil)
	if msg := fieldError(t, page, "set-per_page"); status != http.StatusBadRequest || !strings.Contains(msg, "per_page") {
		t.Fatalf("a word for an integer setting answered %d with %q beside it", status, msg)
	}
	element(t, page, `id="set-signature"`, `value="Bo"`)

	runs := func() int { return countRunsOf(t, env, "ada") }

	// A refused run: the message beside the field it names, what was typed kept, nothing run.
	before := runs()
	body, hdr := multipartBody(t, part{Name: "csrf", Value: csrf}, part{Name: "in.name", Value: "Ada"}, part{Name: "in.size", Value: "fyra"},
		part{Name: "in.shuffle", Value: "true"}, part{Name: "in.mode", Value: "fair"}, part{Name: "files", File: "elever.csv", Value: "a;b\n"})
	status, _, page = b.do("POST", "/tools/gruppera/runs", nil, hdr, body)
	if status != http.StatusBadRequest {
		t.Fatalf("a word for an integer answered %d:\n%s", status, page)
	}
	if msg := fieldError(t, page, "in-size"); !strings.Contains(msg, "size") {
		t.Fatalf("the error beside in-size reads %q:\n%s", msg, page)
	}
	if fieldError(t, page, "in-name") != "" {
		t.Fatal("the name field shows an error")
	}
	element(t, page, `id="in-size"`, `value="fyra"`, `aria-invalid="true"`)
	element(t, page, `id="in-name"`, `value="Ada"`)
	element(t, page, `id="in-shuffle"`, `checked`)
	if !strings.Contains(page, `<option value="fair" selected>`) {
		t.Fatal("the chosen option was not kept")
	}
	// A checkbox that sends neither true, on nor false is refused beside it, not read as false.
	body, hdr = multipartBody(t, part{Name: "csrf", Value: csrf}, part{Name: "in.shuffle", Value: "maybe"}, part{Name: "files", File: "elever.csv", Value: "a;b\n"})
	status, _, page = b.do("POST", "/tools/gruppera/runs", nil, hdr, body)
	if msg := fieldError(t, page, "in-shuffle"); status != http.StatusBadRequest || !strings.Contains(msg, "shuffle") {
		t.Fatalf("in.shuffle=maybe answered %d with %q beside the box", status, msg)
	}
	status, _, page = b.do("POST", "/tools/gruppera/settings", url.Values{"csrf": {csrf}, "set.color": {"maybe"}}, nil)
	if msg := fieldError(t, page, "set-color"); status != http.StatusBadRequest || !strings.Contains(msg, "color") {
		t.Fatalf("set.color=maybe answered %d with %q beside the box", status, msg)
	}
	// A file of a type the tool does not take: the message beside the slot.
	body, hdr = multipartBody(t, part{Name: "csrf", Value: csrf}, part{Name: "files", File: "elever.txt", Value: "a;b\n"})
	status, _, page = b.do("POST", "/tools/gruppera/runs", nil, hdr, body)
	if msg := fieldError(t, page, "files"); status != http.StatusBadRequest || !strings.Contains(msg, "elever.txt") {
		t.Fatalf("a .txt file answered %d with %q beside the slot", status, msg)
	}
	if after := runs(); after != before {
		t.Fatalf("refused runs made runs: %d then %d", before, after)
	}

	// A run: the typed values arrive normalised (a box sending "on" as true), with the saved settings.
	body, hdr = multipartBody(t, part{Name: "csrf", Value: csrf}, part{Name: "in.name", Value: "  Ada  "}, part{Name: "in.notes", Value: ""},
		part{Name: "in.size", Value: "4"}, part{Name: "in.ratio", Value: "0.5"}, part{Name: "in.mode", Value: "fair"},
		part{Name: "in.shuffle", Value: "on"}, part{Name: "files", File: "elever.csv", Value: "a;b\n"}, part{Name: "files", File: "lärare.CSV", Value: "c\n"})
	status, h, page = b.do("POST", "/tools/gruppera/runs", nil, hdr, body)
	if status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/runs/") {
		t.Fatalf("a good run answered %d to %q:\n%s", status, h.Get("Location"), page)
	}
	rn := waitRun(t, env, strings.TrimPrefix(h.Get("Location"), "/runs/"))
	var outs []struct {
		Title   string         `json:"title"`
		Value   map[string]any `json:"value"`
		Message string         `json:"message"`
	}
	if err := json.Unmarshal([]byte(rn.Outputs), &outs); err != nil || len(outs) != 3 {
		t.Fatalf("run %s (%s, %s): outputs %s\n%s", rn.ID, rn.Status, rn.ErrorSummary, rn.Outputs, rn.Stderr)
	}
	want := map[string]any{"name": "Ada", "size": float64(4), "ratio": 0.5, "shuffle": true, "mode": "fair"}
	if got := outs[0].Value; !jsonEqual(got, want) {
		t.Errorf("the tool got inputs %v; want %v", got, want)
	}
	wantSet := map[string]any{"signature": "Ada L", "per_page": float64(12), "color": true, "font": "sans", "days": []any{"mon", "wed"}}
	if got := outs[1].Value; !jsonEqual(got, wantSet) {
		t.Errorf("the tool got settings %v; want %v", got, wantSet)
	}
	if outs[2].Message != "files: elever.csv, lärare.CSV" {
		t.Errorf("the tool got %q", outs[2].Message)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// countRunsOf counts the runs of user name, as the admin sees them.
func countRunsOf(t *testing.T, env *apptest.Env, name string) int {
	t.Helper()
	users, err := env.App.Store.Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Name == name {
			runs, err := env.App.Store.ListRuns(context.Background(), store.RunFilter{UserID: u.ID, Limit: 500})
			if err != nil {
				t.Fatal(err)
			}
			return len(runs)
		}
	}
	t.Fatalf("no user %s", name)
	return 0
}

// waitRun waits for run id to end and returns it as stored.
func waitRun(t *testing.T, env *apptest.Env, id string) store.Run {
	t.Helper()
	rn, err := env.App.Runs.Wait(context.Background(), id, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return rn
}

func TestEditorSchemasAndInfo(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "bo", "author", "a good password"); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	csrf := b.signIn("bo", "a good password")
	status, _, page := b.do("POST", "/editor", url.Values{"csrf": {csrf}, "slug": {"hej"}, "title": {"Hej"}, "source": {echoSource}}, nil)
	if status != http.StatusSeeOther {
		t.Fatalf("creating a tool answered %d:\n%s", status, page)
	}
	tool, err := env.App.Store.Tool(ctx, "hej")
	if err != nil {
		t.Fatal(err)
	}
	versions := func() int {
		vs, err := env.App.Store.Versions(ctx, tool.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(vs)
	}

	_, _, page = b.do("GET", "/editor/hej", nil, nil)
	for _, id := range []string{"input-schema", "settings-schema"} {
		el := element(t, page, `<textarea`, `id="`+id+`"`, `data-json`)
		if !strings.Contains(el, id+"-error") || !strings.Contains(page, `<label for="`+id+`">`) {
			t.Errorf("the %s box has no label or no error tied to it: %s", id, el)
		}
	}
	for _, id := range []string{"info-title", "info-summary", "info-description", "info-usage_instructions"} {
		element(t, page, `id="`+id+`"`)
	}
	element(t, page, `id="sandbox-files"`, `type="file"`)
	if strings.Contains(page, `id="sandbox-in-`) || strings.Contains(page, `/settings"`) {
		t.Fatal("a version without schemas shows typed fields or a settings panel")
	}

	// A schema the server refuses: its message beside the box, everything typed kept,
	// nothing saved.
	for _, c := range []struct{ box, input, settings, want string }{
		{"input-schema", `[{"name": "a"`, "", "input_schema"},
		{"input-schema", `[{"name": "a", "label": "A", "kind": "file", "max": 1}, {"name": "b", "label": "B", "kind": "file", "max": 1}]`, "", "file"},
		{"settings-schema", "", `[{"name": "f", "label": "F", "kind": "file"}]`, "settings_schema"},
	} {
		status, _, page = b.do("POST", "/editor/hej/versions", url.Values{"csrf": {csrf}, "source": {echoSource + "\n# edited\n"},
			"input_schema": {c.input}, "settings_schema": {c.settings}}, nil)
		msg := fieldError(t, page, c.box)
		if status != http.StatusBadRequest || !strings.Contains(msg, c.want) {
			t.Fatalf("schema %q / %q answered %d with %q beside %s:\n%s", c.input, c.settings, status, msg, c.box, page)
		}
		if fieldError(t, page, "source") != "" {
			t.Fatalf("a schema's refusal shows beside the source")
		}
		if !strings.Contains(page, "# edited") || !strings.Contains(page, html.EscapeString(c.input+c.settings)) {
			t.Fatalf("what the author typed was not kept:\n%s", page)
		}
	}
	if n := versions(); n != 1 {
		t.Fatalf("refused versions were saved: %d versions", n)
	}

	// Good schemas: saved, shown indented, and the sandbox gets the typed form and a
	// settings panel of its own.
	status, h, page := b.do("POST", "/editor/hej/versions", url.Values{"csrf": {csrf}, "source": {echoSource},
		"input_schema": {echoInputSchema}, "settings_schema": {echoSettingsSchema}}, nil)
	if status != http.StatusSeeOther {
		t.Fatalf("saving good schemas answered %d:\n%s", status, page)
	}
	vid := strings.TrimPrefix(h.Get("Location"), "/editor/hej?version=")
	_, _, page = b.do("GET", h.Get("Location"), nil, nil)
	if !strings.Contains(page, html.EscapeString(`"name": "lists",`)) {
		t.Fatalf("the saved input schema is not shown indented:\n%s", page)
	}
	element(t, page, `id="sandbox-in-size"`, `type="number"`, `step="1"`)
	element(t, page, `id="sandbox-files"`, `accept=".csv"`, `multiple`)
	element(t, page, `<form`, `action="/editor/versions/`+vid+`/settings"`)
	// The empty choice of a list speaks the page's language, in the run form and the
	// sandbox's settings alike.
	for lang, want := range map[string]string{"sv": "(inget valt)", "en": "(none chosen)"} {
		_, _, page := b.do("GET", "/editor/hej?version="+vid, nil, http.Header{"Accept-Language": {lang}})
		if n := strings.Count(page, `<option value="" selected>`+want+`</option>`); n != 2 {
			t.Errorf("in %s the editor's lists offer %q as their empty choice %d times; want the mode and the font", lang, want, n)
		}
	}

	status, h, page = b.do("POST", "/editor/versions/"+vid+"/settings", url.Values{"csrf": {csrf}, "set.signature": {"Sandlåda"}, "set.days": {"tue"}}, nil)
	if status != http.StatusSeeOther || !strings.Contains(h.Get("Location"), "settings=saved") {
		t.Fatalf("saving the sandbox's settings answered %d to %q:\n%s", status, h.Get("Location"), page)
	}
	_, _, page = b.do("GET", h.Get("Location"), nil, nil)
	if !strings.Contains(page, "Inställningarna är sparade.") {
		t.Fatal("no confirmation after saving the sandbox's settings")
	}
	element(t, page, `id="sandbox-set-signature"`, `value="Sandlåda"`)
	status, _, page = b.do("POST", "/editor/versions/"+vid+"/settings", url.Values{"csrf": {csrf}, "set.font": {"comic"}}, nil)
	if msg := fieldError(t, page, "sandbox-set-font"); status != http.StatusBadRequest || !strings.Contains(msg, "font") {
		t.Fatalf("an unknown option answered %d with %q beside it", status, msg)
	}
	// The sandbox's settings are not the user's: once published, the tool page has none.
	if status, _, page = b.do("POST", "/editor/versions/"+vid+"/publish", url.Values{"csrf": {csrf}}, nil); status != http.StatusSeeOther {
		t.Fatalf("publishing answered %d:\n%s", status, page)
	}
	_, _, page = b.do("GET", "/tools/hej", nil, nil)
	if el := element(t, page, `id="set-signature"`); strings.Contains(el, "Sandlåda") {
		t.Fatalf("the sandbox's settings leaked to production: %s", el)
	}

	// What users read about the tool.
	status, h, page = b.do("POST", "/editor/hej/info", url.Values{"csrf": {csrf}, "version": {vid}, "info.title": {"Hej igen"},
		"info.summary": {"Hälsar på alla."}, "info.description": {""}, "info.usage_instructions": {"## Steg\n\n1. Skriv ditt namn."}}, nil)
	if status != http.StatusSeeOther || h.Get("Location") != "/editor/hej?info=saved&version="+vid {
		t.Fatalf("saving the description answered %d to %q:\n%s", status, h.Get("Location"), page)
	}
	_, _, page = b.do("GET", h.Get("Location"), nil, nil)
	if !strings.Contains(page, "Beskrivningen är sparad.") {
		t.Fatal("no confirmation after saving the description")
	}
	_, _, page = b.do("GET", "/tools/hej", nil, nil)
	for _, want := range []string{"<h1>Hej igen</h1>", `<p class="lead">Hälsar på alla.</p>`, "<h4", "<ol>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the tool page lacks %s", want)
		}
	}
	status, _, page = b.do("POST", "/editor/hej/info", url.Values{"csrf": {csrf}, "info.title": {"  "}, "info.summary": {"Kvar."}}, nil)
	if msg := fieldError(t, page, "info-title"); status != http.StatusBadRequest || !strings.Contains(msg, "title") {
		t.Fatalf("an empty title answered %d with %q beside it", status, msg)
	}
	element(t, page, `id="info-summary"`, `value="Kvar."`)

	// A sandbox run the server refuses: the message beside the field, nothing run.
	body, hdr := multipartBody(t, part{Name: "csrf", Value: csrf}, part{Name: "in.size", Value: "fyra"}, part{Name: "files", File: "a.csv", Value: "x"})
	status, _, page = b.do("POST", "/editor/versions/"+vid+"/runs", nil, hdr, body)
	if msg := fieldError(t, page, "sandbox-in-size"); status != http.StatusBadRequest || !strings.Contains(msg, "size") {
		t.Fatalf("a sandbox run with a word for an integer answered %d with %q beside it", status, msg)
	}
	element(t, page, `id="sandbox-in-size"`, `value="fyra"`)
}
