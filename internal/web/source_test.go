package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// outcomeOf is the text of the run page's sentence on how the run ended.
func outcomeOf(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`<p class="error" role="alert" data-outcome[^>]*>(.*?)</p>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no outcome on the page:\n%s", page)
	}
	return html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], ""))
}

// TestRunPageReadsErrorSource: real runs (bubblewrap) shown on the run page, which tells
// the tool's own message from a crash by the run's error_source: a ToolUserError worded
// as skrip's crash summaries begin is still the tool's message, shown as it is; an
// exception gets the page's sentence, its summary under the technical details; a
// ToolUserError without a message says so in the page's language; one naming a field
// is the user's input refused, and the page names the field.
func TestRunPageReadsErrorSource(t *testing.T) {
	se := newStepsEnv(t, "ada", "user")
	ctx := context.Background()
	cases := []struct{ slug, source, from, want string }{
		{"meddelande", "from skrip_toolkit import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError('Tool execution failed: the sheet has no header row.')\n",
			"tool", "Meddelande från verktyget: Tool execution failed: the sheet has no header row."},
		{"krasch", "def run_tool(i, o):\n    raise ValueError('oops')\n", "crash", crashSentence},
		{"tyst", "from skrip_toolkit import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError()\n",
			"tool", "Verktyget avbröts med ett fel men gav inget meddelande."},
		{"falt", "from skrip_toolkit import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError('Ange ett tal mellan 2 och 8.', field='storlek')\n",
			"input", "Verktyget godtog inte det du angav i fältet ”storlek”. Meddelande från verktyget: Ange ett tal mellan 2 och 8."},
	}
	for _, tc := range cases {
		if _, _, err := se.env.Admin.CreateTool(ctx, tc.slug, tc.slug, "", tc.source, true); err != nil {
			t.Fatal(err)
		}
		rn, err := se.user.RunFiles(ctx, tc.slug, nil, nil, time.Minute)
		if err != nil || rn.Status != "failed" || rn.ErrorSource == nil || *rn.ErrorSource != tc.from {
			t.Fatalf("%s: %+v, %v; want failed from %s", tc.slug, rn, err, tc.from)
		}
		_, _, page := se.b.do("GET", "/runs/"+rn.RunID, nil, http.Header{"Accept-Language": {"sv"}})
		if got := outcomeOf(t, page); got != tc.want {
			t.Errorf("%s: the page says %q; want %q", tc.slug, got, tc.want)
		}
		if tc.from == "crash" && (!strings.Contains(page, "<span data-summary>Verktyget stoppades av ett oväntat fel i sin kod. Felutskriften visar var.</span>") ||
			strings.Contains(page, "Tool execution failed")) {
			t.Errorf("%s: the crash's reason is not under the technical details in Swedish, or its English summary shows:\n%s", tc.slug, page)
		}
		// Whose the failure is: a crash names the author who can mend it; neither it nor
		// the tool's own answer to the input (nor its refusal of a field) is tried again
		// as it was, which would end the same: the page offers to change the input.
		retry, change := strings.Contains(page, "data-retry"), strings.Contains(page, "data-change")
		switch tc.from {
		case "crash":
			if !regexp.MustCompile(`<p class="hint" data-whose>Det är verktygets författare, [^,]+, som kan rätta felet`).MatchString(page) || retry || !change {
				t.Errorf("%s: a crash names no author, or offers retry %v, change %v:\n%s", tc.slug, retry, change, page)
			}
		case "tool", "input":
			if retry || !change || strings.Contains(page, "data-whose") {
				t.Errorf("%s: the tool's own message offers retry %v, change %v", tc.slug, retry, change)
			}
		}
	}
}

// conflictSentence is run.conflict in Swedish: a step refused because the session
// changed elsewhere.
const conflictSentence = "Ett annat steg i den här sessionen sparades först"

// TestStepRefusedAsConflict: a step sent against a revision the session no longer has,
// or with none, is refused as a conflict, which the page says in its own words (by the
// error's kind, whatever its English text), with the way to the latest step and no forms;
// on the run page and in the editor's sandbox alike. Nothing runs.
func TestStepRefusedAsConflict(t *testing.T) {
	se := newStepsEnv(t, "bo", "author")
	author, b, csrf := se.user, se.b, se.csrf
	ctx := context.Background()
	_, v, err := author.CreateTool(ctx, "steg", "Steg", "", stepsSource, true)
	if err != nil {
		t.Fatal(err)
	}
	first, err := author.RunFiles(ctx, "steg", nil, nil, time.Minute)
	if err != nil || first.Status != "succeeded" {
		t.Fatalf("the first run: %+v, %v", first, err)
	}
	if _, err := author.EditorRun(ctx, v.ID, nil, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	sv := http.Header{"Accept-Language": {"sv"}}
	before := countRuns(t, author)
	for _, rev := range []string{"", "41"} {
		form := url.Values{"csrf": {csrf}, "expected_state_rev": {rev}, "confirmed": {"1"}, "in.text": {"x"}}
		for _, path := range []string{"/runs/" + first.RunID + "/actions/fortsatt", "/editor/versions/" + v.ID + "/actions/fortsatt"} {
			status, _, page := b.do("POST", path, form, sv)
			if status != http.StatusConflict || !strings.Contains(page, conflictSentence) || !strings.Contains(page, "data-submit-error") {
				t.Errorf("%s at revision %q answered %d without the conflict:\n%s", path, rev, status, page)
			}
			if revField.MatchString(page) {
				t.Errorf("%s at revision %q: the refused page still offers forms at a revision", path, rev)
			}
			if strings.Contains(page, "This session changed in another tab") {
				t.Errorf("%s: the page shows the error's English text", path)
			}
		}
	}
	if n := countRuns(t, author); n != before {
		t.Errorf("refused steps ran: %d runs, were %d", n, before)
	}
}
