package web_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// filesSource shows the names of the files a run got.
const filesSource = `import os

def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "notice", "level": "info", "message": "files: " + ", ".join(sorted(os.listdir(input_dir)))}]}
`

// publishSchema publishes a new version of slug with schema as its input_schema.
func publishSchema(t *testing.T, c *client.Client, slug, schema string) {
	t.Helper()
	var v struct {
		ID string `json:"id"`
	}
	if err := c.Do(context.Background(), http.MethodPost, "/api/v1/tools/"+slug+"/versions",
		map[string]any{"source": filesSource, "input_schema": json.RawMessage(schema)}, &v); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(context.Background(), http.MethodPost, "/api/v1/tool-versions/"+v.ID+"/publish", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// sentence is the text of the first element of page whose start tag holds attr, tags
// and spacing removed.
func sentence(t *testing.T, page, attr string) string {
	t.Helper()
	m := regexp.MustCompile(`<p[^>]*` + regexp.QuoteMeta(attr) + `[^>]*>([\s\S]*?)</p>`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return strings.Join(strings.Fields(html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], ""))), " ")
}

// TestToolPageKeptFiles: what the tool page says about the files kept from the last run
// is what the next run without new files does with them. The page says they are used
// again, and a run sent without files gets them; a new version whose file slot they no
// longer fit makes the page say they are not used, and a run without files gets none
// (here: is refused for want of a file). The slot's sentence of what it takes, and the
// server's refusal of a file of another type, are in the page's language.
func TestToolPageKeptFiles(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	if err := env.Admin.Do(ctx, http.MethodPost, "/api/v1/tools", map[string]any{"slug": "behall", "title": "Behåll", "source": filesSource,
		"input_schema": json.RawMessage(`[{"name":"texter","kind":"file","accept":[".txt",".md"],"min":1,"max":2}]`), "publish": true}, nil); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	csrf := b.signIn("ada", "a good password")
	page := func(lang string) string {
		t.Helper()
		status, _, p := b.do("GET", "/tools/behall", nil, http.Header{"Accept-Language": {lang}})
		if status != http.StatusOK {
			t.Fatalf("the tool page answered %d:\n%s", status, p)
		}
		return p
	}
	// runWith runs the tool with files (name → content) and returns what the tool got,
	// or the refusal beside the slot.
	runWith := func(files map[string]string) (got, refusal string) {
		t.Helper()
		parts := []part{{Name: "csrf", Value: csrf}}
		for name, content := range files {
			parts = append(parts, part{Name: "files", File: name, Value: content})
		}
		body, hdr := multipartBody(t, parts...)
		hdr.Set("Accept-Language", "sv")
		status, h, p := b.do("POST", "/tools/behall/runs", nil, hdr, body)
		if status != http.StatusSeeOther {
			return "", fieldError(t, p, "files")
		}
		rn := waitRun(t, env, strings.TrimPrefix(h.Get("Location"), "/runs/"))
		var outs []struct{ Message string }
		if err := json.Unmarshal([]byte(rn.Outputs), &outs); err != nil || len(outs) != 1 {
			t.Fatalf("run %s (%s): outputs %s", rn.ID, rn.Status, rn.Outputs)
		}
		return outs[0].Message, ""
	}

	// Nothing kept: the sentence of what the slot takes, in Swedish and in English.
	p := page("sv")
	if got, want := sentence(t, p, "data-caps"), "Du kan ladda upp 1–2 filer av typen .txt, .md, högst 20 MB per fil och 50 MB totalt."; got != want {
		t.Errorf("the slot says %q; want %q", got, want)
	}
	if got := sentence(t, page("en"), "data-caps"); got != "You can upload 1–2 files of type .txt, .md, at most 20 MB per file and 50 MB in total." {
		t.Errorf("in English the slot says %q", got)
	}
	if !strings.Contains(p, `data-reuse="empty"`) || !regexp.MustCompile(`<input id="files"[^>]*\brequired\b`).MatchString(p) {
		t.Fatal("with nothing kept, the page does not say so or does not ask for a file")
	}

	// A file of another type: refused by the server, in the page's language.
	if _, refusal := runWith(map[string]string{"brev.pdf": "%PDF"}); refusal != "brev.pdf är av en filtyp som verktyget inte tar emot. Välj filer av typen .txt, .md." {
		t.Fatalf("a .pdf was refused with %q", refusal)
	}

	if got, _ := runWith(map[string]string{"a.txt": "hej"}); got != "files: a.txt" {
		t.Fatalf("the first run got %q", got)
	}
	// The page says the kept file is used again, and so it is.
	p = page("sv")
	if !strings.Contains(p, `data-reuse="reused"`) || !strings.Contains(sentence(t, p, "data-reuse"), "använder det den här filen igen") {
		t.Fatalf("after a run, the page says of the kept file: %q", sentence(t, p, "data-reuse"))
	}
	if got := sentence(t, p, "data-caps"); !strings.HasSuffix(got, "Väljer du inga nya filer, körs verktyget med filen från förra körningen.") {
		t.Errorf("the slot says %q", got)
	}
	if regexp.MustCompile(`<input id="files"[^>]*\brequired\b`).MatchString(p) || !strings.Contains(p, `data-kept="1"`) {
		t.Error("the page asks for a file though the kept one is used")
	}
	if got := sentence(t, page("en"), "data-reuse"); !strings.Contains(got, "it uses this file again") {
		t.Errorf("in English the page says %q", got)
	}
	if got, refusal := runWith(nil); got != "files: a.txt" {
		t.Fatalf("the page said the kept file is used again, and a run without files got %q (%q)", got, refusal)
	}

	// A version whose slot takes other types: the page says the kept file is not used,
	// and it is not.
	publishSchema(t, env.Admin, "behall", `[{"name":"tabeller","kind":"file","accept":[".csv"],"min":1,"max":2}]`)
	p = page("sv")
	if !strings.Contains(p, `data-reuse="unfit"`) || !strings.Contains(sentence(t, p, "data-reuse"), "Nästa körning använder inte den här filen") {
		t.Fatalf("under a slot for .csv, the page says of a kept .txt: %q", sentence(t, p, "data-reuse"))
	}
	if strings.Contains(sentence(t, p, "data-caps"), "förra körningen") || !strings.Contains(p, `data-kept="0"`) ||
		!regexp.MustCompile(`<input id="files"[^>]*\brequired\b`).MatchString(p) {
		t.Error("the slot still offers the kept file that the server will not use")
	}
	if got, refusal := runWith(nil); refusal != "Välj minst en fil; du valde 0." {
		t.Fatalf("the page said the kept file is not used; a run without files got %q, refused with %q", got, refusal)
	}

	// Deleting the kept files: afterwards the page keeps none.
	if status, _, p := b.do("POST", "/tools/behall/session-files/clear", url.Values{"csrf": {csrf}}, nil); status != http.StatusSeeOther {
		t.Fatalf("deleting the kept files answered %d:\n%s", status, p)
	}
	if p = page("sv"); !strings.Contains(p, `data-reuse="empty"`) {
		t.Fatal("after deleting, the page still lists kept files")
	}
}
