package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestRunsPerUserPage: a user at SKRIP_RUNS_PER_USER who starts a run from the tool
// page gets 429 and the page says why, with the cap, in the page's language.
func TestRunsPerUserPage(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.RunnerConcurrency, cfg.RunsPerUser = 1, 2
	env := apptest.Start(t, cfg)
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	const slow = "import time\ndef run_tool(input_dir, output_dir):\n    time.sleep(30)\n    return 'slept'\n"
	if _, _, err := env.Admin.CreateTool(ctx, "slow", "Slow", "", slow, true); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	csrf := b.signIn("ada", "a good password")
	start := func(lang string) (int, http.Header, string) {
		body, hdr := multipartBody(t, part{Name: "csrf", Value: csrf})
		hdr.Set("Accept-Language", lang)
		return b.do("POST", "/tools/slow/runs", nil, hdr, body)
	}
	for range 2 {
		if status, _, page := start("en"); status != http.StatusSeeOther {
			t.Fatalf("a run under the cap answered %d:\n%s", status, page)
		}
	}
	for lang, want := range map[string]string{
		"sv": "Du har 2 körningar som väntar eller pågår, så många som en person får ha samtidigt.",
		"en": "You have 2 runs waiting or running, as many as one person may at once.",
	} {
		status, h, page := start(lang)
		if status != http.StatusTooManyRequests || !strings.Contains(page, want) {
			t.Errorf("%s: a run past the cap answered %d; want 429 saying %q:\n%s", lang, status, want, page)
		}
		if h.Get("Retry-After") == "" {
			t.Errorf("%s: the page's 429 carries no Retry-After", lang)
		}
	}
	// Its runs cancelled, ada may run again.
	runs, err := env.App.Store.ListRuns(ctx, store.RunFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if _, err := env.App.Runs.Cancel(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		status, _, _ := start("en")
		if status == http.StatusSeeOther {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after cancelling, a run still answered %d", status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
