package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// workbench is what a test reads of the editor's sandbox and marks in one evaluation.
type workbench struct {
	URL, Code, Notice, State, Refusal, Syntax, Traceback string
	Steps, Versions, SyntaxLine, TracebackLine, Options  int
	Result                                               bool
}

const workbenchJS = `(() => {
	const cm = (document.querySelector(".CodeMirror") || {}).CodeMirror;
	if (!cm) return null;
	const vis = (sel) => [...document.querySelectorAll(sel)].filter((e) => !e.hidden && e.offsetParent !== null).map((e) => e.textContent.trim()).join(" | ");
	let syn = 0, tb = 0;
	cm.eachLine((h) => {
		if (!syn && (h.bgClass || "").includes("syntax-error-line")) syn = cm.getLineNumber(h) + 1;
		if (!tb && (h.bgClass || "").includes("traceback-line")) tb = cm.getLineNumber(h) + 1;
	});
	return {
		URL: location.href, Code: cm.getValue(),
		Notice: vis(".pane:last-child .notice"), State: (document.querySelector("pre.json") || {}).textContent || "",
		Refusal: vis(".pane:last-child [role=alert]"), Syntax: vis("#source-syntax"), Traceback: vis("[data-traceback-line]"),
		Steps: document.querySelectorAll("[data-steps] li").length, Versions: document.querySelectorAll(".versions li").length,
		SyntaxLine: syn, TracebackLine: tb, Options: document.querySelectorAll("[data-continue-rev] option").length,
		Result: !!document.querySelector(".pane:last-child [data-result]"),
	};
})()`

// waitWorkbench reads the editor until ok holds, or fails.
func waitWorkbench(t *testing.T, ctx context.Context, what string, ok func(workbench) bool) workbench {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last workbench
	for {
		var st *workbench
		if err := chromedp.Run(ctx, chromedp.Evaluate(workbenchJS, &st)); err == nil && st != nil {
			last = *st
			if ok(last) {
				return last
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the editor never showed it: %+v", what, last)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// workbenchShot writes the window of ctx to the -screenshots directory as sv/<name>.png, when
// the flag is given (docs/web-ui.md shows them).
func workbenchShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if *screenshotDir == "" {
		return
	}
	var shot []byte
	run(t, ctx, chromedp.Sleep(300*time.Millisecond), chromedp.CaptureScreenshot(&shot))
	dir := filepath.Join(*screenshotDir, "sv")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// versionOf is the version a page of the editor shows.
func versionOf(u string) string {
	_, after, _ := strings.Cut(u, "version=")
	v, _, _ := strings.Cut(after, "&")
	return v
}

// TestBrowserWorkbenchEdits is the author's workbench without lost edits (docs/web-ui.md
// "The editor"): an edit followed by a next step runs the new code; "Gå tillbaka hit"
// after an edit keeps it; code that does not compile does not run, and its line is
// marked; a traceback's line is marked; "Fortsätt från förra versionen" goes on from a
// chosen step; and the room to work at 1280 and 390 px. No form asks before leaving.
func TestBrowserWorkbenchEdits(t *testing.T) {
	s := startSite(t)
	defer s.close()
	author := s.userClient(t, "author")
	browser := s.as(t, "author")
	s.useLang(t, browser, "sv")
	bg := context.Background()

	open := func(t *testing.T, slug string, vp struct {
		name          string
		width, height int64
	}) (context.Context, *atomic.Int64) {
		t.Helper()
		ctx := s.tab(t, browser)
		var accept atomic.Bool
		accept.Store(true)
		asked := dialogs(ctx, &accept)
		run(t, ctx, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/editor/"+slug),
			chromedp.WaitReady(".CodeMirror", chromedp.ByQuery))
		return ctx, asked
	}
	runSandbox := func(t *testing.T, ctx context.Context) {
		t.Helper()
		run(t, ctx, chromedp.SetUploadFiles("#sandbox-files", []string{s.demo["index.html"]}, chromedp.ByQuery),
			chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery))
	}
	greet := func(t *testing.T, ctx context.Context, name string) {
		t.Helper()
		run(t, ctx, chromedp.WaitEnabled("form[action$='/actions/greet'] button[type=submit]", chromedp.ByQuery),
			chromedp.SetValue("form[action$='/actions/greet'] input[name='in.name']", name, chromedp.ByQuery),
			chromedp.SetValue("form[action$='/actions/greet'] input[name='in.times']", "1", chromedp.ByQuery),
			chromedp.Click("form[action$='/actions/greet'] button[type=submit]", chromedp.ByQuery))
	}
	vp1280 := viewports[0]

	t.Run("a next step and going back after an edit", func(t *testing.T) {
		slug := "wb-steg"
		if _, _, err := author.CreateTool(bg, slug, "Steg", "", greetingSource, false); err != nil {
			t.Fatal(err)
		}
		ctx, asked := open(t, slug, vp1280)
		runSandbox(t, ctx)
		first := waitWorkbench(t, ctx, "the first run", func(w workbench) bool { return strings.Contains(w.URL, "&run=") && w.Result })

		// The code changes, then the next step's button: the step runs the new code, on a
		// new version whose session went on from the step the page showed (its files too).
		edited := strings.Replace(greetingSource, `"Hej "`, `"Tjena "`, 1)
		run(t, ctx, setCode(edited))
		greet(t, ctx, "Ada")
		w := waitWorkbench(t, ctx, "the step on the new code", func(w workbench) bool { return strings.Contains(w.Notice, "Ada") })
		if !strings.Contains(w.Notice, "Tjena Ada!") || !strings.Contains(w.Notice, "index.html") || w.Code != edited ||
			versionOf(w.URL) == versionOf(first.URL) || w.Versions != 2 || !strings.Contains(w.State, `"greeted": "Ada"`) {
			t.Fatalf("the step after an edit did not run the new code on a new version: %+v", w)
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("the step asked before leaving the page (%d dialogs)", n)
		}

		// Another change, then "Gå tillbaka hit" to step 1: the change is a new version,
		// shown with its session back at that step.
		again := strings.Replace(greetingSource, `"Hej "`, `"Hallå "`, 1)
		run(t, ctx, setCode(again), chromedp.WaitReady("[data-step='1'] form button", chromedp.ByQuery),
			chromedp.Click("[data-step='1'] form button", chromedp.ByQuery))
		w = waitWorkbench(t, ctx, "back with the edit", func(w workbench) bool { return strings.Contains(w.URL, "back=1") })
		if w.Code != again || w.Versions != 3 || strings.Contains(w.State, "greeted") || !strings.Contains(w.State, "index.html") {
			t.Fatalf("going back after an edit lost the edit or the step: %+v", w)
		}
		greet(t, ctx, "Bo")
		w = waitWorkbench(t, ctx, "the step after going back", func(w workbench) bool { return strings.Contains(w.Notice, "Bo") })
		if !strings.Contains(w.Notice, "Hallå Bo!") {
			t.Fatalf("the step after going back did not run the kept edit: %+v", w)
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("going back asked before leaving the page (%d dialogs)", n)
		}
	})

	t.Run("code that does not compile does not run", func(t *testing.T) {
		slug := "wb-syntax"
		if _, _, err := author.CreateTool(bg, slug, "Syntax", "", greetingSource, false); err != nil {
			t.Fatal(err)
		}
		// A version saved through the API (whose save notes the error): the sandbox
		// refuses to run it and marks the line.
		broken := "import json\n\ndef run_tool(input_dir, output_dir:\n    return {}\n"
		bv, err := author.CreateVersion(bg, slug, broken)
		if err != nil {
			t.Fatal(err)
		}
		ctx, asked := open(t, slug, vp1280)
		runSandbox(t, ctx)
		w := waitWorkbench(t, ctx, "the refusal", func(w workbench) bool { return w.SyntaxLine != 0 && w.Refusal != "" })
		if w.SyntaxLine != 3 || !strings.Contains(w.Refusal, "kördes inte") || w.Result || !strings.HasPrefix(w.Syntax, "Rad 3:") {
			t.Fatalf("a version that does not compile: %+v", w)
		}
		if runs, _ := author.EditorSession(bg, bv.ID); runs.StateRev != 0 {
			t.Fatalf("the refused version has a session: %+v", runs)
		}

		// A next step after an edit that breaks the code: saved, not run, line marked.
		run(t, ctx, chromedp.Navigate(s.base+"/editor/"+slug+"?version="+bv.ID), chromedp.WaitReady(".CodeMirror", chromedp.ByQuery),
			setCode(greetingSource), chromedp.Click("form[data-editor-form] button[type=submit]:not([name])", chromedp.ByQuery))
		waitWorkbench(t, ctx, "the fixed version", func(w workbench) bool { return w.Versions == 3 && w.SyntaxLine == 0 })
		runSandbox(t, ctx)
		waitWorkbench(t, ctx, "its run", func(w workbench) bool { return strings.Contains(w.URL, "&run=") && w.Result })
		run(t, ctx, setCode(strings.Replace(greetingSource, "    act = action()\n", "    act = action(\n", 1)))
		greet(t, ctx, "Cy")
		w = waitWorkbench(t, ctx, "the refused step", func(w workbench) bool { return w.SyntaxLine != 0 && w.Versions == 4 })
		workbenchShot(t, ctx, "editor-syntax-1280")
		if w.SyntaxLine < 5 || !strings.Contains(w.Refusal, "kördes inte") || strings.Contains(w.Notice, "Cy") || strings.Contains(w.State, "Cy") {
			t.Fatalf("a step of code that does not compile: %+v", w)
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("the refused step asked before leaving the page (%d dialogs)", n)
		}
	})

	t.Run("a traceback's line is marked", func(t *testing.T) {
		slug := "wb-traceback"
		src := "def helper():\n    return 1 / 0\n\ndef run_tool(input_dir, output_dir):\n    return helper()\n"
		if _, _, err := author.CreateTool(bg, slug, "Traceback", "", src, false); err != nil {
			t.Fatal(err)
		}
		ctx, _ := open(t, slug, vp1280)
		runSandbox(t, ctx)
		w := waitWorkbench(t, ctx, "the failed run", func(w workbench) bool { return w.TracebackLine != 0 })
		if w.TracebackLine != 2 || !strings.Contains(w.Traceback, "rad 2") || w.SyntaxLine != 0 {
			t.Fatalf("the traceback's line: %+v", w)
		}
		workbenchShot(t, ctx, "editor-traceback-1280")
	})

	t.Run("continue from a chosen step", func(t *testing.T) {
		slug := "wb-fortsatt"
		if _, _, err := author.CreateTool(bg, slug, "Fortsätt", "", greetingSource, false); err != nil {
			t.Fatal(err)
		}
		ctx, asked := open(t, slug, vp1280)
		runSandbox(t, ctx)
		waitWorkbench(t, ctx, "step 1", func(w workbench) bool { return strings.Contains(w.URL, "&run=") && w.Result })
		greet(t, ctx, "Ada")
		waitWorkbench(t, ctx, "step 2", func(w workbench) bool { return strings.Contains(w.Notice, "Ada") })
		greet(t, ctx, "Bo")
		waitWorkbench(t, ctx, "step 3", func(w workbench) bool { return strings.Contains(w.Notice, "Bo") })
		run(t, ctx, setCode(strings.Replace(greetingSource, `"Hej "`, `"Hallå "`, 1)),
			chromedp.Click("form[data-editor-form] button[type=submit]:not([name])", chromedp.ByQuery))
		w := waitWorkbench(t, ctx, "the offer", func(w workbench) bool { return w.Options > 0 })
		var chosen string
		run(t, ctx, chromedp.Evaluate(`document.querySelector("[data-continue-rev]").selectedOptions[0].textContent`, &chosen))
		if w.Options != 3 || !strings.Contains(chosen, "Steg 3") || !strings.Contains(chosen, "här är sessionen nu") {
			t.Fatalf("the steps offered: %d, chosen %q", w.Options, chosen)
		}
		run(t, ctx, chromedp.SetValue("[data-continue-rev]", "2", chromedp.ByQuery), chromedp.Click("form[data-continue] button", chromedp.ByQuery))
		w = waitWorkbench(t, ctx, "continued", func(w workbench) bool { return strings.Contains(w.URL, "continued=1") })
		if !strings.Contains(w.State, `"greeted": "Ada"`) {
			t.Fatalf("the session did not go on from step 2: %+v", w)
		}
		greet(t, ctx, "Cy")
		w = waitWorkbench(t, ctx, "the next step", func(w workbench) bool { return strings.Contains(w.Notice, "Cy") })
		if !strings.Contains(w.Notice, "Hallå Cy!") {
			t.Fatalf("the step after continuing: %+v", w)
		}
		// Continuing after an edit saves the edit first and goes on in the new version.
		edited := strings.Replace(greetingSource, `"Hej "`, `"Morsning "`, 1)
		before := w.Versions
		run(t, ctx, chromedp.Navigate(s.base+"/editor/"+slug+"?version="+versionOf(w.URL)), chromedp.WaitReady(".CodeMirror", chromedp.ByQuery))
		w = waitWorkbench(t, ctx, "the page", func(w workbench) bool { return w.Options > 0 })
		run(t, ctx, setCode(edited), chromedp.SetValue("[data-continue-rev]", "1", chromedp.ByQuery), chromedp.Click("form[data-continue] button", chromedp.ByQuery))
		w = waitWorkbench(t, ctx, "continued after an edit", func(w workbench) bool { return strings.Contains(w.URL, "continued=1") && w.Versions == before+1 })
		if w.Code != edited || strings.Contains(w.State, "greeted") {
			t.Fatalf("continuing after an edit: %+v", w)
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("continuing asked before leaving the page (%d dialogs)", n)
		}
	})

	t.Run("the description and publishing after an edit", func(t *testing.T) {
		slug := "wb-info"
		if _, _, err := author.CreateTool(bg, slug, "Info", "", printSource, false); err != nil {
			t.Fatal(err)
		}
		ctx, asked := open(t, slug, vp1280)
		edited := strings.Replace(printSource, "MARK", "ny text", 1)
		run(t, ctx, setCode(edited), chromedp.SetValue("#info-title", "Nytt namn", chromedp.ByQuery),
			chromedp.Click("form[action$='/info'] button[type=submit]", chromedp.ByQuery))
		w := waitWorkbench(t, ctx, "the description saved", func(w workbench) bool { return strings.Contains(w.URL, "info=saved") })
		if w.Code != edited || w.Versions != 2 {
			t.Fatalf("saving the description after an edit lost the edit: %+v", w)
		}
		edited2 := strings.Replace(printSource, "MARK", "publicerad text", 1)
		run(t, ctx, setCode(edited2), chromedp.Click("form[action$='/publish'] button", chromedp.ByQuery))
		w = waitWorkbench(t, ctx, "published", func(w workbench) bool { return w.Versions == 3 && !strings.Contains(w.URL, "info=saved") })
		got, err := author.ToolOf(bg, slug)
		if err != nil || got.PublishedVersionID == nil || *got.PublishedVersionID != versionOf(w.URL) || w.Code != edited2 {
			t.Fatalf("publishing after an edit did not publish the edit: %+v %v; page %+v", got, err, w)
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("the forms asked before leaving the page (%d dialogs)", n)
		}
	})

	t.Run("a run that ends while the author types keeps the code", func(t *testing.T) {
		slug := "wb-medan"
		if _, _, err := author.CreateTool(bg, slug, "Medan", "", slowSource, false); err != nil {
			t.Fatal(err)
		}
		ctx, asked := open(t, slug, vp1280)
		runSandbox(t, ctx)
		run(t, ctx, chromedp.WaitVisible("[data-live]", chromedp.ByQuery))
		typed := strings.Replace(slowSource, "halfway there", "skrivet under körningen", 1)
		run(t, ctx, setCode(typed))
		var status string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			run(t, ctx, chromedp.Evaluate(`(document.querySelector("[data-result]") || {dataset: {}}).dataset.status || ""`, &status))
			if status == "succeeded" {
				break
			}
		}
		w := waitWorkbench(t, ctx, "the code", func(w workbench) bool { return true })
		if status != "succeeded" || w.Code != typed {
			t.Fatalf("the run ended (%s) and the code typed meanwhile is gone: %+v", status, w)
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("the run's end asked before leaving the page (%d dialogs)", n)
		}
	})

	t.Run("room to work", func(t *testing.T) {
		slug := "wb-rum"
		long := "def run_tool(input_dir, output_dir):\n    text = \"" + strings.Repeat("lång rad ", 40) + "SLUT\"\n    return {\"outputs\": [{\"kind\": \"notice\", \"level\": \"info\", \"message\": text}]}\n"
		if _, _, err := author.CreateTool(bg, slug, "Rum", "", long, false); err != nil {
			t.Fatal(err)
		}
		var m struct {
			Height, Window, Right, PaneRight, PageWidth, ScrollW, ClientW float64
			LinkTop, SandboxTop                                           float64
			LinkShown                                                     bool
		}
		measure := `(() => {
			const w = document.querySelector(".CodeMirror"), r = w.getBoundingClientRect(), pane = w.closest(".pane").getBoundingClientRect();
			const sc = w.querySelector(".CodeMirror-scroll"), link = document.querySelector("[data-to-sandbox]");
			return { Height: r.height, Window: innerHeight, Right: r.right, PaneRight: pane.right, PageWidth: document.documentElement.scrollWidth,
				ScrollW: sc.scrollWidth, ClientW: sc.clientWidth, LinkShown: !!link && link.offsetParent !== null,
				LinkTop: link ? link.getBoundingClientRect().top + scrollY : -1, SandboxTop: document.getElementById("sb-h").getBoundingClientRect().top };
		})()`
		ctx, _ := open(t, slug, vp1280)
		run(t, ctx, chromedp.Evaluate(measure, &m))
		if m.Height < 0.75*m.Window || m.Right > m.PaneRight+1 || m.PageWidth > 1280 || m.ScrollW <= m.ClientW || m.LinkShown {
			t.Fatalf("at 1280 px the code box is not the window's height, or a long line is cut: %+v", m)
		}
		ctx, _ = open(t, slug, viewports[1])
		run(t, ctx, chromedp.Evaluate(measure, &m))
		if !m.LinkShown || m.LinkTop > 300 || m.PageWidth > 390 {
			t.Fatalf("at 390 px there is no way to the sandbox at the top: %+v", m)
		}
		workbenchShot(t, ctx, "editor-phone-390")
		if m.SandboxTop < m.Window {
			t.Fatalf("at 390 px the sandbox is in view before the link is followed: %+v", m)
		}
		run(t, ctx, chromedp.Click("[data-to-sandbox]", chromedp.ByQuery), chromedp.Sleep(300*time.Millisecond), chromedp.Evaluate(measure, &m))
		if m.SandboxTop < -5 || m.SandboxTop > m.Window-100 {
			t.Fatalf("the link did not lead to the sandbox: %+v", m)
		}
	})
}
