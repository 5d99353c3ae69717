package signon_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestChromiumSignOn signs on in a real Chromium: skrip's sign-in page, its "Logga in
// med" button, the provider's own login page, and back to skrip, signed in.
func TestChromiumSignOn(t *testing.T) {
	chrome := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chrome = p
			break
		}
	}
	if chrome == "" {
		testutil.Missing(t, "chromium", "no chromium in PATH", "apt-get install chromium")
	}
	r := newRig(t, apptest.Backends[0], nil)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	var button, here, who string
	var signinShot, shot []byte
	steps := []chromedp.Action{
		// In Swedish, as the UI's language switch picks it, then to a page that needs a
		// sign-in.
		chromedp.Navigate(r.env.URL + "/lang/sv?back=/runs"),
		// Signed out: the sign-in page, with the provider's button beside the form.
		chromedp.WaitVisible("a#signon", chromedp.ByQuery),
		chromedp.Text("a#signon", &button, chromedp.ByQuery),
		chromedp.WaitVisible("#password", chromedp.ByQuery),
		chromedp.FullScreenshot(&signinShot, 100),
		chromedp.Click("a#signon", chromedp.ByQuery),
		// The provider's own login page.
		chromedp.WaitVisible("input#username", chromedp.ByQuery),
		chromedp.SendKeys("input#username", anna.Username, chromedp.ByQuery),
		chromedp.SendKeys("input#password", anna.Password, chromedp.ByQuery),
		chromedp.Click("button[type=submit]", chromedp.ByQuery),
		// Back on skrip, signed in, on the page first asked for.
		chromedp.WaitVisible("form.signout", chromedp.ByQuery),
		chromedp.Location(&here),
		chromedp.Text("body", &who, chromedp.ByQuery),
		chromedp.FullScreenshot(&shot, 100),
	}
	if err := chromedp.Run(ctx, steps...); err != nil {
		var at, html string
		chromedp.Run(ctx, chromedp.Location(&at), chromedp.OuterHTML("body", &html, chromedp.ByQuery))
		t.Fatalf("%v\nat %s:\n%.3000s", err, at, html)
	}
	if button != "Logga in med localhost" {
		t.Errorf("the sign-on button says %q", button)
	}
	if here != r.env.URL+"/runs" {
		t.Errorf("after sign-on the browser is at %s, want %s/runs", here, r.env.URL)
	}
	if !strings.Contains(who, "anna") {
		t.Errorf("the page does not name anna: %.500s", who)
	}
	if dir := os.Getenv("SKRIP_TEST_SCREENSHOTS"); dir != "" {
		os.WriteFile(dir+"/signon-page.png", signinShot, 0o644)
		os.WriteFile(dir+"/signon-done.png", shot, 0o644)
	}
}
