package web_test

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/skrip-dev/skrip/internal/client"
)

// The accessibility check. axe-core is in no Debian package and no Go module carries its
// rules, so the check is our own: one script, run in real Chromium on every page of the
// UI as the user who sees it, in Swedish and in English, at both viewports, checks
// landmarks, names, headings and the contrast of every visible text; then the Tab key
// walks the page and each stop must be visible, show a focus indicator with enough
// contrast, and come in DOM order, the skip link first. TestPalette checks the colour
// pairs of static/style.css without a browser.

// a11yFinding is one failed rule on one element.
type a11yFinding struct {
	Rule     string `json:"rule"`
	Selector string `json:"selector"`
	Detail   string `json:"detail"`
}

func (f a11yFinding) String() string { return f.Rule + " at " + f.Selector + ": " + f.Detail }

// a11yPage is one page of the UI and the user who sees it.
type a11yPage struct {
	name, user string
	// url returns the page's address; it may prepare the page first (a running run is
	// started anew for each visit).
	url func(t *testing.T) string
	// open, instead of url, brings tab to a page no address shows (the answer to a post).
	open func(t *testing.T, tab context.Context)
	// after, if set, runs when the page has been checked.
	after func(t *testing.T)
}

// a11yTool offers everything a finished run can show at once: downloads, a table, an
// HTML preview in a frame, markdown with headings, a chart, a next step with a form and a
// second one without, and what the tool printed.
const a11yTool = `import os

def run_tool(input_dir, output_dir):
    print("Skrev veckobrevet.")
    with open(os.path.join(output_dir, "Veckobrev.txt"), "w") as f:
        f.write("Hej")
    return {
        "outputs": [
            {"kind": "markdown", "markdown": "# Resultat\n\nKlart. Se [instruktionerna](https://example.invalid/).\n\n## Nästa\n\nText."},
            {"kind": "notice", "level": "warning", "message": "En varning."},
            {"kind": "table", "title": "Grupper", "columns": [{"key": "namn", "label": "Namn"}, {"key": "antal", "label": "Antal"}],
             "rows": [{"namn": "Ada", "antal": 3}, {"namn": "Bo", "antal": 152260}]},
            {"kind": "html_sandboxed", "html": "<h1>Förhandsvisning</h1><p>Text</p>"},
            {"kind": "vega_lite", "spec": {"title": "Elever per grupp", "data": {"values": [{"grupp": "A", "elever": 3}, {"grupp": "B", "elever": 5}]},
             "mark": "bar", "encoding": {"x": {"field": "grupp", "type": "nominal"}, "y": {"field": "elever", "type": "quantitative"}}}},
        ],
        "next_actions": [{"action_id": "again", "label": "Gör om", "kind": "form", "fields": [
            {"name": "n", "label": "Antal", "kind": "integer"},
            {"name": "mode", "label": "Läge", "kind": "enum", "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]},
            {"name": "loud", "label": "Högt", "kind": "boolean"},
        ]}, {"action_id": "borja_om", "label": "Börja om", "kind": "form", "fields": []}],
        "state": {"n": 1},
    }
`

// a11ySlow runs long enough for the running page to be checked; the test cancels it.
const a11ySlow = `import time

def run_tool(input_dir, output_dir):
    print("halvvägs", flush=True)
    time.sleep(120)
`

func TestAccessibility(t *testing.T) {
	s := startSite(t)
	defer s.close()
	ctx := context.Background()
	if _, err := s.admin.CreateUser(ctx, "rektor", "admin", password); err != nil {
		t.Fatal(err)
	}
	author, teacher := s.userClient(t, "author"), s.userClient(t, "teacher")
	createEcho(t, author, "a11y-gruppera")
	for slug, src := range map[string]string{"a11y-result": a11yTool, "a11y-fail": auditFail, "a11y-slow": a11ySlow, "a11y-refuse": refuseSource} {
		if _, _, err := author.CreateTool(ctx, slug, "Tillgänglighet "+slug[5:], "Ett verktyg för kontrollen.", src, true); err != nil {
			t.Fatal(err)
		}
	}
	_, draft, err := author.CreateTool(ctx, "a11y-draft", "Utkast", "Ett opublicerat verktyg.", greetingSource, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := author.EditorRun(ctx, draft.ID, []string{s.demo["index.html"]}, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	brokenURL := s.a11yBrokenVersion(t, author)
	runDone := func(tool string, files ...string) string {
		t.Helper()
		rn, err := teacher.RunFiles(ctx, tool, files, nil, time.Minute)
		if err == nil && !rn.Done() {
			rn, err = teacher.WaitRun(ctx, rn)
		}
		if err != nil {
			t.Fatal(err)
		}
		return rn.RunID
	}
	dir := t.TempDir()
	csv := filepath.Join(dir, "elever.csv")
	if err := os.WriteFile(csv, []byte("namn\nAda\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resultRun := runDone("a11y-result", csv)
	failedRun := runDone("a11y-fail", csv)
	refusedRun := runDone("a11y-refuse", csv)
	// A failure of skrip's side, which offers "Försök igen".
	lostRun := s.loseWorker(t, teacher, "a11y-slow", nil, nil).RunID
	// A second failure, reported, so that the author's reports page has one to show.
	if err := teacher.Do(ctx, "POST", "/api/v1/runs/"+runDone("a11y-fail", csv)+"/report", map[string]any{"message": "Det blev fel.", "share_files": true}, nil); err != nil {
		t.Fatal(err)
	}
	runDone("a11y-gruppera", csv)
	if err := teacher.Put(ctx, "files/klass-7b/elever.csv", strings.NewReader("namn\nAda\n"), 9, "text/csv"); err != nil {
		t.Fatal(err)
	}
	t.Run("the check finds known faults", func(t *testing.T) { s.a11ySelfTest(t) })

	var running string
	// One pending `skrip login`, whose approval page every language and viewport opens.
	cliCode := startCLILoginAt(t, s.base, "a11y-dator")
	var diffURL string // made once, by the first visit of "two versions compared"
	pages := []a11yPage{
		{name: "sign-in", user: "", url: func(*testing.T) string { return s.base + "/signin" }},
		{name: "sign-in (wrong password)", user: "", open: func(t *testing.T, tab context.Context) {
			run(t, tab, chromedp.Navigate(s.base+"/signin"), chromedp.WaitVisible("#name", chromedp.ByQuery),
				chromedp.SendKeys("#name", "teacher", chromedp.ByQuery), chromedp.SendKeys("#password", "fel", chromedp.ByQuery),
				chromedp.Click("form[action='/signin'] button", chromedp.ByQuery), chromedp.WaitVisible("main .error", chromedp.ByQuery))
		}},
		{name: "not found (signed out)", user: "", url: func(*testing.T) string { return s.base + "/no-such-page" }},
		{name: "catalogue", user: "teacher", url: func(*testing.T) string { return s.base + "/" }},
		{name: "tool", user: "teacher", url: func(*testing.T) string { return s.base + "/tools/a11y-gruppera" }},
		{name: "run (running)", user: "teacher", url: func(t *testing.T) string {
			rn, err := teacher.RunFiles(ctx, "a11y-slow", nil, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			running = rn.RunID
			return s.base + "/runs/" + rn.RunID
		}, after: func(t *testing.T) {
			if _, err := teacher.CancelRun(ctx, running); err != nil {
				t.Errorf("cancelling the slow run: %v", err)
			}
		}},
		{name: "run (downloads, next step)", user: "teacher", url: func(*testing.T) string { return s.base + "/runs/" + resultRun }},
		{name: "run (failed)", user: "teacher", url: func(*testing.T) string { return s.base + "/runs/" + failedRun }},
		{name: "run (input refused)", user: "teacher", url: func(*testing.T) string { return s.base + "/runs/" + refusedRun }},
		{name: "run (skrip's failure, Försök igen)", user: "teacher", url: func(*testing.T) string { return s.base + "/runs/" + lostRun }},
		{name: "history", user: "teacher", url: func(*testing.T) string { return s.base + "/runs" }},
		{name: "files", user: "teacher", url: func(*testing.T) string { return s.base + "/files" }},
		{name: "account", user: "teacher", url: func(*testing.T) string { return s.base + "/account" }},
		{name: "CLI login", user: "teacher", url: func(*testing.T) string { return s.base + "/cli/login?code=" + cliCode }},
		{name: "CLI login (enter the code)", user: "teacher", url: func(*testing.T) string { return s.base + "/cli/login" }},
		{name: "not found (signed in)", user: "teacher", url: func(*testing.T) string { return s.base + "/tools/no-such-tool" }},
		{name: "editor index", user: "author", url: func(*testing.T) string { return s.base + "/editor" }},
		{name: "problem reports", user: "author", url: func(*testing.T) string { return s.base + "/reports" }},
		{name: "editor", user: "author", url: func(*testing.T) string { return s.base + "/editor/a11y-draft" }},
		{name: "editor (schemas)", user: "author", url: func(*testing.T) string { return s.base + "/editor/a11y-gruppera" }},
		{name: "editor (syntax error, asks before publishing)", user: "author", url: func(*testing.T) string { return brokenURL }},
		{name: "two versions compared", user: "author", url: func(t *testing.T) string {
			if diffURL != "" {
				return diffURL
			}
			_, v1, err := author.CreateTool(ctx, "a11y-versions", "Versioner", "", greetingSource, false)
			if err != nil {
				t.Fatal(err)
			}
			v2, err := author.AddVersion(ctx, "a11y-versions", client.NewVersion{Source: strings.Replace(greetingSource, "def ", "# Ny rad\ndef ", 1), Note: "En kommentar överst"})
			if err != nil {
				t.Fatal(err)
			}
			diffURL = s.base + "/editor/versions/" + v2.ID + "/diff?against=" + v1.ID
			return diffURL
		}},
		{name: "users", user: "rektor", url: func(*testing.T) string { return s.base + "/admin/users" }},
		{name: "all runs", user: "rektor", url: func(*testing.T) string { return s.base + "/admin/runs" }},
		{name: "audit log", user: "rektor", url: func(*testing.T) string { return s.base + "/admin/audit" }},
		{name: "delete a user (confirmation)", user: "rektor", url: func(t *testing.T) string {
			u, err := s.admin.User(ctx, "teacher")
			if err != nil {
				t.Fatal(err)
			}
			return s.base + "/admin/users/" + u.ID + "/delete"
		}},
		{name: "invitation", user: "", url: func(t *testing.T) string {
			inv, err := s.admin.Invite(ctx, "user", "")
			if err != nil {
				t.Fatal(err)
			}
			return inv.URL
		}},
	}

	// tabFor opens a tab of the browser the page's user is signed in to; each page has a
	// tab of its own, so a slow page cannot spend the time of the pages after it.
	tabFor := func(t *testing.T, user string) context.Context {
		var tab context.Context
		if user == "" {
			tab = s.anonymous(t)
		} else {
			tab = s.as(t, user)
		}
		leaveAnyway(tab)
		return tab
	}
	for _, lang := range []string{"sv", "en"} {
		// The language is kept per browser, so picking it once in each is enough.
		picked := map[string]bool{}
		for _, p := range pages {
			if !picked[p.user] {
				s.useLang(t, tabFor(t, p.user), lang)
				picked[p.user] = true
			}
		}
		for _, vp := range viewports {
			for _, p := range pages {
				t.Run(lang+"/"+vp.name+"/"+p.name, func(t *testing.T) {
					tab := tabFor(t, p.user)
					run(t, tab, chromedp.EmulateViewport(vp.width, vp.height))
					u := ""
					if p.open != nil {
						p.open(t, tab)
					} else {
						u = p.url(t)
					}
					findings := audit(t, tab, u, lang, p.user != "")
					// Leave the page before it changes under the next navigation (a
					// running run's page reloads itself when the run ends).
					run(t, tab, chromedp.Navigate("about:blank"))
					if p.after != nil {
						p.after(t)
					}
					for _, f := range findings {
						t.Errorf("%s [%s, %s px] %s", p.name, lang, vp.name, f)
					}
				})
			}
		}
	}
}

// a11yBroken does not compile: the editor marks its third line.
const a11yBroken = "def run_tool(input_dir, output_dir):\n    x = 1\n    return {\"outputs\": [}\n"

// a11yBrokenVersion saves code with a syntax error as a new version in the editor (only
// the editor's form runs the syntax check) and returns the address of the page that asks
// before publishing it: the error beside the code, its line marked, and the question.
func (s *site) a11yBrokenVersion(t *testing.T, author *client.Client) string {
	t.Helper()
	if _, _, err := author.CreateTool(context.Background(), "a11y-broken", "Trasig", "Ett verktyg med fel.", greetingSource, false); err != nil {
		t.Fatal(err)
	}
	tab := s.as(t, "author")
	leaveAnyway(tab)
	var version string
	run(t, tab, chromedp.Navigate(s.base+"/editor/a11y-broken"), chromedp.WaitVisible("[data-code-editor]", chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`(() => {
			const cm = document.querySelector(".CodeMirror");
			if (cm) cm.CodeMirror.setValue(%q); else document.getElementById("source").value = %[1]q;
			document.querySelector("form[data-editor-form]").requestSubmit();
		})()`, a11yBroken), nil),
		chromedp.WaitVisible("#source-syntax", chromedp.ByQuery),
		chromedp.Evaluate(`new URL(location.href).searchParams.get("version") || ""`, &version))
	if version == "" {
		t.Fatalf("saving broken code left the editor at %s", location(t, tab))
	}
	return s.base + "/editor/a11y-broken?confirm=publish&version=" + url.QueryEscape(version)
}

// leaveAnyway answers yes when a page of tab asks before it is left: the Tab walk types
// into the editor's code box (Tab indents there, as it should), and the editor then
// rightly warns of unsaved code.
func leaveAnyway(tab context.Context) {
	chromedp.ListenTarget(tab, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok && d.Type == page.DialogTypeBeforeunload {
			go chromedp.Run(tab, page.HandleJavaScriptDialog(true))
		}
	})
}

// a11yFaulty breaks each rule of the check once; a11ySelfTest sees that each is found, so
// a check that silently stopped finding anything would fail.
const a11yFaulty = `<!doctype html><html lang="en"><head><style>
.low { color: #999; } a.plain:focus-visible { outline: none; } a.pale:focus-visible { outline: 3px solid #eee; }
.away { position: absolute; left: -9999px; }</style></head><body>
<header><nav><a href="#x">Home</a></nav></header>
<main id="main"><h1>One</h1><h1>Two</h1><h3>Skipped</h3>
<p class="low">Pale text</p>
<input id="nolabel"> <button></button> <a href="#y"></a> <img src="data:,">
<iframe src="about:blank"></iframe>
<a class="plain" href="#1">No ring</a> <a class="pale" href="#2">Pale ring</a> <a class="away" href="#3">Away</a>
<a href="#4" tabindex="2">Jumps ahead</a> <span id="dup">a</span><span id="dup">b</span>
<label for="nothing">Lost</label>
<textarea id="trap" aria-label="Trap"></textarea>
<pre style="width: 3000px">A line too wide for the window</pre>
<svg width="40" height="20"><text x="0" y="15" fill="#bbb">Pale</text></svg>
</main>
<script>document.getElementById("trap").addEventListener("keydown", e => { if (e.key === "Tab") e.preventDefault(); });</script>
</body></html>`

// a11yBackwards sends the focus back up the page from its last link.
const a11yBackwards = `<!doctype html><html lang="sv"><body><a class="skip" href="#main">Till innehållet</a>
<main id="main"><h1>Bakåt</h1><a id="first" href="#1">Först</a> <a id="mid" href="#2">Mitten</a> <a id="back" href="#3">Sist</a></main>
<script>document.getElementById("back").addEventListener("focus", () => document.getElementById("first").focus());</script>
</body></html>`

// a11yEndless adds a new button after each one that gets the focus, so Tab never comes
// back to the top.
const a11yEndless = `<!doctype html><html lang="sv"><body><a class="skip" href="#main">Till innehållet</a>
<main id="main"><h1>Utan slut</h1><button>Mer</button></main>
<script>document.addEventListener("focusin", e => { if (e.target.localName !== "button") return; const b = document.createElement("button"); b.textContent = "Mer"; e.target.after(b); });</script>
</body></html>`

func (s *site) a11ySelfTest(t *testing.T) {
	tab := s.anonymous(t)
	var findings []a11yFinding
	for _, page := range []string{a11yFaulty, a11yBackwards, a11yEndless} {
		findings = append(findings, audit(t, tab, "data:text/html;charset=utf-8,"+url.PathEscape(page), "sv", true)...)
	}
	found := map[string]bool{}
	for _, f := range findings {
		found[f.Rule] = true
	}
	for _, rule := range []string{"html-lang", "one-h1", "heading-order", "nav-name", "label", "button-name", "link-name", "img-alt",
		"frame-title", "contrast", "tabindex", "duplicate-id", "idref", "skip-link", "focus-visible", "focus-contrast", "focus-hidden",
		"focus-order", "focus-unreachable", "keyboard-trap", "keyboard-hint", "focus-walk", "scroll-x", "svg-name"} {
		if !found[rule] {
			t.Errorf("the check missed the page's %s fault; it found:\n%v", rule, findings)
		}
	}
	// SVG text is judged by its fill (a chart's labels).
	if !slices.ContainsFunc(findings, func(f a11yFinding) bool { return f.Rule == "contrast" && strings.Contains(f.Selector, "svg > text") }) {
		t.Errorf("the check missed the pale text of the drawing; it found:\n%v", findings)
	}
}

// anonymous returns a tab of a browser that is signed in to nothing.
func (s *site) anonymous(t *testing.T) context.Context {
	t.Helper()
	if b, ok := s.browsers[""]; ok {
		return s.tab(t, b)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(s.chrome), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	if err := chromedp.Run(bctx); err != nil {
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	s.cleanups = append(s.cleanups, func() { cancelBrowser(); cancelAlloc() })
	s.browsers[""] = bctx
	return s.tab(t, bctx)
}

// audit opens u in tab (or, if u is "", takes the page as it is) and returns what the page fails: the static rules of a11yScript,
// checked as the page loads and again with every <details> open, then the Tab walk.
func audit(t *testing.T, tab context.Context, u, lang string, signedIn bool) []a11yFinding {
	t.Helper()
	if u != "" {
		run(t, tab, chromedp.Navigate(u))
	}
	run(t, tab, chromedp.WaitReady("main", chromedp.ByQuery), chromedp.Sleep(400*time.Millisecond))
	var findings []a11yFinding
	call := fmt.Sprintf("(%s)(%q, %t)", a11yScript, lang, signedIn)
	var got []a11yFinding
	run(t, tab, chromedp.Evaluate(call+".static()", &got))
	findings = append(findings, got...)
	findings = append(findings, tabWalk(t, tab, call)...)
	// What a closed <details> holds is one click away: check it open too.
	run(t, tab, chromedp.Evaluate(`document.querySelectorAll("details:not([open])").forEach(d => d.open = true)`, nil),
		chromedp.Sleep(100*time.Millisecond), chromedp.Evaluate(call+".static()", &got))
	findings = append(findings, got...)
	return dedupe(findings)
}

// tabWalk presses Tab from the top of the page: the skip link must come first and move
// the focus to main; then every stop must be visible, show a focus indicator, and follow
// the one before it in DOM order; and every element the DOM order names must be reached.
func tabWalk(t *testing.T, tab context.Context, call string) []a11yFinding {
	t.Helper()
	var findings []a11yFinding
	var stop struct {
		Index    int           `json:"index"`
		Selector string        `json:"selector"`
		Body     bool          `json:"body"`
		Skip     bool          `json:"skip"`
		InMain   bool          `json:"inMain"`
		Frame    bool          `json:"frame"`
		Hint     string        `json:"hint"`
		Findings []a11yFinding `json:"findings"`
	}
	var expected []string
	press := func(key string) {
		run(t, tab, chromedp.KeyEvent(key), chromedp.Evaluate(call+".landed()", &stop))
	}

	// The skip link: first, and it leads into main.
	run(t, tab, chromedp.Evaluate(call+".prepare()", &expected))
	press(kb.Tab)
	if !stop.Skip {
		findings = append(findings, a11yFinding{"skip-link", stop.Selector, "the first Tab stop is not a skip link to main"})
	} else {
		press(kb.Enter)
		if !stop.InMain {
			press(kb.Tab)
			if !stop.InMain && !stop.Body {
				findings = append(findings, a11yFinding{"skip-link", stop.Selector, "after the skip link, Tab goes here, not into main"})
			}
		}
	}

	// The walk.
	run(t, tab, chromedp.Evaluate(call+".prepare()", &expected))
	visited := map[int]bool{}
	last, firstStop, prevSel, ended := -1, -1, "", false
	for range len(expected) + 40 {
		press(kb.Tab)
		if stop.Body {
			ended = true
			break
		}
		findings = append(findings, stop.Findings...)
		if stop.Selector == prevSel && !stop.Frame {
			// Focus stayed: a box that takes Tab (a code editor) must let Escape then
			// Tab leave it, and say so to whoever reaches it by keyboard.
			if !strings.Contains(strings.ToLower(stop.Hint), "esc") {
				findings = append(findings, a11yFinding{"keyboard-hint", stop.Selector, fmt.Sprintf("Tab stays in this box, and its description (aria-describedby) does not say how to leave it with Esc: %q", stop.Hint)})
			}
			press(kb.Escape)
			press(kb.Tab)
			if stop.Selector == prevSel {
				findings = append(findings, a11yFinding{"keyboard-trap", stop.Selector, "Tab, and Escape then Tab, leave the focus here"})
				ended = true
				break
			}
			if stop.Body {
				ended = true
				break
			}
			findings = append(findings, stop.Findings...)
		}
		if stop.Index >= 0 {
			if stop.Index == firstStop {
				ended = true
				break // round again, from the top
			}
			if stop.Index < last {
				findings = append(findings, a11yFinding{"focus-order", stop.Selector, fmt.Sprintf("Tab comes here after %s, which follows it in the page", expected[last])})
			}
			if visited[stop.Index] {
				ended = true
				break
			}
			if firstStop < 0 {
				firstStop = stop.Index
			}
			visited[stop.Index] = true
			last = max(last, stop.Index)
		}
		prevSel = stop.Selector
	}
	if !ended {
		findings = append(findings, a11yFinding{"focus-walk", stop.Selector, fmt.Sprintf("%d presses of Tab on a page of %d stops never came back to the top", len(expected)+40, len(expected))})
	}
	t.Logf("Tab visited %d of the %d stops the page has", len(visited), len(expected))
	for i, sel := range expected {
		if !visited[i] {
			findings = append(findings, a11yFinding{"focus-unreachable", sel, "Tab never reaches this control"})
		}
	}
	return findings
}

// dedupe drops repeated findings and names a fault that many elements share once, at the
// first of them.
func dedupe(fs []a11yFinding) []a11yFinding {
	type key struct{ rule, detail string }
	seen := map[a11yFinding]bool{}
	first := map[key]int{}
	more := map[key]int{}
	var out []a11yFinding
	for _, f := range fs {
		if seen[f] {
			continue
		}
		seen[f] = true
		k := key{f.Rule, f.Detail}
		if _, ok := first[k]; ok {
			more[k]++
			continue
		}
		first[k] = len(out)
		out = append(out, f)
	}
	for k, n := range more {
		out[first[k]].Selector += fmt.Sprintf(" (and %d more)", n)
	}
	return out
}

// a11yScript is called as (lang, signedIn) and returns the checks: static() lists the
// findings of the page as it stands; prepare() puts the Tab start at the top and lists
// the selectors of what Tab should visit, in order; landed() describes the focused
// element and the findings about it.
const a11yScript = `function (lang, signedIn) {
  const out = [];
  const add = (rule, el, detail) => out.push({rule, selector: el ? sel(el) : "document", detail: detail || ""});

  function sel(el) {
    const parts = [];
    for (let e = el; e && e.nodeType === 1 && e !== document.documentElement; e = e.parentElement) {
      if (e.id) { parts.unshift(e.localName + "#" + CSS.escape(e.id)); break; }
      let p = e.localName + [...e.classList].slice(0, 2).map(c => "." + CSS.escape(c)).join("");
      const parent = e.parentElement;
      if (parent) {
        const same = [...parent.children].filter(c => c.localName === e.localName);
        if (same.length > 1) p += ":nth-of-type(" + (same.indexOf(e) + 1) + ")";
      }
      parts.unshift(p);
      if (["main", "header", "footer", "body"].includes(e.localName)) break;
    }
    return parts.join(" > ");
  }
  const shown = el => el.checkVisibility({visibilityProperty: true});
  const sample = el => (el.textContent || el.value || "").trim().replace(/\s+/g, " ").slice(0, 40);

  // Names, as the accessible-name computation finds them for these elements.
  function textOf(n) {
    if (n.nodeType === 3) return n.data;
    if (n.nodeType !== 1 || n.getAttribute("aria-hidden") === "true" || n.hidden) return "";
    if (n.localName === "img") return n.getAttribute("alt") || "";
    if (n.getAttribute("aria-label")) return n.getAttribute("aria-label");
    const cs = getComputedStyle(n);
    if (cs.display === "none" || cs.visibility === "hidden") return "";
    return [...n.childNodes].map(textOf).join("");
  }
  const byIds = ids => ids.split(/\s+/).filter(Boolean).map(id => { const e = document.getElementById(id); return e ? e.textContent : ""; }).join(" ");
  function nameOf(el) {
    const lb = el.getAttribute("aria-labelledby");
    if (lb && byIds(lb).trim()) return byIds(lb).trim();
    const al = (el.getAttribute("aria-label") || "").trim();
    if (al) return al;
    const tag = el.localName, type = (el.getAttribute("type") || "").toLowerCase();
    if (tag === "input" && ["submit", "reset", "button"].includes(type)) return el.value || (type === "submit" || type === "reset" ? type : "");
    if (tag === "input" && type === "image") return el.alt || "";
    if (["input", "select", "textarea"].includes(tag)) return el.labels ? [...el.labels].map(textOf).join(" ").trim() : "";
    return (textOf(el).trim() || el.getAttribute("title") || "").trim();
  }

  // Colours.
  function parse(c) {
    const m = c.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(parseFloat);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  }
  const over = (top, under) => ({r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a), b: top.b * top.a + under.b * (1 - top.a), a: 1});
  function lum(c) {
    const f = v => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  }
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const hex = c => "#" + [c.r, c.g, c.b].map(v => Math.round(v).toString(16).padStart(2, "0")).join("");
  // background returns the colour behind el's text, or null where an image lies under it.
  function background(el) {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.backgroundImage !== "none") return null;
      const c = parse(cs.backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = {r: 255, g: 255, b: 255, a: 1};
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  }
  function opacity(el) {
    let o = 1;
    for (let e = el; e; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity);
    return o;
  }
  const disabled = el => !!el.closest(":disabled, [aria-disabled=true]");

  function contrast(el, color, what) {
    const bg = background(el);
    if (!bg || disabled(el)) return;
    const fg = parse(color);
    if (!fg) return;
    fg.a *= opacity(el);
    const shownFg = over(fg, bg);
    const cs = getComputedStyle(el), size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight) >= 700;
    const large = size >= 24 || (size >= 18.66 && bold);
    const need = large ? 3 : 4.5, r = ratio(shownFg, bg);
    if (r < need) add("contrast", el, what + " " + hex(shownFg) + " on " + hex(bg) + " is " + r.toFixed(2) + ":1, needs " + need + ":1 (" + size + "px" + (bold ? " bold" : "") + ")");
  }
  const onScreen = el => { const r = el.getBoundingClientRect(); return r.width > 1 && r.height > 1 && r.right > 0 && r.bottom > -window.scrollY; };

  // What Tab should stop at, in DOM order.
  function scroller(el) {
    const cs = getComputedStyle(el);
    const sx = /(auto|scroll)/.test(cs.overflowX) && el.scrollWidth > el.clientWidth;
    const sy = /(auto|scroll)/.test(cs.overflowY) && el.scrollHeight > el.clientHeight;
    return (sx || sy) && !el.querySelector("a[href], button, input, select, textarea, [tabindex]");
  }
  function tabbable(el) {
    if (el.closest("[inert]") || !shown(el)) return false;
    const ti = el.getAttribute("tabindex");
    if (ti !== null && parseInt(ti) < 0) return false;
    if (el.disabled) return false;
    const tag = el.localName;
    if (tag === "a") return el.hasAttribute("href") || ti !== null;
    if (tag === "input") {
      if (el.type === "hidden") return false;
      if (el.type === "radio" && el.name) {
        const group = [...(el.form || document).querySelectorAll("input[type=radio]")].filter(r => r.name === el.name && !r.disabled && shown(r));
        const checked = group.find(r => r.checked);
        return el === (checked || group[0]);
      }
      return true;
    }
    if (["button", "select", "textarea"].includes(tag)) return true;
    if (tag === "summary") return el.parentElement && el.parentElement.localName === "details" && el.parentElement.querySelector(":scope > summary") === el;
    if (el.isContentEditable && !el.parentElement.isContentEditable) return true;
    return ti !== null;
  }
  // Where a focused element shows its focus: itself, or the box of a code editor, or the
  // label of a control that is hidden behind it.
  function focusBox(el) {
    // A code editor types into a hidden box (clipped to nothing, but not zero-sized).
    const cm = el.closest(".CodeMirror, .cm-editor");
    if (cm) return onScreen(cm) ? cm : null;
    if (onScreen(el) && shown(el)) return el;
    if (el.labels) for (const l of el.labels) if (onScreen(l) && shown(l)) return l;
    return null;
  }
  const ring = el => { const cs = getComputedStyle(el); return {outline: cs.outlineStyle + " " + cs.outlineWidth + " " + cs.outlineColor, style: cs.outlineStyle, width: parseFloat(cs.outlineWidth), color: cs.outlineColor,
    shadow: cs.boxShadow, border: cs.borderColor + " " + cs.borderWidth, bg: cs.backgroundColor, fg: cs.color, deco: cs.textDecorationLine}; };

  return {
    static() {
      // Landmarks and the page's language.
      if (document.documentElement.lang !== lang) add("html-lang", document.documentElement, "lang is " + JSON.stringify(document.documentElement.lang) + ", the chosen language is " + lang);
      const mains = [...document.querySelectorAll("main, [role=main]")].filter(shown);
      if (mains.length !== 1) add("one-main", mains[1] || null, mains.length + " main landmarks");
      const h1s = [...document.querySelectorAll("h1, [role=heading][aria-level='1']")].filter(shown);
      if (h1s.length !== 1) add("one-h1", h1s[1] || mains[0] || null, h1s.length + " h1 headings: " + h1s.map(h => JSON.stringify(sample(h))).join(", "));
      const banners = [...document.querySelectorAll("header, [role=banner]")].filter(h => shown(h) && (h.getAttribute("role") === "banner" || !h.parentElement.closest("article, aside, main, nav, section")));
      if (banners.length !== 1) add("banner", banners[1] || null, banners.length + " banner landmarks (a header outside main)");
      const navs = [...document.querySelectorAll("nav, [role=navigation]")].filter(shown);
      if (signedIn && navs.length === 0) add("nav", null, "no navigation landmark");
      for (const n of navs) if (!nameOf(n) || (!n.getAttribute("aria-label") && !n.getAttribute("aria-labelledby"))) add("nav-name", n, "a navigation landmark without aria-label or aria-labelledby");
      let prev = 0;
      for (const h of document.querySelectorAll("h1, h2, h3, h4, h5, h6")) {
        if (!shown(h)) continue;
        const level = +h.localName[1];
        if (prev && level > prev + 1) add("heading-order", h, "h" + prev + " then h" + level + ": " + JSON.stringify(sample(h)));
        if (!textOf(h).trim()) add("heading-empty", h, "an empty heading");
        prev = level;
      }

      // A page that is wider than the window scrolls sideways: on a phone, every line
      // must then be panned to be read.
      const root = document.documentElement;
      if (root.scrollWidth > root.clientWidth) {
        // What sticks out: wider than the window, and not inside a box that scrolls or
        // clips it (a wide table in its own scrolling box is fine).
        // A box clips what it contains: an absolutely placed element only from its
        // positioned ancestors on (so it may escape a scrolling box that is not one).
        const clipped = e => {
          let pos = getComputedStyle(e).position;
          for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
            const cs = getComputedStyle(a);
            const holds = pos === "fixed" ? cs.transform !== "none" : pos === "absolute" ? cs.position !== "static" || cs.transform !== "none" : true;
            if (!holds) continue;
            if (cs.overflowX !== "visible") return true;
            pos = cs.position;
          }
          return false;
        };
        const wide = [...document.body.querySelectorAll("*")].filter(e => shown(e) && e.getBoundingClientRect().right > root.clientWidth + 1 && !clipped(e));
        add("scroll-x", wide.find(e => ![...e.children].some(c => wide.includes(c))) || null, "the page is " + root.scrollWidth + " px wide in a " + root.clientWidth + " px window: it scrolls sideways");
      }

      // Names.
      for (const el of document.querySelectorAll("input, select, textarea")) {
        const type = (el.getAttribute("type") || "").toLowerCase();
        if (type === "hidden" || !shown(el)) continue;
        if (["submit", "reset", "button", "image"].includes(type)) { if (!nameOf(el)) add("button-name", el, "a button without text"); continue; }
        if (!nameOf(el)) add("label", el, "a " + (type || el.localName) + " field without a label (label for, wrapping label, aria-label or aria-labelledby)");
      }
      for (const el of document.querySelectorAll("button, [role=button]")) if (shown(el) && !nameOf(el)) add("button-name", el, "a button without text");
      for (const el of document.querySelectorAll("a[href]")) if (shown(el) && !nameOf(el)) add("link-name", el, "a link without text");
      for (const el of document.querySelectorAll("img")) if (!el.hasAttribute("alt")) add("img-alt", el, "an image without alt");
      for (const el of document.querySelectorAll("iframe")) if (!(el.getAttribute("title") || "").trim()) add("frame-title", el, "a frame without a title");
      // A drawing (a chart) is an image: it needs role=img and a name, unless it is hidden
      // from assistive technology as decoration.
      for (const el of document.querySelectorAll("svg")) {
        if (el.parentElement.closest("svg") || el.closest("[aria-hidden=true]") || !shown(el)) continue;
        const title = el.querySelector(":scope > title");
        if (el.getAttribute("role") !== "img" || !(nameOf(el) || (title && title.textContent.trim()))) add("svg-name", el, "a drawing without role=img and a name (aria-label, aria-labelledby or <title>), nor aria-hidden");
      }
      for (const el of document.querySelectorAll("[tabindex]")) if (parseInt(el.getAttribute("tabindex")) > 0) add("tabindex", el, "a positive tabindex changes the Tab order");
      const ids = {};
      for (const el of document.querySelectorAll("[id]")) ids[el.id] = (ids[el.id] || 0) + 1;
      for (const [id, n] of Object.entries(ids)) if (n > 1) add("duplicate-id", document.getElementById(id), n + " elements have the id " + JSON.stringify(id));
      for (const el of document.querySelectorAll("label[for], [aria-labelledby], [aria-describedby], [aria-controls]")) {
        const refs = [el.getAttribute("for"), el.getAttribute("aria-labelledby"), el.getAttribute("aria-describedby"), el.getAttribute("aria-controls")].filter(Boolean).join(" ");
        for (const id of refs.split(/\s+/).filter(Boolean)) if (!document.getElementById(id)) add("idref", el, "refers to the id " + JSON.stringify(id) + ", which no element has");
      }

      // Contrast of every visible text, and of what is typed and its placeholder.
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      const done = new Set();
      for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        const el = n.parentElement;
        if (!n.data.trim() || done.has(el) || !el || ["script", "style", "noscript", "option", "title", "textarea"].includes(el.localName)) continue;
        done.add(el);
        if (!shown(el) || !onScreen(el)) continue;
        // SVG text is painted in its fill, not its colour.
        contrast(el, el instanceof SVGElement ? getComputedStyle(el).fill : getComputedStyle(el).color, "text");
      }
      for (const el of document.querySelectorAll("input, select, textarea")) {
        if (el.type === "hidden" || el.type === "file" || el.type === "checkbox" || el.type === "radio" || !shown(el) || !onScreen(el)) continue;
        if (el.value) contrast(el, getComputedStyle(el).color, "the value");
        if (el.placeholder && !el.value) contrast(el, getComputedStyle(el, "::placeholder").color, "the placeholder");
      }
      return out;
    },

    prepare() {
      // Put the Tab start at the top of the page, where a person starts; then note how
      // each element looks without focus.
      document.getElementById("__a11y_start")?.remove();
      const start = document.createElement("span");
      start.id = "__a11y_start";
      start.tabIndex = -1;
      document.body.prepend(start);
      start.focus();
      window.__a11y = {expected: [...document.querySelectorAll("*")].filter(tabbable), styles: new Map()};
      for (const el of document.querySelectorAll("*")) window.__a11y.styles.set(el, ring(el));
      return window.__a11y.expected.map(sel);
    },

    landed() {
      const el = document.activeElement;
      const main = document.querySelector("main");
      if (!el || el === document.body || el.id === "__a11y_start") return {index: -1, selector: "body", body: true, findings: []};
      const res = {index: window.__a11y.expected.indexOf(el), selector: sel(el), body: false, frame: el.localName === "iframe",
        skip: el.localName === "a" && main && (el.getAttribute("href") === "#" + main.id) && !!main.id,
        inMain: !!main && (main === el || main.contains(el)), hint: byIds(el.getAttribute("aria-describedby") || "").trim().replace(/\s+/g, " "), findings: []};
      const box = el.localName === "iframe" ? null : focusBox(el);
      if (el.localName === "iframe") return res;
      if (!box) { add("focus-hidden", el, "Tab stops on an element that cannot be seen"); res.findings = out; return res; }
      box.scrollIntoView({block: "nearest"});
      const before = window.__a11y.styles.get(box) || {}, now = ring(box);
      const outline = now.style !== "none" && now.width > 0 && now.outline !== before.outline;
      const shadow = now.shadow !== "none" && now.shadow !== before.shadow;
      const other = now.border !== before.border || now.bg !== before.bg || now.fg !== before.fg || now.deco !== before.deco;
      if (!outline && !shadow && !other) add("focus-visible", el, "no focus indicator: outline, box-shadow, border and colours are as without focus" + (box !== el ? " (on " + sel(box) + ", which shows its focus)" : "") + "; outline " + now.outline);
      // An indicator is seen against what lies around the element.
      const around = background(box.parentElement || box);
      let c = null;
      if (outline && now.style !== "auto") c = parse(now.color);
      else if (!outline && shadow) c = parse(now.shadow);
      if (c && around) {
        const r = ratio(over(c, around), around);
        if (r < 3) add("focus-contrast", el, "the focus indicator " + hex(over(c, around)) + " on " + hex(around) + " is " + r.toFixed(2) + ":1, needs 3:1");
      }
      res.findings = out;
      return res;
    },
  };
}`

// TestPalette checks the colour pairs static/style.css writes: a text colour on the
// background its rule sets, a text colour alone on the page's background, the palette's
// text colours (--fg, --muted, --accent) on every background a rule sets alone, and each
// focus outline against the page (3:1, as the state of a control must be seen).
func TestPalette(t *testing.T) {
	css, err := os.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	src := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(css), "")
	type rule struct {
		sel   string
		decls map[string]string
	}
	var rules []rule
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`([^{}]+)\{([^{}]*)\}`).FindAllStringSubmatch(src, -1) {
		r := rule{sel: strings.TrimSpace(m[1]), decls: map[string]string{}}
		for _, d := range strings.Split(m[2], ";") {
			k, v, ok := strings.Cut(d, ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "!important"))
			r.decls[k] = v
			if strings.HasPrefix(k, "--") {
				vars[k] = v
			}
		}
		rules = append(rules, r)
	}
	if len(vars) == 0 {
		t.Fatal("style.css defines no custom properties: the palette is gone or not parsed")
	}
	resolve := func(v string) string {
		for range 10 {
			m := regexp.MustCompile(`var\((--[\w-]+)\s*(?:,\s*([^)]+))?\)`).FindStringSubmatchIndex(v)
			if m == nil {
				break
			}
			name := v[m[2]:m[3]]
			val, ok := vars[name]
			if !ok && m[4] >= 0 {
				val = v[m[4]:m[5]]
			}
			v = v[:m[0]] + val + v[m[1]:]
		}
		return v
	}
	colorOf := func(v string) (rgb, bool) { return parseColor(resolve(v)) }
	page, ok := colorOf("var(--bg)")
	if !ok {
		page = rgb{255, 255, 255, 1}
	}
	var texts []string
	for _, name := range []string{"--fg", "--muted", "--accent"} {
		if _, ok := vars[name]; ok {
			texts = append(texts, name)
		}
	}
	exempt := func(sel string) bool { return strings.Contains(sel, "disabled") }
	var problems []string
	check := func(sel, fgName string, fg, bg rgb, need float64) {
		if r := contrastRatio(fg.over(bg), bg); r < need {
			problems = append(problems, fmt.Sprintf("%s: %s %s on %s is %.2f:1, needs %g:1", sel, fgName, fg.over(bg).hex(), bg.hex(), r, need))
		}
	}
	for _, r := range rules {
		if exempt(r.sel) {
			continue
		}
		bgDecl := r.decls["background-color"]
		if bgDecl == "" {
			bgDecl = r.decls["background"]
		}
		bg, hasBg := colorOf(bgDecl)
		if hasBg && bg.a < 1 {
			bg = bg.over(page)
		}
		if fg, ok := colorOf(r.decls["color"]); ok {
			if hasBg {
				check(r.sel, "color", fg, bg, 4.5)
			} else {
				check(r.sel, "color", fg, page, 4.5)
			}
		} else if hasBg && r.decls["color"] == "" {
			for _, name := range texts {
				fg, _ := colorOf("var(" + name + ")")
				check(r.sel, name, fg, bg, 4.5)
			}
		}
		for _, k := range []string{"outline", "outline-color"} {
			if !strings.Contains(r.sel, "focus") || r.decls[k] == "" {
				continue
			}
			for _, word := range strings.Fields(resolve(r.decls[k])) {
				if c, ok := parseColor(word); ok {
					check(r.sel, k, c, page, 3)
				}
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// rgb is a colour with its alpha.
type rgb struct{ r, g, b, a float64 }

func (c rgb) over(under rgb) rgb {
	return rgb{c.r*c.a + under.r*(1-c.a), c.g*c.a + under.g*(1-c.a), c.b*c.a + under.b*(1-c.a), 1}
}

func (c rgb) hex() string {
	return fmt.Sprintf("#%02x%02x%02x", int(math.Round(c.r)), int(math.Round(c.g)), int(math.Round(c.b)))
}

// parseColor reads the colours style.css writes: #rgb, #rrggbb, #rrggbbaa, rgb()/rgba(),
// and a few names. Anything else (none, inherit, a gradient) is no colour.
func parseColor(v string) (rgb, bool) {
	v = strings.ToLower(strings.TrimSpace(v))
	switch v {
	case "white":
		return rgb{255, 255, 255, 1}, true
	case "black":
		return rgb{0, 0, 0, 1}, true
	}
	if strings.HasPrefix(v, "#") && !strings.ContainsAny(v, " ") {
		h := v[1:]
		if len(h) == 3 || len(h) == 4 {
			var b strings.Builder
			for _, c := range h {
				b.WriteRune(c)
				b.WriteRune(c)
			}
			h = b.String()
		}
		if len(h) != 6 && len(h) != 8 {
			return rgb{}, false
		}
		n, err := strconv.ParseUint(h, 16, 32)
		if err != nil {
			return rgb{}, false
		}
		if len(h) == 6 {
			n = n<<8 | 0xff
		}
		return rgb{float64(n >> 24 & 0xff), float64(n >> 16 & 0xff), float64(n >> 8 & 0xff), float64(n&0xff) / 255}, true
	}
	if m := regexp.MustCompile(`^rgba?\(([^)]*)\)$`).FindStringSubmatch(v); m != nil {
		p := regexp.MustCompile(`[\s,/]+`).Split(strings.TrimSpace(m[1]), -1)
		if len(p) < 3 {
			return rgb{}, false
		}
		var f [4]float64
		f[3] = 1
		for i := 0; i < len(p) && i < 4; i++ {
			x, err := strconv.ParseFloat(strings.TrimSuffix(p[i], "%"), 64)
			if err != nil {
				return rgb{}, false
			}
			if strings.HasSuffix(p[i], "%") {
				x *= map[bool]float64{true: 2.55, false: 0.01}[i < 3]
			}
			f[i] = x
		}
		return rgb{f[0], f[1], f[2], f[3]}, true
	}
	return rgb{}, false
}

func contrastRatio(a, b rgb) float64 {
	lum := func(c rgb) float64 {
		f := func(v float64) float64 {
			v /= 255
			if v <= 0.04045 {
				return v / 12.92
			}
			return math.Pow((v+0.055)/1.055, 2.4)
		}
		return 0.2126*f(c.r) + 0.7152*f(c.g) + 0.0722*f(c.b)
	}
	x, y := lum(a), lum(b)
	return (math.Max(x, y) + 0.05) / (math.Min(x, y) + 0.05)
}
