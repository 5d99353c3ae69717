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

// TestReportForm: the report box is the run owner's alone; a refused report shows the
// page again with the message as typed, the box as ticked and why, in Swedish; a report
// made says so; and only the tool's author and admins find it on /reports, where the
// author closes it.
func TestReportForm(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	for _, u := range [][2]string{{"root", "admin"}, {"bob", "author"}, {"carl", "author"}} {
		if _, err := env.Admin.CreateUser(ctx, u[0], u[1], "a good password"); err != nil {
			t.Fatal(err)
		}
	}
	ulla, err := env.Admin.CreateUser(ctx, "ulla", "user", "a good password")
	if err != nil {
		t.Fatal(err)
	}
	bobTok, err := env.Admin.CreateToken(ctx, "bob", "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Client(t, bobTok).CreateTool(ctx, "krasch", "Krasch", "", "def run_tool(i, o):\n    raise ValueError('x')\n", true); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "klass.csv")
	os.WriteFile(file, []byte("namn\nAda\n"), 0o644)
	rn, err := env.Client(t, ulla.Token).RunFiles(ctx, "krasch", []string{file}, nil, time.Minute)
	if err != nil || rn.Status != "failed" {
		t.Fatalf("the run: %+v, %v", rn, err)
	}
	sv := http.Header{"Accept-Language": {"sv"}, "Accept": {"text/html"}}
	signIn := func(name string) (*browserless, string) {
		b := newBrowserless(t, env.URL)
		return b, b.signIn(name, "a good password")
	}
	u, ucsrf := signIn("ulla")
	_, _, page := u.do("GET", "/runs/"+rn.RunID, nil, sv)
	if !strings.Contains(page, `action="/runs/`+rn.RunID+`/report"`) || !strings.Contains(page, "Rapportera till författaren") ||
		regexp.MustCompile(`name="share_files" value="1"\s+checked`).MatchString(page) {
		t.Fatalf("the owner's page has no report form, or it shares the files unasked:\n%s", page)
	}

	// Too long: the page again, the words kept.
	long := strings.Repeat("ö", 2001) // 4002 bytes
	status, _, page := u.do("POST", "/runs/"+rn.RunID+"/report", url.Values{"csrf": {ucsrf}, "message": {long}, "share_files": {"1"}}, sv)
	if status != http.StatusBadRequest || !strings.Contains(page, "Meddelandet är för långt: det får vara högst 4 kB") ||
		!strings.Contains(html.UnescapeString(page), ">"+long+"</textarea>") || !regexp.MustCompile(`name="share_files" value="1"\s+checked`).MatchString(page) {
		t.Fatalf("a message over the cap answered %d:\n%s", status, page)
	}

	// Someone else's run: no form, and a post is a 404.
	c, ccsrf := signIn("carl")
	if status, _, _ := c.do("POST", "/runs/"+rn.RunID+"/report", url.Values{"csrf": {ccsrf}, "message": {"x"}}, sv); status != http.StatusNotFound {
		t.Fatalf("a report of another's run answered %d", status)
	}
	root, rcsrf := signIn("root")
	if _, _, page := root.do("GET", "/runs/"+rn.RunID, nil, sv); strings.Contains(page, "/report\"") {
		t.Fatal("an admin viewing another's run is offered the report form")
	}
	if status, _, _ := root.do("POST", "/runs/"+rn.RunID+"/report", url.Values{"csrf": {rcsrf}}, sv); status != http.StatusNotFound {
		t.Fatalf("an admin's report of another's run answered %d", status)
	}

	status, h, _ := u.do("POST", "/runs/"+rn.RunID+"/report", url.Values{"csrf": {ucsrf}, "message": {"Det gick fel <b>igen</b>"}}, sv)
	if status != http.StatusSeeOther || h.Get("Location") != "/runs/"+rn.RunID+"#report" {
		t.Fatalf("the report answered %d to %q", status, h.Get("Location"))
	}
	if _, _, page := u.do("GET", "/runs/"+rn.RunID, nil, sv); !strings.Contains(page, "data-report-sent") || strings.Contains(page, "data-report-form") {
		t.Fatalf("the reported run's page:\n%s", page)
	}

	// Who sees it.
	b, bcsrf := signIn("bob")
	for _, who := range []struct {
		b    *browserless
		sees bool
	}{{b, true}, {root, true}, {c, false}, {u, false}} {
		_, _, page := who.b.do("GET", "/reports", nil, sv)
		if strings.Contains(page, "Det gick fel &lt;b&gt;igen&lt;/b&gt;") != who.sees || strings.Contains(page, "klass.csv") {
			t.Fatalf("a reports page (sees: %v):\n%s", who.sees, page)
		}
	}
	id := regexp.MustCompile(`data-report="(pr_[0-9A-Za-z]+)"`).FindStringSubmatch(func() string { _, _, p := b.do("GET", "/reports", nil, sv); return p }())
	if id == nil {
		t.Fatal("no report id on bob's page")
	}
	if status, _, _ := c.do("POST", "/reports/"+id[1]+"/close", url.Values{"csrf": {ccsrf}}, sv); status != http.StatusNotFound {
		t.Fatalf("another author closing it answered %d", status)
	}
	if status, h, _ := b.do("POST", "/reports/"+id[1]+"/close", url.Values{"csrf": {bcsrf}}, sv); status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/reports") {
		t.Fatalf("closing answered %d to %q", status, h.Get("Location"))
	}
	if _, _, page := b.do("GET", "/reports", nil, sv); !strings.Contains(page, `data-status="closed"`) || strings.Contains(page, "data-close") {
		t.Fatalf("the closed report:\n%s", page)
	}
	if status, _, page := b.do("GET", "/reports?cursor=nope", nil, sv); status != http.StatusBadRequest || !strings.Contains(page, "Adressen till rapportlistan är fel") {
		t.Fatalf("a bad cursor answered %d:\n%s", status, page)
	}
}
