package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/skrip-dev/skrip/internal/client"
	skriprun "github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// crashSource crashes with a traceback that names its input and files: words for the
// author, never the teacher.
const crashSource = `import json, os

def run_tool(input_dir, output_dir):
    inputs = json.loads(os.environ.get("SKRIPTOTEKET_INPUTS") or "{}")
    names = ",".join(sorted(os.listdir(input_dir)))
    raise ValueError("hemligt namn=%s filer=%s" % (inputs.get("namn"), names))
`

const crashSchema = `[{"name": "namn", "label": "Namn", "kind": "string"},
  {"name": "filer", "label": "Filer", "kind": "file", "min": 1, "max": 3}]`

// newsletterSource leaves a PDF and shows a text, a preview and a chart.
const newsletterSource = `import os

def run_tool(input_dir, output_dir):
    with open(os.path.join(output_dir, "Veckobrev.pdf"), "wb") as f:
        f.write(b"%PDF-1.4\n" + b"x" * 3000)
    return {"outputs": [
        {"kind": "markdown", "markdown": "Veckobrevet är klart."},
        {"kind": "html_sandboxed", "html": "<h1>Veckobrev</h1>" + "<p>rad</p>" * 80},
        {"kind": "vega_lite", "spec": {"title": "Närvaro <per> dag", "data": {"values": [
            {"dag": "mån", "elever": 24}, {"dag": "tis", "elever": 22}, {"dag": "ons", "elever": 25}]},
            "mark": "bar", "encoding": {"x": {"field": "dag", "type": "nominal"}, "y": {"field": "elever", "type": "quantitative"}}}},
    ]}
`

// stepsSource offers a primary step ("Fortsätt", which fails on the text "fel") and a
// secondary one that throws the session's work away ("Börja om").
const stepsSource = `from skrip_toolkit import action

def run_tool(input_dir, output_dir):
    act = action()
    step = 0 if act is None else act["state"]["step"]
    if act is not None and act["action_id"] == "fortsatt" and act["input"].get("text") == "fel":
        raise ValueError("fel i steget")
    if act is not None and act["action_id"] == "borja_om":
        step = -1
    step += 1
    return {"outputs": [{"kind": "markdown", "markdown": "Steg %d" % step}],
            "state": {"step": step},
            "next_actions": [
                {"action_id": "fortsatt", "label": "Fortsätt", "kind": "form", "fields": [{"name": "text", "label": "Text", "kind": "string"}]},
                {"action_id": "borja_om", "label": "Börja om", "kind": "form", "fields": []}]}
`

// longSource runs for a minute, unless cancelled.
const longSource = `import sys, time

def run_tool(input_dir, output_dir):
    print("började", flush=True)
    print("intern varning", file=sys.stderr, flush=True)
    time.sleep(60)
    return "klar"
`

// shortSource takes longer than a form waits, then succeeds.
// shortSource ends before the 5 s the run page once waited for a run: its page must
// show the run live at once all the same.
const shortSource = `import time

def run_tool(input_dir, output_dir):
    time.sleep(3)
    return {"outputs": [{"kind": "markdown", "markdown": "**Klart.**"}]}
`

const crashSentence = "Verktyget stötte på ett fel i sin kod och kunde inte göra klart. Det beror inte på dig."

// publish creates and publishes a tool as c, with an input schema when schema is set.
func publish(t *testing.T, c *client.Client, slug, title, source, schema string) {
	t.Helper()
	body := map[string]any{"slug": slug, "title": title, "source": source, "publish": true}
	if schema != "" {
		body["input_schema"] = json.RawMessage(schema)
	}
	if err := c.Do(context.Background(), http.MethodPost, "/api/v1/tools", body, nil); err != nil {
		t.Fatal(err)
	}
}

// evalJS evaluates expr in ctx into out, awaiting it when it is a promise.
func evalJS(t *testing.T, ctx context.Context, expr string, out any) {
	t.Helper()
	run(t, ctx, chromedp.Evaluate(expr, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
}

var runPage = regexp.MustCompile(`/runs/r_[0-9A-Za-z]+$`)

// waitRunPage waits until the tab shows a run's page other than the one at not.
func waitRunPage(t *testing.T, ctx context.Context, not string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		u := location(t, ctx)
		if runPage.MatchString(u) && u != not {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tab stayed at %s; expected another run's page", u)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runID is the id at the end of a run page's URL.
func runID(u string) string { return u[strings.LastIndex(u, "/")+1:] }

// TestBrowserRun is the run page at 1280 and 390 px, in Swedish (and English for its
// text): a crash in a plain sentence with the technical detail folded away and the
// traceback for admins only; downloads first as large buttons, the preview's "Visa i
// full storlek" (still sealed) and a drawn chart; the primary next step apart from the
// secondary one, which asks first with script and without; an old step's single way to
// the latest one, and a conflict that says what happened; "Försök igen" with the same
// files, inputs and step; progress with a spinner, ticking time, the status in the title
// and "Avbryt"; and the result put in place with the focus on it.
func TestBrowserRun(t *testing.T) {
	s := startSite(t)
	defer s.close()
	ctx := context.Background()
	if _, err := s.admin.CreateUser(ctx, "skolchef", "admin", password); err != nil {
		t.Fatal(err)
	}
	author := s.userClient(t, "author")
	until := time.Now().Add(10 * time.Second)
	publish(t, author, "krasch", "Krasch", waitingCrash(until), crashSchema)
	publish(t, author, "veckobrev", "Veckobrev", newsletterSource, "")
	publish(t, author, "steg", "Steg", stepsSource, "")
	publish(t, author, "langsam", "Långsam", longSource, "")
	publish(t, author, "kort", "Kort", shortSource, "")
	publish(t, author, "trasig-sandlada", "Trasig sandlåda", crashSource, "")

	teacherAPI := s.userClient(t, "teacher")
	dir := t.TempDir()
	var files []string
	for name, content := range map[string]string{"a.txt": "första", "b.txt": "andra filen"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	crash, err := teacherAPI.RunFiles(ctx, "krasch", files, map[string]any{"namn": "Ada"}, time.Minute)
	if err != nil || crash.Status != "failed" {
		t.Fatalf("the crashing tool's run: %+v, %v", crash, err)
	}
	// The same files and a run that skrip's side failed (its worker lost, as a cluster
	// node ends it): "Försök igen" is offered for it, not for the crash.
	lost := s.loseWorker(t, teacherAPI, "krasch", files, map[string]any{"namn": "Vänta"})
	letter, err := teacherAPI.RunFiles(ctx, "veckobrev", nil, nil, time.Minute)
	if err != nil || letter.Status != "succeeded" {
		t.Fatalf("the newsletter's run: %+v, %v", letter, err)
	}

	teacher := s.as(t, "teacher")
	s.useLang(t, teacher, "sv")
	admin := s.as(t, "skolchef")
	s.useLang(t, admin, "sv")
	s.useLang(t, s.as(t, "author"), "sv")

	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			teacher, admin := s.as(t, "teacher"), s.as(t, "skolchef")
			for _, c := range []context.Context{teacher, admin} {
				run(t, c, chromedp.EmulateViewport(vp.width, vp.height))
			}
			t.Run("a crash in plain words", func(t *testing.T) { s.checkCrash(t, teacher, admin, crash.RunID) })
			t.Run("downloads first, full size preview, chart", func(t *testing.T) { s.checkResultFirst(t, teacher, letter.RunID) })
			t.Run("try again with the same files and inputs", func(t *testing.T) {
				time.Sleep(time.Until(until)) // the same run again now crashes at once
				s.checkRetry(t, teacher, teacherAPI, lost)
			})
			t.Run("safe next steps", func(t *testing.T) { s.checkSteps(t, teacher, teacherAPI, vp.width, vp.height) })
			t.Run("progress and cancel", func(t *testing.T) { s.checkProgress(t, teacher, teacherAPI) })
			t.Run("the result in place, with the focus", func(t *testing.T) { s.checkFocus(t, teacher) })
			t.Run("try again in the editor's sandbox", func(t *testing.T) {
				a := s.as(t, "author")
				run(t, a, chromedp.EmulateViewport(vp.width, vp.height))
				s.checkSandboxRetry(t, a)
			})
		})
	}

	// Once the session's files were replaced, the lost run's files are gone: "Försök igen"
	// says so, with the way to the tool's form, and runs nothing.
	other := filepath.Join(dir, "c.txt")
	if err := os.WriteFile(other, []byte("tredje"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rn, err := teacherAPI.RunFiles(ctx, "krasch", []string{other}, map[string]any{"namn": "Bo"}, time.Minute); err != nil || rn.Status != "failed" {
		t.Fatalf("the run with other files: %+v, %v", rn, err)
	}
	for _, vp := range viewports {
		t.Run("files gone "+vp.name, func(t *testing.T) {
			tab := s.as(t, "teacher")
			before := countRuns(t, teacherAPI)
			run(t, tab, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/runs/"+lost.RunID),
				chromedp.WaitVisible("form[data-retry] button", chromedp.ByQuery), chromedp.Click("form[data-retry] button", chromedp.ByQuery),
				chromedp.WaitVisible("[data-submit-error]", chromedp.ByQuery))
			var href string
			run(t, tab, chromedp.AttributeValue("[data-submit-error] a.button", "href", &href, nil, chromedp.ByQuery))
			if got := text(t, tab, "[data-submit-error]"); !strings.Contains(got, "finns inte längre sparade") || href != "/tools/krasch" {
				t.Errorf("the retry with the files gone reads %q → %s", got, href)
			}
			if countRuns(t, teacherAPI) != before {
				t.Error("a retry without its files ran")
			}
		})
	}

	t.Run("English", func(t *testing.T) {
		en := s.as(t, "teacher")
		s.useLang(t, en, "en")
		defer s.useLang(t, en, "sv")
		run(t, en, chromedp.Navigate(s.base+"/runs/"+crash.RunID), chromedp.WaitVisible("[data-outcome]", chromedp.ByQuery))
		if got := text(t, en, "[data-outcome]"); got != "The tool ran into an error in its code and could not finish. It is not your doing." {
			t.Errorf("in English the crash reads %q", got)
		}
		if got := text(t, en, "details[data-technical] summary"); got != "Technical information" {
			t.Errorf("in English the details are %q", got)
		}
		run(t, en, chromedp.Navigate(s.base+"/runs/"+letter.RunID), chromedp.WaitVisible("a.download", chromedp.ByQuery))
		if got := text(t, en, "a.download"); got != "Download Veckobrev.pdf" {
			t.Errorf("in English the download reads %q", got)
		}
	})
}

// checkCrash: the teacher sees the sentence, the summary folded under "Teknisk
// information" and no traceback; the admin sees the traceback; headings go h1 → h2.
func (s *site) checkCrash(t *testing.T, teacher, admin context.Context, id string) {
	var v struct {
		Outcome, Summary, Retry string
		Open, SummaryShown      bool
		Stderr, Hidden          bool
		StderrShown             bool
		HTML                    string
		Heads                   []string
		Scroll, Width           int64
	}
	const read = `(() => {
	  const tech = document.querySelector("details[data-technical]");
	  const sum = document.querySelector("[data-summary]");
	  return {Outcome: (document.querySelector("[data-outcome]") || {}).textContent || "",
	    Summary: tech ? tech.querySelector("summary").textContent : "", Open: tech ? tech.open : true,
	    SummaryShown: !!sum && sum.checkVisibility(),
	    Stderr: !!document.querySelector("[data-stderr]"), Hidden: !!document.querySelector("[data-logs-hidden]"),
	    StderrShown: !!document.querySelector("[data-stderr]") && document.querySelector("[data-stderr]").checkVisibility(),
	    Retry: (document.querySelector("form[data-retry] button") || {}).textContent || "",
	    HTML: document.documentElement.outerHTML,
	    Heads: [...document.querySelectorAll("main h1, main h2, main h3, main h4")].map((h) => h.tagName),
	    Scroll: document.documentElement.scrollWidth, Width: window.innerWidth};
	})()`
	run(t, teacher, chromedp.Navigate(s.base+"/runs/"+id), chromedp.WaitVisible("[data-outcome]", chromedp.ByQuery))
	evalJS(t, teacher, read, &v)
	if v.Outcome != crashSentence {
		t.Errorf("the teacher reads %q; want %q", v.Outcome, crashSentence)
	}
	if v.Summary != "Teknisk information" || v.Open || v.SummaryShown {
		t.Errorf("the technical details: summary %q, open %v, error summary shown %v; want folded", v.Summary, v.Open, v.SummaryShown)
	}
	// The teacher ran it, so the logs are theirs (the contract shows them to the run's
	// owner), but folded away under the plain sentence.
	if !v.Stderr || v.StderrShown || v.Hidden {
		t.Errorf("the teacher's own logs: present %v, shown unfolded %v, hidden-note %v; want them folded under Teknisk information", v.Stderr, v.StderrShown, v.Hidden)
	}
	// Trying again repeats the crash: the page offers to change the input instead.
	var change string
	run(t, teacher, chromedp.Evaluate(`(document.querySelector("a[data-change]") || {}).textContent || ""`, &change))
	if v.Retry != "" || change != "Ändra och kör igen" {
		t.Errorf("the crash offers Försök igen %q and %q; want no retry, and Ändra och kör igen", v.Retry, change)
	}
	checkHeadings(t, v.Heads)
	if v.Scroll > v.Width {
		t.Errorf("the crash page is %d px wide at %d", v.Scroll, v.Width)
	}
	run(t, teacher, chromedp.Click("details[data-technical] summary", chromedp.ByQuery))
	if got := text(t, teacher, "[data-summary]"); got != "Verktyget stoppades av ett oväntat fel i sin kod. Felutskriften visar var." {
		t.Errorf("opened, the details show %q; want the reason in Swedish", got)
	}
	var stderr string
	run(t, teacher, chromedp.TextContent("[data-stderr]", &stderr, chromedp.ByQuery))
	if !strings.Contains(stderr, "Traceback") || !strings.Contains(stderr, "hemligt namn=Ada filer=a.txt,b.txt") {
		t.Errorf("opened, the teacher's details show stderr %q; want the traceback", stderr)
	}

	// An admin reads the summary, not what the tool printed from the teacher's files.
	run(t, admin, chromedp.Navigate(s.base+"/runs/"+id), chromedp.WaitReady("[data-logs-hidden]", chromedp.ByQuery))
	evalJS(t, admin, read, &v)
	if v.Stderr || strings.Contains(v.HTML, "Traceback") || strings.Contains(v.HTML, "hemligt") || v.Open || v.Retry != "" {
		t.Errorf("the admin's view of another's run: stderr %v, details open %v, retry %q; want the summary only, folded, and no retry (not their run)", v.Stderr, v.Open, v.Retry)
	}
	checkHeadings(t, v.Heads)
}

// checkHeadings: one h1, and no heading more than one level below the one before.
func checkHeadings(t *testing.T, heads []string) {
	t.Helper()
	if len(heads) == 0 || heads[0] != "H1" || slices.Index(heads[1:], "H1") >= 0 {
		t.Errorf("headings %v; want one h1, first", heads)
		return
	}
	for i := 1; i < len(heads); i++ {
		if heads[i][1]-heads[i-1][1] > 1 {
			t.Errorf("headings %v: %s follows %s", heads, heads[i], heads[i-1])
		}
	}
}

// checkResultFirst: the download is the first thing after the status, as a large
// button with its size; the preview opens full size, still sealed, and is tall; the
// chart is drawn.
func (s *site) checkResultFirst(t *testing.T, ctx context.Context, id string) {
	var v struct {
		Before         bool
		Text, Size     string
		ButtonH        float64
		Full, Target   string
		FrameH         float64
		Bars           int
		ChartW         float64
		Caption        string
		Scroll, Width  int64
		CSP, FullTitle string
	}
	run(t, ctx, chromedp.Navigate(s.base+"/runs/"+id), chromedp.WaitVisible("a.download", chromedp.ByQuery))
	evalJS(t, ctx, `(async () => {
	  const r = document.querySelector("[data-result]");
	  const dl = r.querySelector(".downloads-first"), first = r.querySelector(".markdown, .notice, figure, .table-wrap");
	  const a = dl.querySelector("a.button.download"), full = r.querySelector("a[data-full-size]");
	  const res = await fetch(full.href);
	  const svg = r.querySelector("figure[data-chart] svg.chart");
	  return {Before: !!first && !!(dl.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING),
	    Text: a.textContent, Size: a.nextElementSibling.textContent, ButtonH: a.getBoundingClientRect().height,
	    Full: full.getAttribute("href"), Target: full.target, FrameH: r.querySelector(".html-output iframe").getBoundingClientRect().height,
	    Bars: svg ? svg.querySelectorAll("rect").length : 0, ChartW: svg ? svg.getBoundingClientRect().width : 0,
	    Caption: (r.querySelector("figure[data-chart] figcaption") || {}).textContent || "",
	    Scroll: document.documentElement.scrollWidth, Width: window.innerWidth,
	    CSP: res.headers.get("content-security-policy") || "", FullTitle: full.textContent};
	})()`, &v)
	if !v.Before {
		t.Error("the downloads do not come before the outputs")
	}
	if v.Text != "Ladda ner Veckobrev.pdf" || !strings.Contains(v.Size, "kB") || v.ButtonH < 40 {
		t.Errorf("the download reads %q (size %q), %.0f px tall; want a large button with its size", v.Text, v.Size, v.ButtonH)
	}
	if v.Full != "/runs/"+id+"/outputs/1" || v.Target != "_blank" || !strings.HasPrefix(v.FullTitle, "Visa i full storlek") {
		t.Errorf("full size: %q → %q (target %q)", v.FullTitle, v.Full, v.Target)
	}
	if !strings.HasPrefix(v.CSP, "sandbox") {
		t.Errorf("the full-size preview is served with CSP %q; want a sandbox", v.CSP)
	}
	if v.FrameH < 400 {
		t.Errorf("the preview frame is %.0f px tall", v.FrameH)
	}
	if v.Bars != 3 || v.ChartW < 200 || !strings.Contains(v.Caption, "Närvaro <per> dag") {
		t.Errorf("the chart: %d bars, %.0f px wide, caption %q", v.Bars, v.ChartW, v.Caption)
	}
	if v.Scroll > v.Width {
		t.Errorf("the result page is %d px wide at %d", v.Scroll, v.Width)
	}
}

// checkRetry: "Försök igen", offered for a run skrip's side failed (a lost worker), runs
// the tool again with the run's files and inputs.
func (s *site) checkRetry(t *testing.T, ctx context.Context, api *client.Client, crash client.Run) {
	run(t, ctx, chromedp.Navigate(s.base+"/runs/"+crash.RunID), chromedp.WaitVisible("form[data-retry] button", chromedp.ByQuery),
		chromedp.Click("form[data-retry] button", chromedp.ByQuery))
	u := waitRunPage(t, ctx, s.base+"/runs/"+crash.RunID)
	again, err := api.GetRun(context.Background(), runID(u), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(again.InputManifest)
	want, _ := json.Marshal(crash.InputManifest)
	if again.RunID == crash.RunID || string(got) != string(want) || again.Inputs["namn"] != crash.Inputs["namn"] || again.Status != "failed" {
		t.Errorf("the retry %s: files %s, inputs %v, %s; want the files %s and namn %v", again.RunID, got, again.Inputs, again.Status, want, crash.Inputs["namn"])
	}
	run(t, ctx, chromedp.WaitVisible("[data-outcome]", chromedp.ByQuery))
	if got := text(t, ctx, "[data-outcome]"); got != crashSentence {
		t.Errorf("the retried run reads %q", got)
	}
}

var revField = regexp.MustCompile(`name="expected_state_rev" value="(\d+)"`)

// checkSteps: primary and secondary look and sit apart; the secondary asks first (a
// dialog with script, a page without, and the server asks whatever the page does); an
// old step shows one way to the latest; a conflict says what happened; a failed step is
// tried again with its input.
func (s *site) checkSteps(t *testing.T, ctx context.Context, api *client.Client, w, h int64) {
	const primary, secondary = "form[action$='/actions/fortsatt'] button[type=submit]", "form[action$='/actions/borja_om'] button[type=submit]"
	run(t, ctx, chromedp.Navigate(s.base+"/tools/steg"), chromedp.WaitVisible("form[data-upload] button[type=submit]", chromedp.ByQuery),
		chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery))
	first := waitPath(t, ctx, "/runs/")
	run(t, ctx, chromedp.WaitVisible(secondary, chromedp.ByQuery))
	// The focus is on the result's heading, and the first field of the next step is at
	// most 3 Tabs away.
	run(t, ctx, chromedp.Poll(`document.activeElement && document.activeElement.matches("[data-result-heading]")`, nil,
		chromedp.WithPollingTimeout(10*time.Second)))
	tabs := 0
	for ; tabs < 3; tabs++ {
		var onField bool
		run(t, ctx, chromedp.KeyEvent(kb.Tab), chromedp.Evaluate(`document.activeElement.matches("form[data-action] input:not([type=hidden]), form[data-action] select, form[data-action] textarea")`, &onField))
		if onField {
			break
		}
	}
	if tabs == 3 {
		t.Errorf("the first next-step field is more than 3 Tabs from the result's heading")
	}
	var look struct {
		PrimaryBG, SecondaryBG, SecondaryClass string
		Gap                                    float64
	}
	evalJS(t, ctx, `(() => {
	  const p = document.querySelector("`+primary+`"), q = document.querySelector("`+secondary+`");
	  return {PrimaryBG: getComputedStyle(p).backgroundColor, SecondaryBG: getComputedStyle(q).backgroundColor, SecondaryClass: q.className,
	    Gap: q.closest("form").getBoundingClientRect().top - p.closest("form").getBoundingClientRect().bottom};
	})()`, &look)
	if look.PrimaryBG != "rgb(11, 92, 173)" || look.SecondaryBG != "rgb(255, 255, 255)" || look.SecondaryClass != "secondary" || look.Gap < 24 {
		t.Errorf("primary %s, secondary %s (class %q), %.0f px apart; want the accent, white, at least 24 px", look.PrimaryBG, look.SecondaryBG, look.SecondaryClass, look.Gap)
	}

	// With script: a dialog; "no" changes nothing, "yes" takes the step.
	var accept atomic.Bool
	asked := dialogs(ctx, &accept)
	before := countRuns(t, api)
	run(t, ctx, chromedp.Click(secondary, chromedp.ByQuery), chromedp.Sleep(700*time.Millisecond))
	if asked.Load() != 1 || location(t, ctx) != first || countRuns(t, api) != before {
		t.Fatalf("declining: %d dialogs, at %s, runs %d → %d", asked.Load(), location(t, ctx), before, countRuns(t, api))
	}
	accept.Store(true)
	run(t, ctx, chromedp.Click(secondary, chromedp.ByQuery))
	restarted := waitRunPage(t, ctx, first)
	if asked.Load() != 2 {
		t.Errorf("%d dialogs; want a second one before the step", asked.Load())
	}

	// Without script: the server asks on a page of its own, and changes nothing yet. (The
	// page shows a step at once; without script it shows its forms once it ended.)
	if _, err := api.GetRun(context.Background(), runID(restarted), time.Minute); err != nil {
		t.Fatal(err)
	}
	noJS := s.tab(t, ctx)
	run(t, noJS, emulation.SetScriptExecutionDisabled(true), chromedp.EmulateViewport(w, h),
		chromedp.Navigate(restarted), chromedp.WaitVisible(secondary, chromedp.ByQuery))
	before = countRuns(t, api)
	run(t, noJS, chromedp.Click(secondary, chromedp.ByQuery), chromedp.WaitVisible("form[data-confirm-step]", chromedp.ByQuery))
	if got := text(t, noJS, "form[data-confirm-step] [role=alert]"); !strings.Contains(got, "Vill du verkligen ”Börja om”?") {
		t.Errorf("the confirmation reads %q", got)
	}
	if countRuns(t, api) != before {
		t.Error("an unconfirmed secondary step ran")
	}
	run(t, noJS, chromedp.Click("form[data-confirm-step] button[type=submit]", chromedp.ByQuery))
	latest := waitRunPage(t, noJS, restarted)
	if countRuns(t, api) != before+1 {
		t.Error("the confirmed step did not run once")
	}
	// And the server asks whatever the page sent: a post without confirmed=1 runs nothing.
	b := newBrowserless(t, s.base)
	csrf := b.signIn("teacher", password)
	_, _, page := b.do("GET", "/runs/"+runID(latest), nil, nil)
	rev := revField.FindStringSubmatch(page)
	if rev == nil {
		t.Fatalf("no revision on the latest step's page:\n%s", page)
	}
	status, _, page := b.do("POST", "/runs/"+runID(latest)+"/actions/borja_om", url.Values{"csrf": {csrf}, "expected_state_rev": {rev[1]}}, nil)
	if status != http.StatusOK || !strings.Contains(page, "data-confirm-step") || countRuns(t, api) != before+1 {
		t.Errorf("a post without confirmed=1 answered %d (confirmation asked: %v), runs %d", status, strings.Contains(page, "data-confirm-step"), countRuns(t, api))
	}

	// An old step: no forms, one button to the latest step.
	run(t, ctx, chromedp.Navigate(first), chromedp.WaitVisible("[data-stale]", chromedp.ByQuery))
	var stale struct {
		Forms, Buttons int
		Label, Href    string
		Main           string
	}
	evalJS(t, ctx, `(() => { const a = document.querySelectorAll("[data-result] a.button");
	  return {Forms: document.querySelectorAll("form[data-action]").length, Buttons: a.length, Label: a.length ? a[0].textContent : "",
	    Href: a.length ? a[0].getAttribute("href") : "", Main: document.querySelector("main").innerText}; })()`, &stale)
	if stale.Forms != 0 || stale.Buttons != 1 || stale.Label != "Gå till senaste steget" || stale.Href != "/runs/"+runID(latest) {
		t.Errorf("the old step shows %d forms and %d buttons (%q → %s); want none, and one to /runs/%s", stale.Forms, stale.Buttons, stale.Label, stale.Href, runID(latest))
	}
	for _, word := range []string{"Ladda om", "Reload", "Uppdatera"} {
		if strings.Contains(stale.Main, word) {
			t.Errorf("the old step advises %q", word)
		}
	}
	run(t, ctx, chromedp.Click("[data-stale] a.button", chromedp.ByQuery))
	if u := waitRunPage(t, ctx, first); u != latest {
		t.Errorf("the button went to %s; want %s", u, latest)
	}

	// A conflict: the other tab's step ran first; this one says so and links there.
	other := s.tab(t, ctx)
	run(t, other, chromedp.EmulateViewport(w, h), chromedp.Navigate(latest), chromedp.WaitEnabled(primary, chromedp.ByQuery))
	run(t, ctx, chromedp.WaitEnabled(primary, chromedp.ByQuery), chromedp.Click(primary, chromedp.ByQuery))
	moved := waitRunPage(t, ctx, latest)
	// The page shows the step at once; the other tab's step is refused once this one
	// has moved the session (before that, both would run and one lose the race).
	if _, err := api.GetRun(context.Background(), runID(moved), time.Minute); err != nil {
		t.Fatal(err)
	}
	run(t, other, chromedp.Click(primary, chromedp.ByQuery), chromedp.WaitVisible("[data-submit-error]", chromedp.ByQuery))
	var conflict struct{ Text, Href string }
	evalJS(t, other, `(() => { const e = document.querySelector("[data-submit-error]");
	  return {Text: e.innerText, Href: (e.querySelector("a.button") || {}).getAttribute?.("href") || ""}; })()`, &conflict)
	if !strings.Contains(conflict.Text, "sparades först") || !strings.Contains(conflict.Text, "Gå till senaste steget") ||
		conflict.Href != "/runs/"+runID(moved) || strings.Contains(conflict.Text, "Ladda om") {
		t.Errorf("the conflict reads %q → %s; want what happened and the way to /runs/%s", conflict.Text, conflict.Href, runID(moved))
	}

	// A failed step (a crash): no "Försök igen", which would repeat the crash, but
	// "Ändra och kör igen"; the retry route still takes the same step with the same
	// input (as "Försök igen" does after a failure of skrip's side).
	run(t, ctx, chromedp.WaitVisible("input[name='in.text']", chromedp.ByQuery),
		chromedp.SetValue("input[name='in.text']", "fel", chromedp.ByQuery), chromedp.Click(primary, chromedp.ByQuery))
	failed := waitRunPage(t, ctx, moved)
	var offersRetry bool
	run(t, ctx, chromedp.WaitVisible("a[data-change]", chromedp.ByQuery), chromedp.Evaluate(`!!document.querySelector("form[data-retry]")`, &offersRetry))
	if offersRetry {
		t.Error("a crashed step offers Försök igen")
	}
	postRetry(t, ctx)
	again := waitRunPage(t, ctx, failed)
	rn, err := api.GetRun(context.Background(), runID(again), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rn.Kind != "action" || rn.ActionID == nil || *rn.ActionID != "fortsatt" || rn.Inputs["text"] != "fel" || rn.Status != "failed" {
		t.Errorf("the retried step: %s %v with %v, %s; want fortsatt with text fel", rn.Kind, rn.ActionID, rn.Inputs, rn.Status)
	}
}

// checkProgress: a running run shows a spinner (still when motion is reduced), its
// time ticking, what it prints (not its error output, which is the author's) and its
// status in the title; "Avbryt" stops it.
func (s *site) checkProgress(t *testing.T, ctx context.Context, api *client.Client) {
	// A tab of its own: the dialogs of earlier checks are answered by their listeners.
	ctx = s.tab(t, ctx)
	run(t, ctx, chromedp.Navigate(s.base+"/tools/langsam"), chromedp.WaitVisible("form[data-upload] button[type=submit]", chromedp.ByQuery),
		chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery))
	u := waitPath(t, ctx, "/runs/")
	// The run is in the history (the list of recent runs) from the first moment, and
	// the tool among the home page's recently used ones.
	list := s.tab(t, ctx)
	run(t, list, chromedp.Navigate(s.base+"/runs"), chromedp.WaitVisible(`a[href="/runs/`+runID(u)+`"]`, chromedp.ByQuery),
		chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("[data-recent]", chromedp.ByQuery))
	if rn, err := api.GetRun(context.Background(), runID(u), 0); err != nil || store.Terminal(rn.Status) {
		t.Errorf("the run was over (%s, %v) before the history listed it", rn.Status, err)
	}
	if recent := text(t, list, "[data-recent]"); !strings.Contains(recent, "Långsam") {
		t.Errorf("the home page's recent tools read %q while Långsam runs", recent)
	}
	run(t, ctx, chromedp.WaitVisible("[data-live] .spinner", chromedp.ByQuery))
	elapsedRe := regexp.MustCompile(`^Har (kört|väntat på att starta) i (\d+) s$`)
	read := func() (int, string, string) {
		var v struct{ Elapsed, Title, Anim string }
		evalJS(t, ctx, `({Elapsed: document.querySelector("[data-elapsed]").textContent, Title: document.title,
		  Anim: getComputedStyle(document.querySelector(".spinner")).animationName})`, &v)
		m := elapsedRe.FindStringSubmatch(v.Elapsed)
		if m == nil {
			t.Fatalf("the elapsed time reads %q", v.Elapsed)
		}
		n, _ := strconv.Atoi(m[2])
		return n, v.Title, v.Anim
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(text(t, ctx, "[data-log]"), "började") {
		if time.Now().After(deadline) {
			t.Fatal("the live log never showed what the tool printed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	if log := text(t, ctx, "[data-log]"); strings.Contains(log, "intern varning") {
		t.Errorf("the teacher's live log shows the tool's error output: %q", log)
	}
	n1, _, anim := read()
	time.Sleep(2200 * time.Millisecond)
	n2, title, _ := read()
	if n2 < n1+2 || anim != "spin" {
		t.Errorf("the elapsed time went from %d to %d s in 2 s; the spinner's animation is %q", n1, n2, anim)
	}
	if title != "Körs – Långsam · skrip" {
		t.Errorf("while running the title is %q", title)
	}
	run(t, ctx, emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}))
	if _, _, still := read(); still != "none" {
		t.Errorf("with reduced motion the spinner's animation is %q", still)
	}
	run(t, ctx, emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{}))

	// Avbryt asks first, in the page's language; "no" leaves the run going.
	var accept atomic.Bool
	asked := make(chan string, 4)
	chromedp.ListenTarget(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok && d.Type == page.DialogTypeConfirm {
			select {
			case asked <- d.Message:
			default:
			}
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(accept.Load()))
		}
	})
	run(t, ctx, chromedp.Click("form[data-cancel] button", chromedp.ByQuery))
	select {
	case m := <-asked:
		if m != "Avbryta körningen?" {
			t.Errorf("Avbryt asks %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Avbryt did not ask first")
	}
	time.Sleep(500 * time.Millisecond)
	if rn, err := api.GetRun(context.Background(), runID(u), 0); err != nil || rn.Status != "running" {
		t.Fatalf("after answering no, the run is %s (%v)", rn.Status, err)
	}
	accept.Store(true)
	started := time.Now()
	run(t, ctx, chromedp.Click("form[data-cancel] button", chromedp.ByQuery),
		chromedp.WaitVisible("[data-result][data-status=cancelled]", chromedp.ByQuery))
	rn, err := api.GetRun(context.Background(), runID(u), 0)
	if err != nil || rn.Status != "cancelled" || time.Since(started) > 20*time.Second {
		t.Errorf("after Avbryt the run is %s (%v), %s later", rn.Status, err, time.Since(started))
	}
	if got := text(t, ctx, "[data-status-label]"); got != "Avbruten" {
		t.Errorf("the cancelled run's status reads %q", got)
	}
}

// checkFocus: when the run ends, its result replaces the progress without a reload,
// the focus moves to it, the title says so and a live region announces it.
func (s *site) checkFocus(t *testing.T, ctx context.Context) {
	run(t, ctx, chromedp.Navigate(s.base+"/tools/kort"), chromedp.WaitVisible("form[data-upload] button[type=submit]", chromedp.ByQuery),
		chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery))
	waitPath(t, ctx, "/runs/")
	run(t, ctx, chromedp.WaitVisible("[data-live]", chromedp.ByQuery), chromedp.Evaluate(`window.__stayed = true`, nil),
		chromedp.WaitVisible("[data-result][data-status=succeeded] .markdown", chromedp.ByQuery))
	var v struct {
		Stayed, Focused bool
		Title, Said     string
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		evalJS(t, ctx, `({Stayed: window.__stayed === true, Focused: document.activeElement.matches("[data-result][data-status=succeeded] [data-result-heading]"),
		  Title: document.title, Said: document.querySelector("[data-announce]").textContent})`, &v)
		if v.Focused || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !v.Stayed || !v.Focused || v.Title != "Klar – Kort · skrip" || v.Said != "Körningen är slut: Klar." {
		t.Errorf("after the run: page kept %v, focus on the result %v, title %q, announced %q", v.Stayed, v.Focused, v.Title, v.Said)
	}
}

// checkSandboxRetry: a crash in the editor's sandbox shows its author the traceback and
// "Ändra och kör igen", not "Försök igen"; the retry route runs it again there, the
// editor showing the new run.
func (s *site) checkSandboxRetry(t *testing.T, ctx context.Context) {
	run(t, ctx, chromedp.Navigate(s.base+"/editor/trasig-sandlada"), chromedp.WaitVisible("form[data-upload] button[type=submit]", chromedp.ByQuery),
		chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery), chromedp.WaitVisible("a[data-change]", chromedp.ByQuery),
		// A run the editor showed live reloads the page when it ends: read the page that
		// stays, not one on its way out.
		chromedp.Poll(`document.readyState === "complete" && !document.querySelector("[data-live]") && !!document.querySelector("a[data-change]")`, nil,
			chromedp.WithPollingTimeout(30*time.Second)),
		// The result is put in place first, then the page reloads: wait out the reload.
		chromedp.Sleep(1500*time.Millisecond),
		chromedp.Poll(`document.readyState === "complete" && !document.querySelector("[data-live]") && !!document.querySelector("a[data-change]")`, nil,
			chromedp.WithPollingTimeout(30*time.Second)))
	var offersRetry bool
	run(t, ctx, chromedp.Evaluate(`!!document.querySelector("form[data-retry]")`, &offersRetry))
	if offersRetry {
		t.Error("a crash in the sandbox offers Försök igen")
	}
	var first string
	run(t, ctx, chromedp.AttributeValue("[data-result]", "data-run", &first, nil, chromedp.ByQuery))
	var stderr string
	run(t, ctx, chromedp.TextContent("[data-stderr]", &stderr, chromedp.ByQuery))
	if !strings.Contains(stderr, "Traceback") || text(t, ctx, "[data-outcome]") != crashSentence {
		t.Errorf("the author's sandbox crash: %q, stderr %q", text(t, ctx, "[data-outcome]"), stderr)
	}
	postRetry(t, ctx, first)
	deadline := time.Now().Add(60 * time.Second)
	for {
		u := location(t, ctx)
		var shown string
		chromedp.Run(ctx, chromedp.AttributeValue("[data-result]", "data-run", &shown, nil, chromedp.ByQuery))
		if strings.Contains(u, "/editor/trasig-sandlada?version=") && strings.HasSuffix(u, "&run="+shown) && shown != first && shown != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Försök igen the tab is at %s showing run %q; want the editor with a new run", u, shown)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// postRetry posts the retry form of the run the tab shows (or of run id), as "Försök
// igen" does, with the page's anti-forgery token: the route of a run for which the page
// does not offer it.
func postRetry(t *testing.T, ctx context.Context, id ...string) {
	t.Helper()
	run(t, ctx, chromedp.Evaluate(`(() => {
	  const f = document.createElement("form");
	  f.method = "post";
	  f.action = "/runs/" + (`+strconv.Quote(strings.Join(id, ""))+` || document.querySelector("[data-result]").dataset.run) + "/retry";
	  const c = document.createElement("input");
	  c.type = "hidden"; c.name = "csrf"; c.value = document.querySelector("input[name=csrf]").value;
	  f.append(c);
	  document.body.append(f);
	  f.submit();
	  return true;
	})()`, nil))
}

// waitingCrash is crashSource that, given the namn "Vänta", first waits until the Unix
// time until: a run started before it is still running when the test ends it from
// outside, and the same run tried again later crashes at once.
func waitingCrash(until time.Time) string {
	return strings.Replace(crashSource, "    names = ", fmt.Sprintf("    if inputs.get(\"namn\") == \"Vänta\":\n        import time\n        time.sleep(max(0, %d - time.time()))\n    names = ", until.Unix()), 1)
}

// loseWorker starts a run of tool with files and inputs as api, and once it runs ends
// it as a cluster node ends a run whose workers were lost (store.EndRun with
// run.WorkerLost), on the site's own database: a failure of skrip's side.
func (s *site) loseWorker(t *testing.T, api *client.Client, tool string, files []string, inputs map[string]any) client.Run {
	t.Helper()
	rn, err := api.RunFiles(context.Background(), tool, files, inputs, 0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for rn.Status != "running" {
		if time.Now().After(deadline) || store.Terminal(rn.Status) {
			t.Fatalf("the %s run is %s; want it running", tool, rn.Status)
		}
		time.Sleep(100 * time.Millisecond)
		if rn, err = api.GetRun(context.Background(), rn.RunID, 0); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.Open(context.Background(), "", filepath.Join(s.dataDir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if ok, err := st.EndRun(context.Background(), rn.RunID, store.StatusFailed, "worker lost: the run was tried on 2 workers, and each stopped answering",
		skriprun.WorkerLost.String(), time.Now()); !ok || err != nil {
		t.Fatalf("ending the run as its worker lost: %v, %v", ok, err)
	}
	if rn, err = api.GetRun(context.Background(), rn.RunID, 0); err != nil || rn.Status != "failed" {
		t.Fatalf("the lost run: %+v, %v", rn, err)
	}
	return rn
}
