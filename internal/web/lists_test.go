package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

var (
	historyRowRe = regexp.MustCompile(`<tr data-run="([^"]+)">`)
	historyNext  = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
	h1Re         = regexp.MustCompile(`<h1[\s>]`)
)

// TestHistoryPage: the history names action runs by the label of their action (the id
// for runs from before labels were kept), carries each run's downloads, and filters by
// tool and status, with the filter kept by the "older runs" link and a refused filter
// shown on the page with the error table's status. All runs names steps the same way.
func TestHistoryPage(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	users := map[string]client.CreatedUser{}
	for _, u := range [][2]string{{"root", "admin"}, {"ada", "user"}} {
		cu, err := env.Admin.CreateUser(ctx, u[0], u[1], "a good password")
		if err != nil {
			t.Fatal(err)
		}
		users[u[0]] = cu
	}
	tools := map[string]client.Tool{}
	for _, slug := range []string{"probe", "other"} {
		if _, _, err := env.Admin.CreateTool(ctx, slug, strings.ToUpper(slug[:1])+slug[1:], "", "def run_tool(i, o):\n    return 'hej'\n", true); err != nil {
			t.Fatal(err)
		}
		tl, err := env.Admin.ToolOf(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		tools[slug] = tl.Tool
	}
	now := time.Now()
	add := func(tool, status, kind, actionID, label, artifacts string) string {
		t.Helper()
		id := ids.New("r")
		err := env.App.Store.CreateRun(ctx, store.Run{ID: id, ToolID: tools[tool].ID, VersionID: *tools[tool].PublishedVersionID,
			UserID: users["ada"].ID, Context: "default", Kind: kind, ActionID: actionID, ActionLabel: label, Status: status, Inputs: "{}",
			Outputs: "[]", NextActions: "[]", Artifacts: artifacts, InputManifest: `{"files":[]}`, CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	var probeDone []string
	for range 52 {
		probeDone = append(probeDone, add("probe", store.StatusSucceeded, "initial", "", "", "[]"))
	}
	otherFailed := add("other", store.StatusFailed, "initial", "", "", "[]")
	labelled := add("other", store.StatusSucceeded, "action", "convert", "Konvertera till PDF",
		`[{"path":"output/Veckobrev.pdf","name":"Veckobrev.pdf","bytes":15200,"sha256":"x"},{"path":"output/gammal.txt","name":"gammal.txt","bytes":3,"sha256":"y","expired_at":"2026-01-02T03:04:05Z"}]`)
	old := add("other", store.StatusSucceeded, "action", "greet", "", "[]")

	ada := newBrowserless(t, env.URL)
	ada.signIn("ada", "a good password")
	get := func(path string) (int, string, []string, string) {
		t.Helper()
		status, _, body := ada.do("GET", path, nil, nil)
		body = html.UnescapeString(body)
		var rows []string
		for _, m := range historyRowRe.FindAllStringSubmatch(body, -1) {
			rows = append(rows, m[1])
		}
		next := ""
		if m := historyNext.FindStringSubmatch(body); m != nil {
			next = m[1]
		}
		return status, body, rows, next
	}

	status, body, rows, next := get("/runs")
	if status != http.StatusOK || len(rows) != 50 || next == "" {
		t.Fatalf("the history answered %d with %d runs and older link %q", status, len(rows), next)
	}
	row := rowOf(t, body, labelled)
	for _, want := range []string{"Steg: Konvertera till PDF", `data-status="succeeded"`, "Klar",
		`<a href="/api/v1/runs/` + labelled + `/artifacts/output/Veckobrev.pdf" download>Veckobrev.pdf</a>`, "15,2 kB", "gammal.txt (har tagits bort)"} {
		if !strings.Contains(row, want) {
			t.Fatalf("the row of the labelled step lacks %q:\n%s", want, row)
		}
	}
	if strings.Contains(row, "convert") || strings.Contains(row, `artifacts/output/gammal.txt"`) {
		t.Fatalf("the row shows the action id or links an expired file:\n%s", row)
	}
	if row := rowOf(t, body, old); !strings.Contains(row, "Steg: greet") || !strings.Contains(row, "inga filer") {
		t.Fatalf("a step from before labels were kept reads:\n%s", row)
	}
	if row := rowOf(t, body, probeDone[len(probeDone)-1]); !strings.Contains(row, ">Körning</a>") {
		t.Fatalf("an initial run reads:\n%s", row)
	}

	// Filters: by tool, by status, both; the older link keeps them.
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"tool=other", newest(otherFailed, labelled, old)},
		{"status=failed", []string{otherFailed}},
		{"tool=other&status=succeeded", newest(labelled, old)},
		{"tool=probe&status=failed", nil},
	} {
		status, body, rows, _ := get("/runs?" + c.query)
		if status != http.StatusOK || !slices.Equal(rows, c.want) {
			t.Fatalf("/runs?%s answered %d with %v; want %v", c.query, status, rows, c.want)
		}
		if c.want == nil && !strings.Contains(body, "Ingen körning matchar filtret") {
			t.Fatalf("/runs?%s matching nothing does not say so:\n%s", c.query, body)
		}
		v, _ := url.ParseQuery(c.query)
		for k := range v {
			if !strings.Contains(body, fmt.Sprintf(`value="%s" selected`, v.Get(k))) {
				t.Fatalf("/runs?%s: the form does not keep %s=%s", c.query, k, v.Get(k))
			}
		}
	}
	_, _, page1, next := get("/runs?tool=probe&status=succeeded")
	if len(page1) != 50 || !strings.Contains(next, "tool=probe") || !strings.Contains(next, "status=succeeded") || !strings.Contains(next, "before=") {
		t.Fatalf("page 1 of probe's succeeded runs: %d runs, older link %q", len(page1), next)
	}
	_, _, page2, _ := get(next)
	if len(page2) != 2 || slices.Contains(page2, otherFailed) || slices.Contains(page1, page2[0]) {
		t.Fatalf("page 2 of probe's succeeded runs is %v", page2)
	}

	// A filter the services refuse: the page with the refusal and the table's status.
	for _, c := range []struct {
		query  string
		status int
	}{{"status=bogus", http.StatusBadRequest}, {"tool=nothing", http.StatusNotFound}} {
		status, body, rows, _ := get("/runs?" + c.query)
		if status != c.status || !strings.Contains(body, "data-filter-error") || len(rows) != 0 || !strings.Contains(body, `id="h-tool"`) {
			t.Fatalf("/runs?%s answered %d; want %d and the refusal on the page:\n%s", c.query, status, c.status, body)
		}
	}

	// All runs names the step by its label too.
	root := newBrowserless(t, env.URL)
	root.signIn("root", "a good password")
	_, _, all := root.do("GET", "/admin/runs?tool=other", nil, nil)
	if row := rowOf(t, html.UnescapeString(all), labelled); !strings.Contains(row, "Steg: Konvertera till PDF") {
		t.Fatalf("all runs names the labelled step:\n%s", row)
	}
}

func newest(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	slices.Reverse(out)
	return out
}

// TestCatalogueSearch: the catalogue's search finds Swedish words whatever their case,
// in titles, summaries and usage instructions.
func TestCatalogueSearch(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	for _, tl := range [][3]string{{"oversatt", "Översätt brev", "Gör om ett brev till engelska."}, {"kalkyl", "Kalkyl", "Räknar betyg."}} {
		if _, _, err := env.Admin.CreateTool(ctx, tl[0], tl[1], "", "def run_tool(i, o):\n    return 'hej'\n", true); err != nil {
			t.Fatal(err)
		}
		st, err := env.App.Store.Tool(ctx, tl[0])
		if err != nil {
			t.Fatal(err)
		}
		st.Summary = tl[2]
		if tl[0] == "kalkyl" {
			st.UsageInstructions = "# Så gör du\n\nLadda upp elevernas närvarolista."
		}
		if err := env.App.Store.UpdateToolInfo(ctx, st, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ada := newBrowserless(t, env.URL)
	ada.signIn("ada", "a good password")
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"ÖVERSÄTT", []string{"oversatt"}},
		{"engelska", []string{"oversatt"}},
		{"NÄRVAROLISTA", []string{"kalkyl"}},
		{"betyg elevernas", []string{"kalkyl"}},
		{"brev pdf", nil},
	} {
		_, _, body := ada.do("GET", "/?q="+url.QueryEscape(c.q), nil, nil)
		var got []string
		for _, slug := range []string{"oversatt", "kalkyl"} {
			if strings.Contains(body, `<h2><a href="/tools/`+slug+`">`) {
				got = append(got, slug)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("searching %q lists %v; want %v", c.q, got, c.want)
		}
		if c.want == nil && !strings.Contains(html.UnescapeString(body), "Inget verktyg matchar ”brev pdf”") {
			t.Fatalf("a search matching nothing does not say so:\n%s", body)
		}
	}
}

// TestFrame: the staging area is in the menu for authors and admins and for a user who
// keeps staged files, not for one who does not; /favicon.ico answers an icon; error
// pages are titled in the page's language.
func TestFrame(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	for _, u := range [][2]string{{"ada", "user"}, {"bea", "author"}} {
		if _, err := env.Admin.CreateUser(ctx, u[0], u[1], "a good password"); err != nil {
			t.Fatal(err)
		}
	}
	menu := func(b *browserless) bool {
		_, _, body := b.do("GET", "/runs", nil, nil)
		return strings.Contains(body, `<a href="/files"`)
	}
	ada, bea := newBrowserless(t, env.URL), newBrowserless(t, env.URL)
	ada.signIn("ada", "a good password")
	bea.signIn("bea", "a good password")
	if menu(ada) || !menu(bea) {
		t.Fatalf("without staged files the menu links the staging area for the user: %v, for the author: %v; want false, true", menu(ada), menu(bea))
	}
	if _, err := env.Admin.WithFileOwner("ada").Upload(ctx, "a.txt", strings.NewReader("hej"), client.UploadOptions{Key: "files/a.txt"}); err != nil {
		t.Fatal(err)
	}
	if !menu(ada) {
		t.Fatal("a user who keeps staged files has no link to them")
	}
	if _, _, body := ada.do("GET", "/files", nil, nil); !strings.Contains(body, "<h1>Filarkiv för API och agenter</h1>") || !strings.Contains(body, ">Filarkiv (API)</a>") {
		t.Fatalf("the staging area is not named for the API:\n%s", body)
	}

	for _, p := range []string{"/favicon.ico", "/static/favicon.svg"} {
		status, h, body := ada.do("GET", p, nil, nil)
		if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "image/") || len(body) < 100 {
			t.Fatalf("%s answered %d %q with %d bytes", p, status, h.Get("Content-Type"), len(body))
		}
	}
	status, _, body := ada.do("GET", "/admin/users", nil, nil)
	if status != http.StatusForbidden || !strings.Contains(body, "<h1>Inte tillåtet</h1>") {
		t.Fatalf("the refusal answered %d:\n%s", status, body)
	}
	status, _, body = ada.do("GET", "/admin/users", nil, http.Header{"Accept-Language": {"en"}})
	if status != http.StatusForbidden || !strings.Contains(body, "<h1>Forbidden</h1>") {
		t.Fatalf("the refusal in English answered %d:\n%s", status, body)
	}
}

// TestOneH1: every page has exactly one <h1>, also when a tool's usage instructions and
// its markdown output start with "# ": those headings are shifted under the page's.
func TestOneH1(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "root", "admin", "a good password"); err != nil {
		t.Fatal(err)
	}
	src := "def run_tool(i, o):\n    return {\"outputs\": [{\"kind\": \"markdown\", \"markdown\": \"# Rubrik\\n\\nKlart.\"}]}\n"
	if _, _, err := env.Admin.CreateTool(ctx, "rubrik", "Rubrik", "", src, true); err != nil {
		t.Fatal(err)
	}
	st, err := env.App.Store.Tool(ctx, "rubrik")
	if err != nil {
		t.Fatal(err)
	}
	st.UsageInstructions = "# Så gör du\n\n## Steg ett\n\nLadda upp en fil."
	if err := env.App.Store.UpdateToolInfo(ctx, st, time.Now()); err != nil {
		t.Fatal(err)
	}
	rn, err := env.Admin.RunFiles(ctx, "rubrik", nil, nil, 30*time.Second)
	if err != nil || rn.Status != store.StatusSucceeded {
		t.Fatalf("the run: %+v, %v", rn, err)
	}
	root := newBrowserless(t, env.URL)
	status, _, body := root.do("GET", "/signin", nil, nil)
	if n := len(h1Re.FindAllString(body, -1)); status != http.StatusOK || n != 1 {
		t.Fatalf("the sign-in page (%d) has %d h1", status, n)
	}
	root.signIn("root", "a good password")
	for _, p := range []string{"/", "/?q=rubrik", "/?q=nothing", "/runs", "/runs?status=bogus", "/runs/" + rn.RunID, "/tools/rubrik",
		"/files", "/editor", "/editor/rubrik", "/admin/users", "/admin/runs", "/no/such/page"} {
		status, _, body := root.do("GET", p, nil, http.Header{"Accept": {"text/html"}})
		if n := len(h1Re.FindAllString(body, -1)); n != 1 {
			t.Errorf("%s (%d) has %d h1:\n%s", p, status, n, body)
		}
		if p == "/runs/"+rn.RunID && !strings.Contains(body, "Rubrik</h2>") {
			t.Errorf("the run page does not show the tool's heading as an h2:\n%s", body)
		}
	}
}
