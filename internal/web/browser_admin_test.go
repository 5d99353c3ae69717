package web_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/client"
)

// auditOK and auditFail are the tools of the admin's audit: one that lists what it got,
// one that always fails.
const (
	auditOK   = "def run_tool(input_dir, output_dir):\n    return 'ok'\n"
	auditFail = "def run_tool(input_dir, output_dir):\n    raise SystemExit('nej')\n"
)

// adminRuns: two users run tools, and an admin opens All runs from the navigation,
// sees both users' runs with their names, the tool and version, the status and the
// files each run was given, and narrows the list by user, by tool and by status with the
// filter form. A user who is no admin has no link to it and gets the refusal.
func (s *site) adminRuns(t *testing.T) {
	ctx := context.Background()
	if _, err := s.admin.CreateUser(ctx, "rektor", "admin", password); err != nil {
		t.Fatal(err)
	}
	author := s.userClient(t, "author")
	for slug, src := range map[string]string{"audit-ok": auditOK, "audit-fail": auditFail} {
		if _, _, err := author.CreateTool(ctx, slug, strings.ToUpper(slug[:1])+slug[1:], "", src, true); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	start := func(c *client.Client, tool string, paths ...string) client.Run {
		t.Helper()
		rn, err := c.RunFiles(ctx, tool, paths, nil, time.Minute)
		if err == nil && !rn.Done() {
			rn, err = c.WaitRun(ctx, rn)
		}
		if err != nil {
			t.Fatal(err)
		}
		return rn
	}
	teacherOK := start(s.userClient(t, "teacher"), "audit-ok", file("elever.csv", "namn\nAda\nBo\n"), file("klass 7b.txt", "7b"))
	authorOK := start(author, "audit-ok", file("anteckningar.md", "# Hej\n"))
	authorFail := start(author, "audit-fail", file("data.json", "{}"))
	if teacherOK.Status != "succeeded" || authorOK.Status != "succeeded" || authorFail.Status != "failed" {
		t.Fatalf("the runs ended %s, %s, %s", teacherOK.Status, authorOK.Status, authorFail.Status)
	}

	a := s.as(t, "rektor")
	run(t, a,
		chromedp.Navigate(s.base+"/"),
		chromedp.Click(`nav a[href="/admin/runs"]`, chromedp.ByQuery),
		chromedp.WaitVisible("table[data-audit]", chromedp.ByQuery),
	)
	if got := text(t, a, "main h1"); got != "All runs" {
		t.Fatalf("the navigation's link led to %q", got)
	}
	for _, c := range []struct {
		rn   client.Run
		want []string
	}{
		{teacherOK, []string{"teacher", "Audit-ok (audit-ok)", teacherOK.VersionID, "published", "Done", "elever.csv", "12 bytes", "klass 7b.txt", "2 bytes"}},
		{authorOK, []string{"author", "Audit-ok (audit-ok)", authorOK.VersionID, "Done", "anteckningar.md", "6 bytes"}},
		{authorFail, []string{"author", "Audit-fail (audit-fail)", authorFail.VersionID, "Failed", "data.json", "2 bytes"}},
	} {
		row := text(t, a, `tr[data-run="`+c.rn.RunID+`"]`)
		for _, want := range c.want {
			if !strings.Contains(row, want) {
				t.Fatalf("the row of run %s lacks %q: %q", c.rn.RunID, want, row)
			}
		}
	}

	// listed is what the table shows: each run's id, user and status.
	type listed struct{ ID, User, Status string }
	shown := func() []listed {
		var out []listed
		run(t, a, chromedp.Evaluate(`[...document.querySelectorAll("tr[data-run]")].map(tr => ({ID: tr.dataset.run,
			User: tr.querySelector("[data-user]").textContent, Status: tr.querySelector("[data-status]").dataset.status}))`, &out))
		return out
	}
	filter := func(user, tool, status string) []listed {
		t.Helper()
		before := location(t, a)
		// Set by script: chromedp.SetValue cannot set an empty value (it sends none, and
		// the field reads "undefined").
		want := []string{user, tool, status}
		arg, _ := json.Marshal(want)
		var set []string
		run(t, a, chromedp.Evaluate(`(v => ["#f-user", "#f-tool", "#f-status"].map((sel, i) => {
			const el = document.querySelector(sel); el.value = v[i]; return el.value; }))(`+string(arg)+`)`, &set))
		if !slices.Equal(set, want) {
			t.Fatalf("the filter form holds %q; want %q", set, want)
		}
		run(t, a, chromedp.Click("form[action='/admin/runs'] button[type=submit]", chromedp.ByQuery))
		waitPath(t, a, "/admin/runs?", before)
		run(t, a, chromedp.WaitVisible("main p.lead", chromedp.ByQuery))
		return shown()
	}
	ids := func(rows []listed) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}

	// By user: only the teacher's runs, among them the one above, none of the author's.
	byUser := filter("teacher", "", "")
	if !slices.Contains(ids(byUser), teacherOK.RunID) || slices.Contains(ids(byUser), authorOK.RunID) {
		t.Fatalf("filtered by the teacher, the list is %v", byUser)
	}
	for _, r := range byUser {
		if r.User != "teacher" {
			t.Fatalf("filtered by the teacher, the list shows a run of %s", r.User)
		}
	}
	// By tool: exactly the two runs of audit-ok, the newest first.
	if got, want := ids(filter("", "audit-ok", "")), []string{authorOK.RunID, teacherOK.RunID}; !slices.Equal(got, want) {
		t.Fatalf("filtered by audit-ok, the list is %v; want %v", got, want)
	}
	// By status: failed runs only, the author's among them.
	failed := filter("", "", "failed")
	if !slices.Contains(ids(failed), authorFail.RunID) {
		t.Fatalf("filtered by failed, the list %v lacks the author's failed run", failed)
	}
	for _, r := range failed {
		if r.Status != "failed" {
			t.Fatalf("filtered by failed, the list shows a run that %s", r.Status)
		}
	}
	// All three at once, and the form shows what it filters by.
	if got := ids(filter("author", "audit-fail", "failed")); !slices.Equal(got, []string{authorFail.RunID}) {
		t.Fatalf("filtered by the author, audit-fail and failed, the list is %v", got)
	}
	var form []string
	run(t, a, chromedp.Evaluate(`["#f-user", "#f-tool", "#f-status"].map(s => document.querySelector(s).value)`, &form))
	if !slices.Equal(form, []string{"author", "audit-fail", "failed"}) {
		t.Fatalf("after filtering, the form reads %q", form)
	}
	// Readable on a phone: the table scrolls in its box, not the page.
	var scrollWidth int64
	run(t, a, chromedp.EmulateViewport(360, 780), chromedp.Reload(), chromedp.WaitVisible("table[data-audit]", chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollWidth), chromedp.EmulateViewport(1280, 900))
	if scrollWidth > 360 {
		t.Errorf("All runs at 360 px is %d px wide: it scrolls sideways", scrollWidth)
	}
	// On a phone every list an admin reads is cards, and no control of the page or of
	// the menu sits off-screen.
	for _, page := range []string{"/admin/runs", "/admin/users", "/admin/audit"} {
		fitsPhone(t, a, s.base+page)
	}

	// Not an admin: no link, and the refusal.
	u := s.as(t, "teacher")
	var links int
	run(t, u, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("nav", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('a[href^="/admin/runs"]').length`, &links))
	if links != 0 {
		t.Fatalf("a teacher's page links to All runs %d times", links)
	}
	run(t, u, chromedp.Navigate(s.base+"/admin/runs"), chromedp.WaitVisible("main h1", chromedp.ByQuery))
	if h1, msg := text(t, u, "main h1"), text(t, u, "main .error"); h1 != "Forbidden" || !strings.Contains(msg, "needs the admin role") {
		t.Fatalf("a teacher opening All runs sees %q: %q", h1, msg)
	}
}

// fitsPhone opens url at 390 px and fails unless the page is no wider than the window,
// every link, button and field of the menu and the page lies whole inside it, and each
// row of its lists (table.cardlist) shows as a card.
func fitsPhone(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	var v struct {
		Scroll, Width int
		Off           []string
		Rows          int
		Cards         int
	}
	run(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(url), chromedp.WaitVisible("main h1", chromedp.ByQuery),
		chromedp.Evaluate(`(() => {
		  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0 && !e.closest("details:not([open]) > :not(summary)"); };
		  const off = [...document.querySelectorAll("header a, header button, main a, main button, main select, main input:not([type=hidden])")]
		    .filter(shown).filter(e => { const r = e.getBoundingClientRect(); return r.left < -1 || r.right > window.innerWidth + 1; })
		    .map(e => e.outerHTML.slice(0, 80));
		  const rows = [...document.querySelectorAll("table.cardlist tbody tr")];
		  return {Scroll: document.documentElement.scrollWidth, Width: window.innerWidth, Off: off,
		    Rows: rows.length, Cards: rows.filter(r => getComputedStyle(r).display === "block").length};
		})()`, &v),
		chromedp.EmulateViewport(1280, 900))
	if v.Scroll > v.Width || len(v.Off) > 0 || v.Rows == 0 || v.Cards != v.Rows {
		t.Errorf("%s at 390 px: %d px wide in %d; off-screen %q; %d of %d list rows are cards", url, v.Scroll, v.Width, v.Off, v.Cards, v.Rows)
	}
}
