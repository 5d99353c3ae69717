package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// setCode puts src in the editor's code box: CodeMirror's, or the text box when the
// page has no CodeMirror.
func setCode(src string) chromedp.Action {
	b, _ := json.Marshal(src)
	var ok bool
	return chromedp.Evaluate(`(() => {
		const w = document.querySelector(".CodeMirror");
		if (w && w.CodeMirror) w.CodeMirror.setValue(`+string(b)+`);
		else document.querySelector("#source").value = `+string(b)+`;
		return true;
	})()`, &ok)
}

// editorState is what a test reads of the editor page in one evaluation.
type editorState struct {
	URL, Kind, Code, Active, Syntax, Confirm, Published, H1 string
	LineNumbers, ErrorLine, Badges, ScrollWidth             int
	Python, Wrap, Brackets                                  bool
}

// editorJS reads the editor page: null while it has no code box yet.
const editorJS = `(() => {
		const w = document.querySelector(".CodeMirror"), cm = w && w.CodeMirror;
		const box = document.querySelector("[data-code-editor]");
		if (!box) return null;
		const txt = (sel) => { const e = document.querySelector(sel); return e && !e.hidden ? e.textContent.trim() : ""; };
		let errLine = 0;
		if (cm) cm.eachLine((h) => { if (!errLine && (h.bgClass || "").includes("syntax-error-line")) errLine = cm.getLineNumber(h) + 1; });
		return {
			URL: location.href, Kind: box.dataset.codeEditor, Code: cm ? cm.getValue() : document.querySelector("#source").value,
			Active: document.activeElement ? (document.activeElement.id || document.activeElement.tagName) + (cm && cm.hasFocus() ? "@cm" : "") : "",
			Syntax: txt("#source-syntax"), Confirm: txt(".confirm"), Published: txt("[data-published]"), H1: txt("main h1"),
			LineNumbers: document.querySelectorAll(".CodeMirror-linenumber").length, ErrorLine: errLine,
			Badges: document.querySelectorAll(".versions .badge.warn").length, ScrollWidth: document.documentElement.scrollWidth,
			Python: !!cm && cm.getOption("mode") === "python" && !!document.querySelector(".cm-keyword"),
			Wrap: !!cm && cm.getOption("lineWrapping"), Brackets: !!cm && !!cm.getOption("matchBrackets"),
		};
	})()`

// evalEditor reads the editor page in one evaluation; false while the page is not one.
func evalEditor(ctx context.Context) (editorState, bool) {
	var st *editorState
	if err := chromedp.Run(ctx, chromedp.Evaluate(editorJS, &st)); err != nil || st == nil {
		return editorState{}, false
	}
	return *st, true
}

func readEditor(t *testing.T, ctx context.Context) editorState {
	t.Helper()
	run(t, ctx, chromedp.WaitReady("[data-code-editor]", chromedp.ByQuery))
	st, ok := evalEditor(ctx)
	if !ok {
		t.Fatal("the editor page could not be read")
	}
	return st
}

// waitEditor reads the editor until ok holds for what it shows, or fails.
func waitEditor(t *testing.T, ctx context.Context, what string, ok func(editorState) bool) editorState {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, read := evalEditor(ctx)
		if read && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the editor never showed it: %+v", what, st)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// dialogs answers every dialog a tab opens (beforeunload ones included) with accept,
// and counts them.
func dialogs(ctx context.Context, accept *atomic.Bool) *atomic.Int64 {
	var n atomic.Int64
	chromedp.ListenTarget(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			n.Add(1)
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(accept.Load()))
		}
	})
	return &n
}

const printSource = `def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "notice", "level": "info", "message": "MARK"}]}
`

// TestBrowserEditor is the author's editor at 1280 and 390 px, in Swedish: CodeMirror
// from the installed package with its keys, the text box when it cannot load, the syntax
// check and the confirmation before publishing, running what is in the code box now,
// the warning before leaving unsaved code, unpublishing and retitling a tool.
func TestBrowserEditor(t *testing.T) {
	s := startSite(t)
	defer s.close()
	author := s.userClient(t, "author")
	ctx := s.as(t, "author")
	s.useLang(t, ctx, "sv")
	bg := context.Background()

	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			slug := "ed-" + vp.name
			_, first, err := author.CreateTool(bg, slug, "Redigerad "+vp.name, "", printSource, true)
			if err != nil {
				t.Fatal(err)
			}
			ctx := s.tab(t, ctx)
			var accept atomic.Bool
			accept.Store(true)
			asked := dialogs(ctx, &accept)
			// CodeMirror sets styles from script (CSSOM), which style-src 'self' allows;
			// the browser reports anything the page's CSP refused in its log.
			var refused atomic.Value
			refused.Store("")
			chromedp.ListenTarget(ctx, func(ev any) {
				if e, ok := ev.(*cdplog.EventEntryAdded); ok && strings.Contains(e.Entry.Text, "Content Security Policy") {
					refused.Store(e.Entry.Text)
				}
			})
			run(t, ctx, cdplog.Enable(), chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/editor/"+slug))

			// CodeMirror, from /usr/share/javascript/codemirror through skrip.
			st := readEditor(t, ctx)
			if st.Kind != "codemirror" || st.LineNumbers == 0 || !st.Python || st.Wrap || !st.Brackets {
				t.Fatalf("the code box is not CodeMirror with Python, line numbers, brackets and no wrapping: %+v", st)
			}
			if st.ScrollWidth > int(vp.width) {
				t.Errorf("the editor is %d px wide at %d px: it scrolls sideways", st.ScrollWidth, vp.width)
			}
			if msg := refused.Load().(string); msg != "" {
				t.Errorf("the page's CSP refused something: %s", msg)
			}
			// Tab indents, Esc then Tab leaves forwards, Shift-Tab leaves backwards.
			run(t, ctx, chromedp.Evaluate(`(() => { const cm = document.querySelector(".CodeMirror").CodeMirror; cm.focus(); cm.setCursor({line: 1, ch: 0}); return true })()`, new(bool)),
				chromedp.KeyEvent(kb.Tab))
			if st = readEditor(t, ctx); !strings.Contains(st.Code, "\n        return") || !strings.HasSuffix(st.Active, "@cm") {
				t.Fatalf("Tab did not indent in the code box: %+v", st)
			}
			run(t, ctx, chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent(kb.Tab))
			if st = readEditor(t, ctx); strings.HasSuffix(st.Active, "@cm") || strings.Contains(st.Code, "\n            return") {
				t.Fatalf("Esc, Tab did not leave the code box: %+v", st)
			}
			run(t, ctx, chromedp.Evaluate(`document.querySelector(".CodeMirror").CodeMirror.focus()`, nil), chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(input.ModifierShift)))
			if st = readEditor(t, ctx); strings.HasSuffix(st.Active, "@cm") {
				t.Fatalf("Shift-Tab did not leave the code box: %+v", st)
			}

			// Leaving with unsaved code asks; declining keeps the page and the code.
			accept.Store(false)
			run(t, ctx, chromedp.Evaluate(`location.href = "/runs"; true`, new(bool)))
			deadline := time.Now().Add(10 * time.Second)
			for asked.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			if asked.Load() != 1 {
				t.Fatalf("leaving with unsaved code asked %d times, want once", asked.Load())
			}
			time.Sleep(300 * time.Millisecond)
			if st = readEditor(t, ctx); !strings.Contains(st.URL, "/editor/"+slug) || !strings.Contains(st.Code, "\n        return") {
				t.Fatalf("declining to leave lost the page or the code: %+v", st)
			}
			accept.Store(true)

			// A syntax error: saved all the same, named with its line beside the code,
			// the line marked, the version marked in the list.
			broken := "def run_tool(input_dir, output_dir):\n    x = 1\n    return {\"outputs\": [}\n"
			run(t, ctx, setCode(broken), chromedp.Click("form[data-editor-form] button[type=submit]:not([name])", chromedp.ByQuery))
			st = waitEditor(t, ctx, "the syntax error", func(st editorState) bool { return st.Syntax != "" })
			if !strings.HasPrefix(st.Syntax, "Rad 3:") || st.ErrorLine != 3 || st.Badges != 1 || st.Code != broken {
				t.Fatalf("after saving broken code: %+v", st)
			}
			brokenURL := st.URL
			// Publishing it asks first, on a page of its own (no script needed), and
			// publishes only when confirmed.
			run(t, ctx, chromedp.Click("form[action$='/publish'] button", chromedp.ByQuery))
			st = waitEditor(t, ctx, "the confirmation", func(st editorState) bool { return st.Confirm != "" })
			if !strings.Contains(st.Confirm, "Vill du publicera ändå?") || !strings.Contains(st.Confirm, "rad 3") {
				t.Fatalf("the confirmation: %+v", st)
			}
			if got, _ := author.ToolOf(bg, slug); got.PublishedVersionID == nil || *got.PublishedVersionID != first.ID {
				t.Fatalf("publishing broken code without confirming changed the published version: %+v", got)
			}
			run(t, ctx, chromedp.Click(".confirm button[type=submit]", chromedp.ByQuery))
			st = waitEditor(t, ctx, "published", func(st editorState) bool { return st.Published != "" && st.Confirm == "" })
			if got, _ := author.ToolOf(bg, slug); got.PublishedVersionID == nil || *got.PublishedVersionID == first.ID {
				t.Fatalf("confirming did not publish the broken version: %+v", got)
			}

			// Running changed code runs that code: it is saved as a new version first.
			fixed := strings.Replace(printSource, "MARK", "Körde koden i rutan "+vp.name, 1)
			run(t, ctx, setCode(fixed),
				chromedp.SetUploadFiles("#sandbox-files", []string{s.demo["index.html"]}, chromedp.ByQuery),
				chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery))
			st = waitEditor(t, ctx, "the sandbox run", func(st editorState) bool { return strings.Contains(st.URL, "&run=") })
			var result string
			run(t, ctx, chromedp.WaitVisible(".notice", chromedp.ByQuery), chromedp.Evaluate(`document.querySelector(".pane:last-child").innerText`, &result))
			if !strings.Contains(result, "Körde koden i rutan "+vp.name) || st.Code != fixed || st.URL == brokenURL || st.Syntax != "" {
				t.Fatalf("the sandbox did not run the code in the box: %+v\n%s", st, result)
			}
			var versions int
			run(t, ctx, chromedp.Evaluate(`document.querySelectorAll(".versions li").length`, &versions))
			if versions != 3 {
				t.Fatalf("versions after save and run: %d, want 3", versions)
			}
			if n := asked.Load(); n != 1 {
				t.Fatalf("saving or running asked before leaving the page (%d dialogs)", n)
			}

			// Unpublish, and retitle the tool.
			run(t, ctx, chromedp.Click("form[action$='/unpublish'] button", chromedp.ByQuery))
			waitEditor(t, ctx, "unpublished", func(st editorState) bool { return strings.Contains(st.URL, "unpublished=1") })
			if got, _ := author.ToolOf(bg, slug); got.PublishedVersionID != nil {
				t.Fatalf("unpublish left %v published", *got.PublishedVersionID)
			}
			run(t, ctx, chromedp.SetValue("#info-title", "Nytt namn "+vp.name, chromedp.ByQuery),
				chromedp.Click("form[action$='/info'] button[type=submit]", chromedp.ByQuery))
			waitEditor(t, ctx, "the new title", func(st editorState) bool { return st.H1 == "Nytt namn "+vp.name })
		})
	}

	// The author iterates: goes back to an earlier step of the sandbox session (a stale
	// click changes nothing), then lets a new version go on from the previous one's
	// session, and its next step runs the new code with the old state and files.
	for _, vp := range viewports {
		t.Run("steps "+vp.name, func(t *testing.T) {
			slug := "steg-" + vp.name
			if _, _, err := author.CreateTool(bg, slug, "Steg "+vp.name, "", greetingSource, false); err != nil {
				t.Fatal(err)
			}
			ctx := s.tab(t, ctx)
			run(t, ctx, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/editor/"+slug),
				chromedp.WaitReady("[data-code-editor]", chromedp.ByQuery),
				chromedp.SetUploadFiles("#sandbox-files", []string{s.demo["index.html"]}, chromedp.ByQuery),
				chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery))
			waitEditor(t, ctx, "step 1", func(st editorState) bool { return strings.Contains(st.URL, "&run=") })
			greet := func(name string) {
				t.Helper()
				before := location(t, ctx)
				run(t, ctx, chromedp.WaitEnabled("form[action$='/actions/greet'] button[type=submit]", chromedp.ByQuery),
					chromedp.SetValue("form[action$='/actions/greet'] input[name='in.name']", name, chromedp.ByQuery),
					chromedp.SetValue("form[action$='/actions/greet'] input[name='in.times']", "1", chromedp.ByQuery),
					chromedp.Click("form[action$='/actions/greet'] button[type=submit]", chromedp.ByQuery))
				waitPath(t, ctx, "/editor/"+slug+"?version=", before)
				run(t, ctx, chromedp.WaitVisible(".notice", chromedp.ByQuery))
			}
			greet("Ada")
			var sb struct {
				Steps         []string
				State, Notice string
				Enabled       bool
			}
			readSandbox := func() {
				t.Helper()
				run(t, ctx, chromedp.WaitReady("[data-code-editor]", chromedp.ByQuery), chromedp.Evaluate(`({
					Steps: [...document.querySelectorAll("[data-steps] li")].map((li) => li.innerText.replace(/\s+/g, " ").trim()),
					State: (document.querySelector("pre.json") || {}).textContent || "",
					Notice: [...document.querySelectorAll(".pane:last-child [role=status], .pane:last-child [role=alert]")].filter((e) => !e.hidden).map((e) => e.textContent.trim()).join(" | "),
					Enabled: !!document.querySelector("form[action$='/actions/greet'] button[type=submit]:not([disabled])"),
				})`, &sb))
			}
			readSandbox()
			if len(sb.Steps) != 2 || !strings.Contains(sb.Steps[0], "Steg 2") || !strings.Contains(sb.Steps[0], "”Greet”") ||
				!strings.Contains(sb.Steps[1], "första körningen") || !strings.Contains(sb.State, `"greeted": "Ada"`) {
				t.Fatalf("the session's steps after one action: %+v", sb)
			}
			// A stale page's "Gå tillbaka hit" (its revision is old) changes nothing.
			run(t, ctx, chromedp.Evaluate(`(() => { const f = document.querySelector("[data-step='1'] form"); f.querySelector("[name=expected_state_rev]").value = "1"; f.submit(); return true })()`, new(bool)))
			time.Sleep(500 * time.Millisecond)
			readSandbox()
			if !strings.Contains(sb.Notice, "ingenting ändrades") || !strings.Contains(sb.State, `"greeted": "Ada"`) || len(sb.Steps) != 2 {
				t.Fatalf("a stale go-back was not refused: %+v", sb)
			}
			// Going back to step 1: its state, and its next step on offer again.
			run(t, ctx, chromedp.Navigate(s.base+"/editor/"+slug), chromedp.WaitReady("[data-step='1'] form button", chromedp.ByQuery),
				chromedp.Click("[data-step='1'] form button", chromedp.ByQuery))
			waitPath(t, ctx, "/editor/"+slug+"?version=")
			waitEditor(t, ctx, "went back", func(st editorState) bool { return strings.Contains(st.URL, "back=1") })
			readSandbox()
			if strings.Contains(sb.State, "greeted") || !sb.Enabled || len(sb.Steps) != 3 || !strings.Contains(sb.Steps[0], "här är sessionen nu") {
				t.Fatalf("after going back to step 1: %+v", sb)
			}
			greet("Bo")
			readSandbox()
			if !strings.Contains(sb.State, `"greeted": "Bo"`) {
				t.Fatalf("the step after going back: %+v", sb)
			}

			// A new version goes on from this session and runs its next step.
			run(t, ctx, setCode(strings.Replace(greetingSource, `"Hej "`, `"Hallå "`, 1)),
				chromedp.Click("form[data-editor-form] button[type=submit]:not([name])", chromedp.ByQuery))
			run(t, ctx, chromedp.WaitVisible("form[data-continue] button", chromedp.ByQuery))
			readSandbox()
			if len(sb.Steps) != 0 || sb.State != "" {
				t.Fatalf("the new version has a session before continuing: %+v", sb)
			}
			run(t, ctx, chromedp.Click("form[data-continue] button", chromedp.ByQuery))
			waitEditor(t, ctx, "continued", func(st editorState) bool { return strings.Contains(st.URL, "continued=1") })
			readSandbox()
			if !strings.Contains(sb.State, `"greeted": "Bo"`) || !sb.Enabled {
				t.Fatalf("the continued session: %+v", sb)
			}
			var out string
			before := location(t, ctx)
			run(t, ctx, chromedp.SetValue("form[action$='/actions/greet'] input[name='in.name']", "Cy", chromedp.ByQuery),
				chromedp.SetValue("form[action$='/actions/greet'] input[name='in.times']", "1", chromedp.ByQuery),
				chromedp.Click("form[action$='/actions/greet'] button[type=submit]", chromedp.ByQuery))
			waitPath(t, ctx, "/editor/"+slug+"?version=", before)
			run(t, ctx, chromedp.WaitVisible(".notice", chromedp.ByQuery), chromedp.Evaluate(`document.querySelector(".notice").textContent`, &out))
			if !strings.Contains(out, "Hallå Cy!") || !strings.Contains(out, "index.html") {
				t.Fatalf("the new version's step did not run the new code with the kept files: %q", out)
			}
		})
	}

	// Without CodeMirror (here: its files blocked) the code box is the text box, with
	// Tab handling and a way out.
	for _, vp := range viewports {
		t.Run("no CodeMirror "+vp.name, func(t *testing.T) {
			slug := "plain-" + vp.name
			if _, _, err := author.CreateTool(bg, slug, "Utan CodeMirror", "", printSource, false); err != nil {
				t.Fatal(err)
			}
			ctx := s.tab(t, ctx)
			run(t, ctx, network.Enable(), network.SetBlockedURLs([]string{"*/static/vendor/codemirror/*"}),
				chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/editor/"+slug))
			st := readEditor(t, ctx)
			if st.Kind != "textarea" || st.LineNumbers != 0 {
				t.Fatalf("with CodeMirror blocked: %+v", st)
			}
			run(t, ctx, chromedp.Evaluate(`(() => { const s = document.querySelector("#source"); s.focus(); const at = s.value.indexOf("\n") + 1; s.setSelectionRange(at, at); return true })()`, new(bool)),
				chromedp.KeyEvent(kb.Tab))
			if st = readEditor(t, ctx); st.Active != "source" || !strings.Contains(st.Code, "\n        return") {
				t.Fatalf("Tab in the text box: %+v", st)
			}
			run(t, ctx, chromedp.KeyEvent(kb.Escape), chromedp.KeyEvent(kb.Tab))
			if st = readEditor(t, ctx); st.Active == "source" {
				t.Fatalf("Esc, Tab did not leave the text box: %+v", st)
			}
			if st.ScrollWidth > int(vp.width) {
				t.Errorf("the editor is %d px wide at %d px", st.ScrollWidth, vp.width)
			}
			// Broken code marks its line in the text box too: the line is selected.
			run(t, ctx, setCode("x = (\n"), chromedp.Click("form[data-editor-form] button[type=submit]:not([name])", chromedp.ByQuery))
			st = waitEditor(t, ctx, "the syntax error", func(st editorState) bool { return st.Syntax != "" })
			if !strings.HasPrefix(st.Syntax, "Rad 1:") {
				t.Fatalf("syntax error in the text box: %+v", st)
			}
		})
	}
}
