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

// versionsJS reads the editor's versions list: each version's number, note, whether it
// compiles and its sandbox status, newest first.
const versionsJS = `[...document.querySelectorAll("[data-versions] .versions li")].map((li) => ({
	Number: +li.dataset.number, Note: (li.querySelector("[data-note]") || {}).textContent || "",
	Compiles: (li.querySelector("[data-compiles]") || {dataset: {}}).dataset.compiles || "",
	Sandbox: li.querySelector("[data-sandbox]").dataset.sandbox, Current: li.getAttribute("aria-current") === "true",
}))`

type versionRow struct {
	Number   int
	Note     string
	Compiles string
	Sandbox  string
	Current  bool
}

// diffJS reads the diff page: its heading, the source part's removed and added lines and
// their background colours, whether the schemas are unchanged, and the page's width.
const diffJS = `(() => {
	const src = document.querySelector("[data-part=source]");
	if (!src || !src.querySelector("table.diff")) return null;
	const texts = (sel) => [...src.querySelectorAll(sel)].map((e) => e.textContent);
	const bg = (sel) => { const e = src.querySelector(sel); return e ? getComputedStyle(e).backgroundColor : ""; };
	return {
		URL: location.href, H1: document.querySelector("main h1").textContent.trim(),
		Removed: texts("td.del del"), Added: texts("td.ins ins"), DelBG: bg("td.del"), InsBG: bg("td.ins"), PlainBG: bg("td.code:not(.del):not(.ins)"),
		InputUnchanged: !!document.querySelector("[data-part=input_schema] [data-unchanged]"),
		ScrollWidth: document.documentElement.scrollWidth,
	};
})()`

type diffPage struct {
	URL, H1               string
	Removed, Added        []string
	DelBG, InsBG, PlainBG string
	InputUnchanged        bool
	ScrollWidth           int
}

const helloSource = `def run_tool(input_dir, output_dir):
    name = "världen"
    return {"outputs": [{"kind": "notice", "level": "info", "message": "Hej " + name}]}
`

// TestBrowserEditorVersions is the editor's versions at 1280 and 390 px, in Swedish: a
// version saved with a note is listed with its number, note and syntax check; two
// versions are compared side by side, removed lines red and added ones green; an old
// version is restored as a new one, after the author confirms it.
func TestBrowserEditorVersions(t *testing.T) {
	s := startSite(t)
	defer s.close()
	author := s.userClient(t, "author")
	ctx := s.as(t, "author")
	s.useLang(t, ctx, "sv")
	bg := context.Background()

	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			slug := "versioner-" + vp.name
			if _, _, err := author.CreateTool(bg, slug, "Versioner "+vp.name, "", helloSource, false); err != nil {
				t.Fatal(err)
			}
			ctx := s.tab(t, ctx)
			var accept atomic.Bool
			accept.Store(true)
			asked := dialogs(ctx, &accept)
			run(t, ctx, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/editor/"+slug))
			readEditor(t, ctx)

			// Save a change with a note.
			changed := strings.Replace(helloSource, `"världen"`, `"alla elever"`, 1)
			run(t, ctx, setCode(changed), chromedp.SetValue("#version-note", "Hälsar på alla elever", chromedp.ByQuery),
				chromedp.Click("form[data-editor-form] button[type=submit]:not([name])", chromedp.ByQuery))
			var rows []versionRow
			waitFor(t, "the saved version in the list", func() bool {
				rows = nil
				return chromedp.Run(ctx, chromedp.Evaluate(versionsJS, &rows)) == nil && len(rows) == 2
			})
			if rows[0].Number != 2 || rows[0].Note != "Hälsar på alla elever" || rows[0].Compiles != "yes" || !rows[0].Current ||
				rows[1].Number != 1 || rows[1].Note != "" || rows[1].Compiles != "yes" || rows[1].Sandbox != "" {
				t.Fatalf("the versions list after saving with a note: %+v", rows)
			}
			shootPart(t, ctx, "[data-versions]", "versions-sv-"+vp.name)
			if st := readEditor(t, ctx); st.ScrollWidth > int(vp.width) {
				t.Errorf("the editor with its versions is %d px wide at %d px", st.ScrollWidth, vp.width)
			}

			// Compare: the list picks the shown version and the one before it.
			run(t, ctx, chromedp.Click("[data-compare]", chromedp.ByQuery))
			var d *diffPage
			waitFor(t, "the diff page", func() bool {
				d = nil
				return chromedp.Run(ctx, chromedp.Evaluate(diffJS, &d)) == nil && d != nil
			})
			if d.H1 != "Version 2 jämförd med version 1" || len(d.Removed) != 1 || len(d.Added) != 1 ||
				!strings.Contains(d.Removed[0], `name = "världen"`) || !strings.Contains(d.Added[0], `name = "alla elever"`) || !d.InputUnchanged {
				t.Fatalf("the diff page: %+v", d)
			}
			if d.DelBG == d.InsBG || d.DelBG == d.PlainBG || d.InsBG == d.PlainBG {
				t.Errorf("removed, added and unchanged lines are not coloured apart: %q %q %q", d.DelBG, d.InsBG, d.PlainBG)
			}
			if d.ScrollWidth > int(vp.width) {
				t.Errorf("the diff page is %d px wide at %d px: it scrolls sideways", d.ScrollWidth, vp.width)
			}

			shoot(t, ctx, "versions-diff-sv-"+vp.name)

			// Restore version 1 from the diff page: it asks first.
			var visible bool
			run(t, ctx, chromedp.Evaluate(`document.querySelector("[data-restore] button").checkVisibility()`, &visible))
			if visible {
				t.Fatal("the restore button shows before the author asked to restore")
			}
			run(t, ctx, chromedp.Click("details.restore summary", chromedp.ByQuery), chromedp.WaitVisible("[data-restore] button", chromedp.ByQuery),
				chromedp.Click("[data-restore] button", chromedp.ByQuery))
			st := waitEditor(t, ctx, "the restored version", func(st editorState) bool { return strings.Contains(st.URL, "restored=1") })
			if st.Code != helloSource {
				t.Fatalf("the restored version holds other code: %q", st.Code)
			}
			var restored string
			run(t, ctx, chromedp.Text("[data-restored]", &restored, chromedp.ByQuery), chromedp.Evaluate(versionsJS, &rows))
			if !strings.Contains(restored, "Version 1 är återställd") || len(rows) != 3 || rows[0].Number != 3 ||
				rows[0].Note != "Återställd från version 1" || !rows[0].Current {
				t.Fatalf("after restoring: %q %+v", restored, rows)
			}
			if n := asked.Load(); n != 0 {
				t.Errorf("saving, comparing or restoring asked before leaving the page (%d dialogs)", n)
			}
		})
	}
}

// shootPart writes the part of the page of ctx that sel picks to the screenshot
// directory, when one is given.
func shootPart(t *testing.T, ctx context.Context, sel, name string) {
	t.Helper()
	if *screenshotDir == "" {
		return
	}
	var shot []byte
	run(t, ctx, chromedp.ScrollIntoView(sel, chromedp.ByQuery), chromedp.Screenshot(sel, &shot, chromedp.ByQuery))
	if err := os.WriteFile(filepath.Join(*screenshotDir, name+".png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls ok until it holds, for up to a minute.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never came", what)
		}
		time.Sleep(150 * time.Millisecond)
	}
}
