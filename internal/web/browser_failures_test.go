package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/client"
	skriprun "github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// The failing tools of TestBrowserFailures. Each fails one way, on a server whose
// limits are small: 6 s of wall time, 200 MiB of memory, 1 MiB of output.
const (
	// sleepySource sleeps past the wall-time limit.
	sleepySource = "import time\n\ndef run_tool(input_dir, output_dir):\n    time.sleep(30)\n    return 'klar'\n"
	// hungrySource needs more memory than the limit.
	hungrySource = "def run_tool(input_dir, output_dir):\n    b = bytearray(600 * 1024 * 1024)\n    for i in range(0, len(b), 4096):\n        b[i] = 1\n    return 'klar'\n"
	// bigSource leaves an artifact over the output limit (sparse: its apparent size
	// counts) and a small one that is kept.
	bigSource = "import os\n\ndef run_tool(input_dir, output_dir):\n    with open(os.path.join(output_dir, 'stor.bin'), 'wb') as f:\n        f.truncate(5 * 1024 * 1024)\n    with open(os.path.join(output_dir, 'liten.txt'), 'w') as f:\n        f.write('hej')\n    return 'klar'\n"
	// refuseSource refuses the user's class list, naming its field (ToolUserError with
	// field=): the user's input's fault.
	refuseSource = "from skrip_toolkit import ToolUserError\n\ndef run_tool(input_dir, output_dir):\n    raise ToolUserError('Filen saknar kolumnen Namn.', field='klasslista')\n"
	// refuseSchema puts the file slot first, as Gruppgeneratorn's instructions do
	// ("1. Ladda upp en klasslista"): the form follows it.
	refuseSchema = `[{"name": "klasslista", "label": "Klasslista", "kind": "file", "min": 1, "max": 1},
  {"name": "storlek", "label": "Elever per grupp", "kind": "integer"}]`
)

// waitSource waits until the given Unix time, then succeeds: a run started before it is
// still running when the test ends it from outside, and the same run tried again later
// ends at once.
func waitSource(until time.Time) string {
	return fmt.Sprintf("import time\n\ndef run_tool(input_dir, output_dir):\n    time.sleep(max(0, %d - time.time()))\n    return {'outputs': [{'kind': 'markdown', 'markdown': 'Klart.'}]}\n", until.Unix())
}

// englishFromServer are words of the English sentences skrip's server writes about a
// failed run (error summaries, its notices): none may show on a Swedish page.
var englishFromServer = []string{"limit", "exceeded", "Execution", "timed out", "worker", "sandbox", "interrupted", "restart",
	"Artifacts", "Tool execution", "were not kept", "server log", "contract", "stopped answering"}

// TestBrowserFailures: each way a run fails, at 1280 and 390 px, in Swedish: whose it is
// and what helps, with "Försök igen" only where trying again can help. A crash names
// the author, offers "Rapportera till författaren" and "Ändra och kör igen"; the time
// and memory limits say what to change; a refusal of the user's input names the field;
// skrip's own failures (its restart, a lost worker) offer "Försök igen", which runs the
// same again. No page shows a sentence of the server's English.
func TestBrowserFailures(t *testing.T) {
	s := startSite(t, "--run-timeout", "6s", "--run-memory-bytes", fmt.Sprint(200<<20), "--run-output-bytes", fmt.Sprint(1<<20))
	defer s.close()
	ctx := context.Background()
	author := s.userClient(t, "author")
	publish(t, author, "krasch", "Krasch", crashSource, crashSchema)
	publish(t, author, "sov", "Sov", sleepySource, "")
	publish(t, author, "minne", "Minne", hungrySource, "")
	publish(t, author, "stor", "Stor", bigSource, "")
	publish(t, author, "klasslista", "Klasslista", refuseSource, refuseSchema)
	until := time.Now().Add(12 * time.Second)
	publish(t, author, "vanta", "Vänta", waitSource(until), "")

	teacherAPI := s.userClient(t, "teacher")
	csv := filepath.Join(t.TempDir(), "klass.csv")
	if err := os.WriteFile(csv, []byte("Förnamn\nAda\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := map[string]client.Run{}
	for _, c := range []struct {
		name, tool string
		files      []string
		inputs     map[string]any
		status     string
	}{
		{"crash", "krasch", []string{csv}, map[string]any{"namn": "Ada"}, "failed"},
		{"time", "sov", nil, nil, "timed_out"},
		{"memory", "minne", nil, nil, "failed"},
		{"output", "stor", nil, nil, "succeeded"},
		{"input", "klasslista", []string{csv}, nil, "failed"},
	} {
		rn, err := teacherAPI.RunFiles(ctx, c.tool, c.files, c.inputs, time.Minute)
		if err != nil || rn.Status != c.status {
			t.Fatalf("the %s run: %+v, %v; want %s", c.name, rn, err, c.status)
		}
		runs[c.name] = rn
	}

	// skrip's own failures, the way they happen: the server killed and started again
	// under a running run, and a run whose worker was lost, ended as a cluster node
	// ends it (store.EndRun with run.WorkerLost) on the site's database.
	restarted := s.startRunning(t, teacherAPI, "vanta")
	s.crashRestart(t)
	lost := s.startRunning(t, teacherAPI, "vanta")
	st, err := store.Open(ctx, "", filepath.Join(s.dataDir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.EndRun(ctx, lost.RunID, store.StatusFailed, "worker lost: the run was tried on 2 workers, and each stopped answering",
		skriprun.WorkerLost.String(), time.Now()); !ok || err != nil {
		t.Fatalf("ending the run as its worker lost: %v, %v", ok, err)
	}
	st.Close()
	for name, id := range map[string]string{"restart": restarted.RunID, "worker lost": lost.RunID} {
		rn, err := teacherAPI.GetRun(ctx, id, time.Minute)
		if err != nil || rn.Status != "failed" || rn.ErrorSource == nil || *rn.ErrorSource != "runner" {
			t.Fatalf("the %s run: %+v, %v; want failed by the runner", name, rn, err)
		}
		runs[name] = rn
	}

	type want struct {
		outcome string // words the sentence under the status holds
		why     string // words of the technical detail, in Swedish
		retry   bool   // "Försök igen" offered (and "Ändra och kör igen" not)
		author  bool   // names the author, offers the report
	}
	cases := []struct {
		name string
		want want
	}{
		{"crash", want{"fel i sin kod", "oväntat fel i sin kod", false, true}},
		{"time", want{"tog för lång tid", "Tidsgränsen på 6 sekunder", false, false}},
		{"memory", want{"mer minne", "Minnesgränsen på 200 MiB", false, false}},
		{"input", want{"i fältet ”Klasslista”", "", false, false}},
		{"restart", want{"fel hos tjänsten", "startades om", true, false}},
		{"worker lost", want{"fel hos tjänsten", "slutade svara", true, false}},
	}
	teacher := s.as(t, "teacher")
	s.useLang(t, teacher, "sv")
	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			tab := s.as(t, "teacher")
			run(t, tab, chromedp.EmulateViewport(vp.width, vp.height))
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					s.checkFailure(t, tab, runs[c.name], c.want.outcome, c.want.why, c.want.retry, c.want.author)
				})
			}
			t.Run("output too large", func(t *testing.T) { s.checkOutputLimit(t, tab, runs["output"]) })
			t.Run("the form follows the schema's order", func(t *testing.T) {
				var order []string
				run(t, tab, chromedp.Navigate(s.base+"/tools/klasslista"), chromedp.WaitVisible("form[data-upload] input[type=file]", chromedp.ByQuery),
					chromedp.Evaluate(`[...document.querySelectorAll("form[data-upload] input:not([type=hidden])")]
					  .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top).map((e) => e.type === "file" ? "file" : e.name)`, &order))
				if len(order) != 2 || order[0] != "file" {
					t.Errorf("the form's fields from the top: %q; want the file slot first, as the schema has it", order)
				}
			})
			t.Run("try again after a restart", func(t *testing.T) {
				time.Sleep(time.Until(until)) // the same run again now ends at once
				run(t, tab, chromedp.Navigate(s.base+"/runs/"+restarted.RunID), chromedp.WaitVisible("form[data-retry] button", chromedp.ByQuery),
					chromedp.Click("form[data-retry] button", chromedp.ByQuery))
				u := waitRunPage(t, tab, s.base+"/runs/"+restarted.RunID)
				again, err := teacherAPI.GetRun(ctx, runID(u), time.Minute)
				if err != nil || again.Status != "succeeded" || again.ToolID != restarted.ToolID {
					t.Errorf("the retry after the restart: %+v, %v; want the tool run again, succeeded", again, err)
				}
				run(t, tab, chromedp.WaitVisible("[data-result-heading]", chromedp.ByQuery))
			})
		})
	}
}

// startRunning starts a run of tool as api and waits until it runs.
func (s *site) startRunning(t *testing.T, api *client.Client, tool string) client.Run {
	t.Helper()
	rn, err := api.RunFiles(context.Background(), tool, nil, nil, 0)
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
	return rn
}

// checkFailure reads failed run rn's page as its owner: the sentence holds outcome;
// the technical detail, opened, holds why (when set) and never the server's English
// summary; "Försök igen" is offered when retry, "Ändra och kör igen" otherwise; the
// author is named and the report offered when author; and the page fits its width.
func (s *site) checkFailure(t *testing.T, tab context.Context, rn client.Run, outcome, why string, retry, author bool) {
	run(t, tab, chromedp.Navigate(s.base+"/runs/"+rn.RunID), chromedp.WaitVisible("[data-outcome]", chromedp.ByQuery))
	var v struct {
		Lang, Outcome, Whose, Why, Text, Report string
		Retry, Change                           bool
		Scroll, Width                           int64
	}
	evalJS(t, tab, `(() => {
	  const d = document.querySelector("details[data-technical]");
	  if (d) d.open = true;
	  const q = (sel) => (document.querySelector(sel) || {}).textContent || "";
	  return {Lang: document.documentElement.lang, Outcome: q("[data-outcome]"), Whose: q("[data-whose]"), Why: q("[data-summary]"),
	    Text: document.querySelector("main").innerText, Report: q("[data-report] h2"),
	    Retry: !!document.querySelector("form[data-retry] button"), Change: !!document.querySelector("a[data-change]"),
	    Scroll: document.documentElement.scrollWidth, Width: window.innerWidth};
	})()`, &v)
	if v.Lang != "sv" || !strings.Contains(v.Outcome, outcome) {
		t.Errorf("the page (%s) reads %q; want it to say %q", v.Lang, v.Outcome, outcome)
	}
	if why != "" && !strings.Contains(v.Why, why) {
		t.Errorf("the technical detail reads %q; want %q", v.Why, why)
	}
	if v.Retry != retry || v.Change == retry {
		t.Errorf("Försök igen offered %v, Ändra och kör igen %v; want %v, %v", v.Retry, v.Change, retry, !retry)
	}
	if author && (!strings.Contains(v.Whose, "author") || v.Report != "Rapportera till författaren") {
		t.Errorf("a crash names %q and offers the report %q; want the author and Rapportera till författaren", v.Whose, v.Report)
	}
	// Only the stderr the tool printed (the crash's traceback, the tool's own words) may
	// be English; none of the server's sentences.
	text := v.Text
	if i := strings.Index(text, "Felutskrift (stderr)"); i >= 0 {
		text = text[:i]
	}
	if rn.ErrorSummary != nil && rn.ErrorSource != nil && *rn.ErrorSource != "tool" && *rn.ErrorSource != "input" && strings.Contains(v.Text, *rn.ErrorSummary) {
		t.Errorf("the Swedish page shows the server's summary %q", *rn.ErrorSummary)
	}
	for _, w := range englishFromServer {
		if strings.Contains(text, w) {
			t.Errorf("the Swedish page shows the server's English %q:\n%s", w, text)
		}
	}
	if v.Scroll > v.Width {
		t.Errorf("the page is %d px wide at %d", v.Scroll, v.Width)
	}
}

// checkOutputLimit: the notice that an artifact over the output limit was not kept is
// in Swedish, with the limit and the file; the small artifact is kept.
func (s *site) checkOutputLimit(t *testing.T, tab context.Context, rn client.Run) {
	run(t, tab, chromedp.Navigate(s.base+"/runs/"+rn.RunID), chromedp.WaitVisible(".notice", chromedp.ByQuery))
	notice, main := text(t, tab, ".notice"), text(t, tab, "main")
	if !strings.Contains(notice, "Filer över gränsen för utdata (1 MiB) sparades inte") || !strings.Contains(notice, "stor.bin") {
		t.Errorf("the notice reads %q; want the limit and the file in Swedish", notice)
	}
	for _, w := range englishFromServer {
		if strings.Contains(main, w) {
			t.Errorf("the Swedish page shows the server's English %q:\n%s", w, main)
		}
	}
	if !strings.Contains(main, "liten.txt") {
		t.Errorf("the kept artifact is missing:\n%s", main)
	}
}
