package web_test

import (
	"context"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// maintState is what the maintainer test reads of the editor: the lock notice (empty
// when hidden), the co-author list and notes, and the page's width.
type maintState struct {
	Lock, Taken, Added, Error, List string
	ScrollWidth                     int
}

const maintJS = `(() => {
	const txt = (sel) => { const e = document.querySelector(sel); return e && !e.hidden ? e.textContent.trim().replace(/\s+/g, " ") : ""; };
	return {Lock: txt("[data-editlock]"), Taken: txt("[data-editlock-taken]"), Added: txt("[data-maintainer-added]"),
		Error: txt("[data-maintainer-error]"), List: txt("ul.maintainers"), ScrollWidth: document.documentElement.scrollWidth};
})()`

func readMaint(t *testing.T, ctx context.Context) maintState {
	t.Helper()
	var st maintState
	run(t, ctx, chromedp.WaitReady("[data-maintainers]", chromedp.ByQuery), chromedp.Evaluate(maintJS, &st))
	return st
}

// TestBrowserWorkbenchMaintainers is issue 33's several authors per tool, in Swedish at
// 390 px: the author adds a co-author in the editor's "Medförfattare" section (a user
// who may not write tools is refused there); the co-author opens the editor and sees
// "Redigeras av author sedan HH:MM", edits and saves all the same, and takes the editing
// over; the author then sees the co-author's name.
func TestBrowserWorkbenchMaintainers(t *testing.T) {
	s := startSite(t)
	defer s.close()
	bg := context.Background()
	if _, err := s.admin.CreateUser(bg, "medforf", "author", password); err != nil {
		t.Fatal(err)
	}
	author := s.userClient(t, "author")
	if _, _, err := author.CreateTool(bg, "delad", "Delat verktyg", "", printSource, false); err != nil {
		t.Fatal(err)
	}
	actx := s.as(t, "author")
	s.useLang(t, actx, "sv")
	run(t, actx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.base+"/editor/delad"))
	st := readMaint(t, actx)
	if st.Lock != "" || !strings.Contains(st.List, "author · författare (du)") {
		t.Fatalf("the author's own editor: %+v", st)
	}
	// A user who may not write tools is refused, with the reason beside the form.
	run(t, actx, chromedp.SendKeys("#maintainer-user", "teacher", chromedp.ByQuery),
		chromedp.Click("[data-maintainers] form.stack button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("[data-maintainer-error]", chromedp.ByQuery))
	if st = readMaint(t, actx); !strings.Contains(st.Error, "författare eller högre") || strings.Contains(st.List, "teacher") {
		t.Fatalf("adding a user-role user: %+v", st)
	}
	run(t, actx, chromedp.SetValue("#maintainer-user", "medforf", chromedp.ByQuery),
		chromedp.Click("[data-maintainers] form.stack button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("[data-maintainer-added]", chromedp.ByQuery))
	if st = readMaint(t, actx); !strings.Contains(st.Added, "medforf är nu medförfattare") || !strings.Contains(st.List, "medforf") || st.ScrollWidth > 390 {
		t.Fatalf("after adding medforf: %+v", st)
	}

	// The co-author finds the draft among their tools and opens its editor.
	mctx := s.as(t, "medforf")
	s.useLang(t, mctx, "sv")
	var accept atomic.Bool
	accept.Store(true)
	dialogs(mctx, &accept)
	run(t, mctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.base+"/editor"), chromedp.WaitVisible("a[href='/editor/delad']", chromedp.ByQuery),
		chromedp.Navigate(s.base+"/editor/delad"))
	st = readMaint(t, mctx)
	if !regexp.MustCompile(`Redigeras av author sedan \d\d[:.]\d\d\.`).MatchString(st.Lock) || !strings.Contains(st.Lock, "Du kan ändå spara") || st.ScrollWidth > 390 {
		t.Fatalf("the co-author's notice: %+v", st)
	}
	shoot(t, mctx, "editor-maintainers-sv-390")
	// Saving is not blocked; the notice stays.
	edited := strings.Replace(printSource, "MARK", "MEDFORF", 1)
	run(t, mctx, setCode(edited), chromedp.Click("form[data-editor-form] button[type=submit]:not([name])", chromedp.ByQuery))
	ed := waitEditor(t, mctx, "the co-author's saved version", func(st editorState) bool {
		return strings.Contains(st.URL, "version=") && strings.Contains(st.Code, "MEDFORF")
	})
	if st = readMaint(t, mctx); !strings.Contains(st.Lock, "Redigeras av author") {
		t.Fatalf("after saving, the notice went: %+v (%s)", st, ed.URL)
	}
	// Taking over: the notice goes for the co-author and comes for the author.
	run(t, mctx, chromedp.Click("[data-editlock-take]", chromedp.ByQuery), chromedp.WaitVisible("[data-editlock-taken]", chromedp.ByQuery))
	if st = readMaint(t, mctx); st.Lock != "" || !strings.Contains(st.Taken, "Du redigerar nu verktyget") {
		t.Fatalf("after taking over: %+v", st)
	}
	run(t, actx, chromedp.Navigate(s.base+"/editor/delad"))
	if st = readMaint(t, actx); !strings.Contains(st.Lock, "Redigeras av medforf sedan") {
		t.Fatalf("the author after the take-over: %+v", st)
	}
	// The heartbeat editlock.js sends: the author's keeps nothing of medforf's fresh
	// lock and says who holds it; without the anti-forgery token it is refused.
	var beat struct {
		Mine bool
		Name string
	}
	run(t, actx, chromedp.Evaluate(`(async () => { const b = document.querySelector("[data-editlock]");
		const r = await fetch(b.dataset.url, {method: "POST", headers: {"X-CSRF-Token": b.dataset.csrf}}); return await r.json(); })()`,
		&beat, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if beat.Mine || beat.Name != "medforf" {
		t.Fatalf("the author's heartbeat: %+v", beat)
	}
	var status int
	run(t, actx, chromedp.Evaluate(`fetch("/editor/delad/lock", {method: "POST"}).then((r) => r.status)`, &status,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if status != 403 {
		t.Fatalf("a heartbeat without the anti-forgery token: %d, want 403", status)
	}
	// The author's saved version is the co-author's: it is the newest.
	if ed := readEditor(t, actx); !strings.Contains(ed.Code, "MEDFORF") {
		t.Fatalf("the author's editor does not show the co-author's version: %+v", ed)
	}
}
