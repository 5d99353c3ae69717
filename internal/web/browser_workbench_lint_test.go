package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/skrip-dev/skrip/internal/hints"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// lintState is what the lint test reads of the editor in one evaluation.
type lintState struct {
	Code, Status, Help, Hover, Hints string
	Errors, Warnings, Marks          int
	ErrorLines                       []int
}

const lintJS = `(() => {
	const w = document.querySelector(".CodeMirror"), cm = w && w.CodeMirror;
	if (!cm) return null;
	const lines = [];
	cm.eachLine((h) => { const g = h.gutterMarkers && h.gutterMarkers["CodeMirror-lint-markers"];
		if (g && g.className.includes("CodeMirror-lint-marker-error")) lines.push(cm.getLineNumber(h) + 1); });
	const txt = (sel) => { const e = document.querySelector(sel); return e && !e.hidden ? e.textContent.trim() : ""; };
	return {
		Code: cm.getValue(), Status: txt("[data-lint-status]"), Help: txt("[data-cursor-help]"), Hover: txt(".hover-help"),
		Hints: txt(".CodeMirror-hints"),
		Errors: document.querySelectorAll(".CodeMirror-gutter-wrapper .CodeMirror-lint-marker-error").length,
		Warnings: document.querySelectorAll(".CodeMirror-gutter-wrapper .CodeMirror-lint-marker-warning").length,
		Marks: document.querySelectorAll(".CodeMirror-lint-mark").length, ErrorLines: lines,
	};
})()`

func waitLint(t *testing.T, ctx context.Context, what string, ok func(lintState) bool) lintState {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var st *lintState
	for {
		st = nil
		if err := chromedp.Run(ctx, chromedp.Evaluate(lintJS, &st)); err == nil && st != nil && ok(*st) {
			return *st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the editor never showed it: %+v", what, st)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// enterKey presses Enter as a key only: chromedp's KeyEvent also sends the character,
// which CodeMirror would insert as a second line break beside its own.
func enterKey() chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		if err := input.DispatchKeyEvent(input.KeyRawDown).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13).Do(ctx); err != nil {
			return err
		}
		return input.DispatchKeyEvent(input.KeyUp).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13).Do(ctx)
	})
}

const lintSource = `from skriptoteket_toolkit import read_inputs


def run_tool(input_dir, output_dir):
    values = read_inputs()
    return str(values)
`

// TestBrowserWorkbenchLint is the editor's checks as you type, in Swedish: typing an
// undefined name marks its line in the gutter after a pause (pyflakes in the sandbox),
// and fixing it takes the mark away; an unused import is a warning; typing
// "skriptoteket_toolkit." offers read_inputs, and picking it writes it; hovering a
// toolkit function shows its help from the guide, and so does the cursor on it.
func TestBrowserWorkbenchLint(t *testing.T) {
	dir := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if dir == "" {
		testutil.Missing(t, "bwrap", "SKRIP_TEST_RUNNER_ROOTFS is empty", "bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
	}
	if _, err := os.Stat(filepath.Join(dir, hints.ModulesFile)); err != nil {
		testutil.Missing(t, "bwrap", dir+" predates the editor's linter", "rebuild it: bash scripts/runner-image.sh "+dir)
	}
	t.Setenv("SKRIP_BWRAP_ROOTFS", dir) // the server's runtime: the one with pyflakes
	s := startSite(t)
	defer s.close()
	author := s.userClient(t, "author")
	if _, _, err := author.CreateTool(context.Background(), "kontroll", "Kontroll", "", lintSource, false); err != nil {
		t.Fatal(err)
	}
	ctx := s.as(t, "author")
	s.useLang(t, ctx, "sv")
	var refused string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*cdplog.EventEntryAdded); ok && strings.Contains(e.Entry.Text, "Content Security Policy") {
			refused = e.Entry.Text
		}
	})
	// The tab in front, as the author's is: the completion list updates on animation
	// frames, which a hidden tab does not get.
	run(t, ctx, cdplog.Enable(), page.BringToFront(), chromedp.Navigate(s.base+"/editor/kontroll"), chromedp.WaitVisible(".CodeMirror", chromedp.ByQuery))

	// The saved code is clean: the check says so, and nothing is marked.
	st := waitLint(t, ctx, "the first check", func(st lintState) bool { return strings.Contains(st.Status, "inga anmärkningar") })
	if st.Errors+st.Warnings+st.Marks != 0 {
		t.Fatalf("clean code marked: %+v", st)
	}

	// Typing an undefined name: after a pause its line is marked as an error.
	run(t, ctx,
		chromedp.Evaluate(`(() => { const cm = document.querySelector(".CodeMirror").CodeMirror; cm.focus(); cm.setCursor({line: 4, ch: 26}); return true })()`, new(bool)),
		enterKey(), chromedp.KeyEvent("print(vaules)")) // Enter indents the new line
	st = waitLint(t, ctx, "the undefined name's mark", func(st lintState) bool { return st.Errors == 1 })
	if len(st.ErrorLines) != 1 || st.ErrorLines[0] != 6 || !strings.Contains(st.Status, "1 fel") || st.Marks != 1 ||
		!strings.Contains(st.Code, "    print(vaules)\n") {
		t.Fatalf("after typing an undefined name on line 6: %+v", st)
	}
	var tip string
	run(t, ctx, chromedp.Evaluate(`(() => { const m = document.querySelector(".CodeMirror-lint-mark-error"); return m ? m.textContent : "" })()`, &tip))
	if tip != "vaules" {
		t.Errorf("the marked text is %q; want the name, vaules", tip)
	}

	// Fixing it: the mark goes.
	run(t, ctx, chromedp.KeyEvent(kb.Backspace+kb.Backspace+kb.Backspace+kb.Backspace+kb.Backspace+kb.Backspace+kb.Backspace), chromedp.KeyEvent("values)"))
	st = waitLint(t, ctx, "the mark to go", func(st lintState) bool {
		return st.Errors == 0 && strings.Contains(st.Status, "inga anmärkningar") && strings.Contains(st.Code, "print(values)")
	})
	if st.Marks != 0 || st.Warnings != 0 {
		t.Fatalf("after the fix: %+v", st)
	}

	// An unused import is a warning, not an error.
	run(t, ctx,
		chromedp.Evaluate(`(() => { const cm = document.querySelector(".CodeMirror").CodeMirror; cm.focus(); cm.setCursor({line: 0, ch: 0}); return true })()`, new(bool)),
		chromedp.KeyEvent("import json"))
	// The modules are offered after import; Esc closes the list (once it has settled on
	// the word typed: a person types slower than a frame), Enter then breaks the line.
	waitLint(t, ctx, "the offered json", func(st lintState) bool { return st.Hints == "json" })
	time.Sleep(300 * time.Millisecond) // the list follows typing on animation frames
	run(t, ctx, chromedp.KeyEvent(kb.Escape))
	waitLint(t, ctx, "the list to close", func(st lintState) bool { return st.Hints == "" })
	run(t, ctx, enterKey())
	st = waitLint(t, ctx, "the unused import's warning", func(st lintState) bool { return st.Warnings == 1 })
	if st.Errors != 0 || !strings.Contains(st.Status, "0 fel, 1 varning(ar)") {
		t.Fatalf("after an unused import: %+v", st)
	}

	// Completion: "skriptoteket_toolkit." offers the toolkit's functions; picking
	// read_inputs writes it.
	run(t, ctx,
		chromedp.Evaluate(`(() => { const cm = document.querySelector(".CodeMirror").CodeMirror; cm.focus(); cm.setCursor({line: 6, ch: 99}); return true })()`, new(bool)),
		enterKey(), chromedp.KeyEvent("more = skriptoteket_toolkit."))
	st = waitLint(t, ctx, "the completions", func(st lintState) bool { return st.Hints != "" })
	for _, f := range []string{"read_inputs()", "read_settings()", "get_action_parts()"} {
		if !strings.Contains(st.Hints, f) {
			t.Errorf("the completions %q lack %s", st.Hints, f)
		}
	}
	run(t, ctx, chromedp.KeyEvent("read_i"))
	st = waitLint(t, ctx, "the narrowed completions", func(st lintState) bool { return st.Hints != "" && !strings.Contains(st.Hints, "read_settings") })
	if !strings.Contains(st.Hints, "read_inputs()") {
		t.Fatalf("after read_i the completions are %q", st.Hints)
	}
	run(t, ctx, enterKey())
	st = waitLint(t, ctx, "the picked completion", func(st lintState) bool { return st.Hints == "" })
	if !strings.Contains(st.Code, "    more = skriptoteket_toolkit.read_inputs\n") && !strings.HasSuffix(st.Code, "    more = skriptoteket_toolkit.read_inputs") {
		t.Fatalf("picking read_inputs wrote: %q", st.Code)
	}
	// The cursor on it: its help under the code.
	if !strings.Contains(st.Help, "skriptoteket_toolkit.read_inputs()") || !strings.Contains(st.Help, "form values") {
		t.Errorf("the help at the cursor: %q", st.Help)
	}
	// Modules after import.
	run(t, ctx, enterKey(), chromedp.KeyEvent("import pand"))
	st = waitLint(t, ctx, "the module completions", func(st lintState) bool { return st.Hints != "" })
	if !strings.Contains(st.Hints, "pandas") {
		t.Errorf("after `import pand` the completions are %q", st.Hints)
	}
	time.Sleep(300 * time.Millisecond)
	run(t, ctx, chromedp.KeyEvent(kb.Escape))
	waitLint(t, ctx, "the list to close and the check to end", func(st lintState) bool {
		return st.Hints == "" && strings.Contains(st.Status, "1 fel, 3 varning(ar)")
	})

	// Hover: the mouse over read_inputs (imported from skriptoteket_toolkit) shows its help.
	var at struct{ X, Y float64 }
	run(t, ctx, chromedp.Evaluate(`(() => { const cm = document.querySelector(".CodeMirror").CodeMirror;
		const line = cm.getValue().split("\n").findIndex((l) => l.includes("values = read_inputs()"));
		const ch = cm.getLine(line).indexOf("read_inputs") + 3;
		const c = cm.charCoords({line, ch}, "window"); return {X: c.left + 2, Y: (c.top + c.bottom) / 2}; })()`, &at))
	run(t, ctx, chromedp.MouseEvent(input.MouseMoved, at.X-30, at.Y+200),
		chromedp.MouseEvent(input.MouseMoved, at.X, at.Y))
	st = waitLint(t, ctx, "the hover help", func(st lintState) bool { return st.Hover != "" })
	if !strings.Contains(st.Hover, "skriptoteket_toolkit.read_inputs()") || !strings.Contains(st.Hover, "form values") {
		t.Fatalf("the hover help: %q", st.Hover)
	}
	shoot(t, ctx, "sv/editor-lint-1280")
	// Away from it, it goes.
	run(t, ctx, chromedp.MouseEvent(input.MouseMoved, 5, 5))
	waitLint(t, ctx, "the hover help to go", func(st lintState) bool { return st.Hover == "" })
	if refused != "" {
		t.Errorf("the page's CSP refused something: %s", refused)
	}
}
