package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/client"
)

// accountTokens: in Chromium, a user opens the account page, makes a token that may only
// handle files, for 30 days, copies its secret from the page (it works for files and is
// refused elsewhere), revokes it with its row's button (it is refused from then on), and
// with "Logga ut överallt" signs out this browser and another one signed in elsewhere.
func (s *site) accountTokens(t *testing.T) {
	ctx := context.Background()
	if _, err := s.admin.CreateUser(ctx, "kontoagare", "user", password); err != nil {
		t.Fatal(err)
	}
	// Another browser, signed in elsewhere.
	elsewhere := newBrowserless(t, s.base)
	elsewhere.signIn("kontoagare", password)

	a := s.as(t, "kontoagare")
	var secret string
	run(t, a,
		chromedp.Navigate(s.base+"/account"),
		chromedp.WaitVisible("#tok-name", chromedp.ByQuery),
		chromedp.SendKeys("#tok-name", "laptop", chromedp.ByQuery),
		chromedp.Click(`input[name="scope"][value="files"]`, chromedp.ByQuery),
		chromedp.SetValue("#tok-exp", "30d", chromedp.ByQuery),
		chromedp.Click(`form[action="/account/tokens"] button[type="submit"]`, chromedp.ByQuery),
		chromedp.WaitVisible("code[data-token]", chromedp.ByQuery),
		chromedp.Text("code[data-token]", &secret, chromedp.ByQuery),
	)
	secret = strings.TrimSpace(secret)
	c, err := client.New(s.base, secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Files(ctx, "", "", 0); err != nil {
		t.Fatalf("the token from the page lists files: %v", err)
	}
	if _, err := c.Tokens(ctx, ""); !client.IsCode(err, "forbidden") {
		t.Fatalf("the files token lists tokens: %v; want forbidden", err)
	}
	row := `//tr[td[1][normalize-space()="laptop"]]`
	if got := text(t, a, "#tokens tbody"); !strings.Contains(got, "laptop\tfiles\t") && !strings.Contains(got, "laptop\tfiler\t") {
		t.Fatalf("the token list reads %q", got)
	}
	run(t, a, chromedp.Click(row+`//button`, chromedp.BySearch))
	// The form answers with the account page again (at #tokens-h), without the token.
	gone := false
	for deadline := time.Now().Add(20 * time.Second); !gone && time.Now().Before(deadline); {
		var url string
		var listed bool
		err := chromedp.Run(a, chromedp.Location(&url),
			chromedp.Evaluate(`[...document.querySelectorAll("#tokens tbody td:first-child")].some(td => td.textContent.trim() === "laptop")`, &listed))
		gone = err == nil && strings.HasSuffix(url, "/account#tokens-h") && !listed
		if !gone {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !gone {
		t.Fatalf("after revoking, the account page still lists laptop (at %s)", location(t, a))
	}
	if _, _, err := c.Files(ctx, "", "", 0); !client.IsCode(err, "unauthorized") {
		t.Fatalf("the revoked token: %v; want unauthorized", err)
	}

	var browsers int
	run(t, a, chromedp.Evaluate(`document.querySelectorAll("#sessions tbody tr").length`, &browsers))
	if browsers != 2 {
		t.Fatalf("the account page lists %d signed-in browsers, want 2", browsers)
	}
	run(t, a,
		chromedp.Click("#end-all", chromedp.ByQuery),
		chromedp.WaitVisible("#name", chromedp.ByQuery),
	)
	if status, _, _ := elsewhere.do("GET", "/api/v1/me", nil, nil); status != http.StatusUnauthorized {
		t.Errorf("the other browser after signing out everywhere: %d, want 401", status)
	}
	run(t, a, chromedp.Navigate(s.base+"/account"), chromedp.WaitVisible("#name", chromedp.ByQuery))
}
