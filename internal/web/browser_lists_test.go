package web_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const brokenSource = "def run_tool(input_dir, output_dir):\n    raise SystemExit('nej')\n"

// listsView is what TestBrowserLists reads from a list page in one evaluation.
type listsView struct {
	Steps     []string `json:"steps"`
	Statuses  []string `json:"statuses"`
	Split     []string `json:"split"` // status labels whose text runs over more than one line
	Scroll    int64    `json:"scroll"`
	Width     int64    `json:"width"`
	RowShow   string   `json:"rowShow"`
	Caption   string   `json:"caption"`
	Downloads []string `json:"downloads"`
	H1        int      `json:"h1"`
	Nav       []string `json:"nav"`
	NavTops   []int    `json:"navTops"`
	NavScroll string   `json:"navScroll"`
	NavOff    []string `json:"navOff"`
	Icon      string   `json:"icon"`
	Cards     []string `json:"cards"`
}

const readLists = `(() => {
  const all = s => [...document.querySelectorAll(s)];
  const nav = document.querySelector("header nav");
  const row = document.querySelector("table[data-history] tbody tr");
  const cell = document.querySelector("table[data-history] tbody td");
  return {
    steps: all("[data-step]").map(a => a.textContent),
    statuses: all("main .status").map(e => e.textContent),
    split: all("main .status").filter(e => e.getClientRects().length > 1).map(e => e.textContent),
    scroll: document.documentElement.scrollWidth, width: window.innerWidth,
    rowShow: row ? getComputedStyle(row).display : "",
    caption: cell ? getComputedStyle(cell, "::before").content : "",
    downloads: all("[data-downloads] a[download]").map(a => a.textContent),
    h1: all("h1").length,
    nav: nav ? all("header nav a").map(a => a.getAttribute("href")) : [],
    navTops: [...new Set(all("header nav a").map(a => Math.round(a.getBoundingClientRect().top)))],
    navScroll: nav ? getComputedStyle(nav).overflowX : "",
    navOff: all("header nav a").filter(a => { const r = a.getBoundingClientRect(); return r.left < 0 || r.right > window.innerWidth; }).map(a => a.getAttribute("href")),
    icon: (document.querySelector("link[rel=icon]") || {}).href || "",
    cards: all(".cards .card h2 a").map(a => a.getAttribute("href")),
  };
})()`

// shoot writes the page of ctx to the screenshot directory, when one is given.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshotDir == "" {
		return
	}
	var shot []byte
	run(t, ctx, chromedp.FullScreenshot(&shot, 100))
	if err := os.WriteFile(filepath.Join(*screenshotDir, name+".png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readView(t *testing.T, ctx context.Context) listsView {
	t.Helper()
	var v listsView
	run(t, ctx, chromedp.Evaluate(readLists, &v))
	return v
}

// TestBrowserLists, at 1280 and 390 px, in Swedish: the history names a step by its
// action's label and carries its downloads, is filtered by tool and status with its
// form, and shows as cards on a phone; no status label breaks over lines; the catalogue's
// search finds Swedish words in usage instructions whatever their case; the menu is one
// row (scrolling by itself on a phone) and links the staging area only for those it is
// for; every page has one <h1>; and the favicon answers.
func TestBrowserLists(t *testing.T) {
	s := startSite(t)
	defer s.close()
	ctx := context.Background()
	if _, err := s.admin.CreateUser(ctx, "skolchef", "admin", password); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.userClient(t, "author").CreateTool(ctx, "trasig", "Trasig", "", brokenSource, true); err != nil {
		t.Fatal(err)
	}
	teacherAPI := s.userClient(t, "teacher")
	if rn, err := teacherAPI.RunFiles(ctx, "trasig", nil, nil, time.Minute); err != nil || rn.Status != "failed" {
		t.Fatalf("the broken tool's run: %+v, %v", rn, err)
	}

	// A preview, then the convert step: a step with a label and a PDF to download.
	teacher := s.as(t, "teacher")
	s.useLang(t, teacher, "sv")
	first := s.runPreview(t, teacher)
	run(t, teacher, chromedp.Click(convertButton, chromedp.ByQuery))
	step := waitPath(t, teacher, "/runs/", first)
	stepID := step[strings.LastIndex(step, "/")+1:]
	if rn, err := teacherAPI.GetRun(ctx, stepID, time.Minute); err != nil || rn.Status != "succeeded" {
		t.Fatalf("the convert step: %+v, %v", rn, err)
	}

	admin := s.as(t, "skolchef")
	s.useLang(t, admin, "sv")

	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			phone := vp.width < 600
			for _, c := range []context.Context{teacher, admin} {
				run(t, c, chromedp.EmulateViewport(vp.width, vp.height))
			}

			// History: labels, downloads, statuses on one line, cards on a phone.
			run(t, teacher, chromedp.Navigate(s.base+"/runs"), chromedp.WaitVisible("table[data-history]", chromedp.ByQuery))
			v := readView(t, teacher)
			if !slices.Contains(v.Steps, "Steg: Konvertera till PDF") || slices.ContainsFunc(v.Steps, func(s string) bool { return strings.Contains(s, "convert") }) {
				t.Errorf("the history names the runs %q; want the step by its label", v.Steps)
			}
			if !slices.ContainsFunc(v.Downloads, func(s string) bool { return strings.HasSuffix(s, ".pdf") }) {
				t.Errorf("the history's downloads are %q; want the PDF", v.Downloads)
			}
			if !slices.Contains(v.Statuses, "Misslyckades") || !slices.Contains(v.Statuses, "Klar") || len(v.Split) > 0 {
				t.Errorf("statuses %q; split over lines: %q", v.Statuses, v.Split)
			}
			if v.Scroll > v.Width {
				t.Errorf("the history is %d px wide at %d px: the page scrolls sideways", v.Scroll, v.Width)
			}
			if phone && (v.RowShow != "block" || !strings.Contains(v.Caption, "Verktyg")) {
				t.Errorf("on a phone a history row shows as %q with caption %s; want a card (block) captioned by its column", v.RowShow, v.Caption)
			}
			if !phone && v.RowShow != "table-row" {
				t.Errorf("on a laptop a history row shows as %q; want a table row", v.RowShow)
			}
			if v.H1 != 1 || slices.Contains(v.Nav, "/files") || !strings.HasSuffix(v.Icon, "/static/favicon.svg") {
				t.Errorf("the history has %d h1, menu %q, icon %q; want one h1, no staging area for a teacher without files, and the icon", v.H1, v.Nav, v.Icon)
			}

			shoot(t, teacher, "history-sv-"+vp.name)

			// The filter form narrows to a tool and a status, and says so in the address.
			run(t, teacher,
				chromedp.SetValue("#h-tool", "html-to-pdf-preview", chromedp.ByQuery),
				chromedp.SetValue("#h-status", "succeeded", chromedp.ByQuery),
				chromedp.Click("form[role=search] button[type=submit]", chromedp.ByQuery))
			u := waitPath(t, teacher, "/runs?")
			if !strings.Contains(u, "tool=html-to-pdf-preview") || !strings.Contains(u, "status=succeeded") {
				t.Errorf("the filter went to %s", u)
			}
			run(t, teacher, chromedp.WaitVisible("table[data-history]", chromedp.ByQuery))
			v = readView(t, teacher)
			if len(v.Statuses) != 2 || slices.ContainsFunc(v.Statuses, func(s string) bool { return s != "Klar" }) {
				t.Errorf("filtered to HTML till PDF and Klar, the history lists %q", v.Statuses)
			}

			// Search: a word of the usage instructions only, in capitals.
			for q, want := range map[string]string{"SEMIKOLON": "/tools/csv-summary", "FÖRHANDSVISNINGEN": "/tools/html-to-pdf-preview"} {
				run(t, teacher, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("#q", chromedp.ByQuery),
					chromedp.SendKeys("#q", q, chromedp.ByQuery), chromedp.Click("form[role=search] button[type=submit]", chromedp.ByQuery))
				waitPath(t, teacher, "/?q=")
				run(t, teacher, chromedp.WaitVisible("main h1", chromedp.ByQuery))
				if v := readView(t, teacher); !slices.Equal(v.Cards, []string{want}) || v.H1 != 1 {
					t.Errorf("searching %q lists %q (%d h1); want %s", q, v.Cards, v.H1, want)
				}
			}

			// One <h1> on the tool page (usage instructions) and the run page (outputs).
			for _, p := range []string{"/tools/html-to-pdf-preview", step} {
				if !strings.HasPrefix(p, "http") {
					p = s.base + p
				}
				run(t, teacher, chromedp.Navigate(p), chromedp.WaitVisible("main h1", chromedp.ByQuery))
				if v := readView(t, teacher); v.H1 != 1 {
					t.Errorf("%s has %d h1", p, v.H1)
				}
			}

			// An admin's menu: every link whole on the screen; on a laptop on one row, on a
			// phone wrapped onto a few, never scrolled sideways with a link cut off.
			run(t, admin, chromedp.Navigate(s.base+"/admin/runs"), chromedp.WaitVisible("table[data-audit]", chromedp.ByQuery))
			v = readView(t, admin)
			rows := 1
			if phone {
				rows = 3
			}
			if len(v.Nav) != 6 || !slices.Contains(v.Nav, "/files") || len(v.NavTops) > rows || len(v.NavOff) > 0 || v.NavScroll == "auto" {
				t.Errorf("the admin's menu %q lies on %d rows (at most %d), off-screen %q, overflow %q", v.Nav, len(v.NavTops), rows, v.NavOff, v.NavScroll)
			}
			shoot(t, admin, "admin-runs-sv-"+vp.name)
			if v.Scroll > v.Width || len(v.Split) > 0 || !slices.Contains(v.Statuses, "Misslyckades") {
				t.Errorf("All runs is %d px wide at %d px; statuses %q, split over lines: %q", v.Scroll, v.Width, v.Statuses, v.Split)
			}
		})
	}

	var icon string
	run(t, teacher, chromedp.Evaluate(`fetch("/favicon.ico").then(r => r.status + " " + r.headers.get("content-type"))`, &icon,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if icon != "200 image/x-icon" {
		t.Errorf("/favicon.ico answers %q", icon)
	}
}
