package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// toolView is what TestBrowserTool reads from the tool page in one evaluation.
type toolView struct {
	Usage   string   `json:"usage"`
	Caps    string   `json:"caps"`
	Reuse   string   `json:"reuse"`   // data-reuse of the kept files' sentence
	Sayings string   `json:"sayings"` // that sentence
	Kept    []string `json:"kept"`
	Steps   []string `json:"steps"`
	Stamps  int      `json:"stamps"`
	H1      int      `json:"h1"`
	Scroll  int64    `json:"scroll"`
	Width   int64    `json:"width"`
	SvAttr  int      `json:"svAttr"`
}

const readTool = `(() => {
  const all = s => [...document.querySelectorAll(s)];
  const txt = s => { const e = document.querySelector(s); return e ? e.textContent.replace(/\s+/g, " ").trim() : ""; };
  const reuse = document.querySelector("[data-reuse]");
  return {
    usage: txt(".markdown.usage"), caps: txt("[data-caps]"),
    reuse: reuse ? reuse.dataset.reuse : "", sayings: txt("[data-reuse]"),
    kept: all("[data-session-files] ul.files li").map(e => e.textContent),
    steps: all("ul.runs li a").map(a => a.textContent),
    stamps: all("ul.runs li time.stamp[datetime]").length,
    h1: all("h1").length,
    scroll: document.documentElement.scrollWidth, width: window.innerWidth,
    svAttr: all("main [lang=sv]").length,
  };
})()`

// toolTexts are what the tool page says in one language.
var toolTexts = map[string]struct {
	caps, wrongType, serverWrong, tooBig, reused, confirm, step, reset string
}{
	"sv": {
		caps:        "Du kan ladda upp 1–20 filer av typen .html, .htm, .css, .png, .jpg, .jpeg, .gif, .svg, .webp, högst 200 kB per fil och 50 MB totalt.",
		wrongType:   "brev.docx är av en filtyp som verktyget inte tar emot. Välj filer av typen .html, .htm,",
		serverWrong: "brev.docx är av en filtyp som verktyget inte tar emot. Välj filer av typen .html, .htm,",
		tooBig:      "stor.html är större än gränsen 200 kB per fil. Välj en mindre fil.",
		reused:      "Kör du verktyget utan att välja nya filer, använder det de här 3 filerna igen.",
		confirm:     "Ta bort de 3 sparade filerna?",
		step:        "Steg: Börja om",
		reset:       "kör verktyget utan att välja nya filer för att använda dem igen",
	},
	"en": {
		caps:        "You can upload 1–20 files of type .html, .htm, .css, .png, .jpg, .jpeg, .gif, .svg, .webp, at most 200 kB per file and 50 MB in total.",
		wrongType:   "brev.docx is of a type the tool does not take. Choose files of type .html, .htm,",
		serverWrong: "brev.docx is of a type the tool does not take. Choose files of type .html, .htm,",
		tooBig:      "stor.html is larger than the limit of 200 kB per file. Choose a smaller file.",
		reused:      "If you run the tool without choosing new files, it uses these 3 files again.",
		confirm:     "Delete the 3 kept files?",
		step:        "Step: Börja om",
		reset:       "kör verktyget utan att välja nya filer för att använda dem igen",
	},
}

// TestBrowserTool, at 1280 and 390 px, in Swedish and English: the tool page of the demo
// tool HTML till PDF shows its usage and says in a sentence which files it takes; a file
// of another type is refused beside the slot by the page's script and, without it, by the
// server, in the page's language; after "Börja om" the page and the tool agree that the
// kept files are used again, and a run without new files gets them; the recent runs are
// named by their step's label with a local time; deleting the kept files asks first, and
// nothing is deleted when the answer is no.
func TestBrowserTool(t *testing.T) {
	s := startSite(t)
	defer s.close()
	docx := filepath.Join(t.TempDir(), "brev.docx")
	if err := os.WriteFile(docx, []byte("PK\x03\x04 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "stor.html")
	if err := os.WriteFile(big, []byte("<p>"+strings.Repeat("x", maxFileBytes)+"</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	const toolURL = "/tools/html-to-pdf-preview"
	const runButton = "form[data-upload] button[type=submit]"

	ctx := s.as(t, "teacher")
	// Dialogs: answered by accept (the confirmation of "Börja om", if the run page asks
	// one, and of deleting the files), their messages kept.
	var accept atomic.Bool
	accept.Store(true)
	var mu sync.Mutex
	var dialogs []string
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			mu.Lock()
			dialogs = append(dialogs, e.Message)
			mu.Unlock()
			yes := accept.Load()
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(yes))
		}
	})
	lastDialog := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(dialogs) == 0 {
			return ""
		}
		return dialogs[len(dialogs)-1]
	}
	read := func(t *testing.T) toolView {
		t.Helper()
		var v toolView
		run(t, ctx, chromedp.WaitVisible("[data-session-files]", chromedp.ByQuery), chromedp.Evaluate(readTool, &v))
		return v
	}

	for _, lang := range []string{"sv", "en"} {
		want := toolTexts[lang]
		for _, vp := range viewports {
			t.Run(lang+"/"+vp.name, func(t *testing.T) {
				s.useLang(t, ctx, lang)
				run(t, ctx, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+toolURL))

				// What to do: the usage instructions, and what the slot takes.
				v := read(t)
				if !strings.Contains(v.Usage, "Konvertera till PDF") || !strings.Contains(v.Usage, "index.html") {
					t.Errorf("the usage instructions read %q", v.Usage)
				}
				if !strings.HasPrefix(v.Caps, want.caps) {
					t.Errorf("the slot says %q; want %q", v.Caps, want.caps)
				}
				if v.H1 != 1 || v.Scroll > v.Width || v.SvAttr != 0 {
					t.Errorf("the page has %d h1, is %d px wide at %d, and %d elements marked lang=sv", v.H1, v.Scroll, v.Width, v.SvAttr)
				}

				// A file of another type: the script refuses it beside the slot.
				run(t, ctx,
					chromedp.SetUploadFiles("#files", []string{docx}, chromedp.ByQuery),
					chromedp.Click(runButton, chromedp.ByQuery),
					chromedp.WaitVisible("#files-error", chromedp.ByQuery),
				)
				if got := text(t, ctx, "#files-error"); !strings.Contains(got, want.wrongType) {
					t.Errorf("the script says beside the slot %q; want %q", got, want.wrongType)
				}
				// Sent without the script's check (a plain form post): the server refuses it,
				// beside the slot, in the page's language.
				run(t, ctx,
					chromedp.Evaluate(`(() => { const e = document.querySelector("#files-error"); e.hidden = true; e.textContent = "";
						HTMLFormElement.prototype.submit.call(document.querySelector("form[data-upload]")); })()`, nil),
					chromedp.WaitVisible("#files-error", chromedp.ByQuery),
				)
				waitPath(t, ctx, toolURL)
				if got := text(t, ctx, "#files-error"); !strings.Contains(got, want.serverWrong) {
					t.Errorf("the server says beside the slot %q; want %q", got, want.serverWrong)
				}
				// A file over the cap, sent the same way: the server's refusal in the page's
				// language too.
				run(t, ctx,
					chromedp.SetUploadFiles("#files", []string{big}, chromedp.ByQuery),
					chromedp.Evaluate(`(() => { const e = document.querySelector("#files-error"); e.hidden = true; e.textContent = "";
						HTMLFormElement.prototype.submit.call(document.querySelector("form[data-upload]")); })()`, nil),
					chromedp.WaitVisible("#files-error", chromedp.ByQuery),
				)
				if got := text(t, ctx, "#files-error"); got != want.tooBig {
					t.Errorf("the server says of a file over the cap %q; want %q", got, want.tooBig)
				}

				// A run, then "Börja om": the tool says the files stay and are used again...
				// (Each run page is loaded again once the run is over, so that no live
				// update of the page races the test's clicks.)
				first := s.runPreview(t, ctx)
				reset := "form[action$='/actions/reset'] button[type=submit]"
				run(t, ctx, chromedp.Navigate(first), chromedp.WaitVisible(reset, chromedp.ByQuery), chromedp.Click(reset, chromedp.ByQuery))
				after := waitPath(t, ctx, "/runs/", first)
				run(t, ctx, chromedp.WaitVisible(".notice", chromedp.ByQuery), chromedp.Navigate(after), chromedp.WaitVisible(".notice", chromedp.ByQuery))
				if got := text(t, ctx, "main"); !strings.Contains(got, want.reset) {
					t.Errorf("after Börja om the tool says:\n%s", got)
				}
				// ...and so does the tool page,
				run(t, ctx, chromedp.Navigate(s.base+toolURL))
				v = read(t)
				if v.Reuse != "reused" || !strings.HasPrefix(v.Sayings, want.reused) || len(v.Kept) != 3 {
					t.Errorf("after Börja om the page says of %q: %q (%s); want %q", v.Kept, v.Sayings, v.Reuse, want.reused)
				}
				// which names the steps by their labels, each with a local time.
				if len(v.Steps) == 0 || v.Steps[0] != want.step || v.Stamps != len(v.Steps) {
					t.Errorf("the recent runs are %q with %d times; want the newest %q", v.Steps, v.Stamps, want.step)
				}
				for _, st := range v.Steps {
					if strings.Contains(st, "reset") || strings.Contains(st, "convert") {
						t.Errorf("a recent run is named by its action id: %q", st)
					}
				}
				// A run without new files gets the kept ones, as the page said.
				run(t, ctx, chromedp.Click(runButton, chromedp.ByQuery))
				again := waitPath(t, ctx, "/runs/")
				run(t, ctx, chromedp.WaitVisible("iframe[sandbox]", chromedp.ByQuery), chromedp.Navigate(again), chromedp.WaitVisible("iframe[sandbox]", chromedp.ByQuery))
				if got := text(t, ctx, "main"); !strings.Contains(got, "index.html") || !strings.Contains(got, "style.css") || !strings.Contains(got, "logo.svg") {
					t.Errorf("a run without new files did not get the kept ones:\n%s", got)
				}

				// Deleting the kept files asks first; no keeps them, yes deletes them.
				run(t, ctx, chromedp.Navigate(s.base+toolURL), chromedp.WaitVisible("[data-session-files] form[data-confirm] button", chromedp.ByQuery))
				accept.Store(false)
				run(t, ctx, chromedp.Click("[data-session-files] form[data-confirm] button", chromedp.ByQuery))
				if got := lastDialog(); !strings.HasPrefix(got, want.confirm) {
					t.Errorf("deleting asks %q; want %q", got, want.confirm)
				}
				if v = read(t); len(v.Kept) != 3 {
					t.Errorf("after answering no, %d files are kept", len(v.Kept))
				}
				accept.Store(true)
				run(t, ctx, chromedp.Click("[data-session-files] form[data-confirm] button", chromedp.ByQuery),
					chromedp.WaitVisible(`[data-reuse="empty"]`, chromedp.ByQuery))
				if v = read(t); len(v.Kept) != 0 {
					t.Errorf("after answering yes, %q are kept", v.Kept)
				}
			})
		}
	}
}
