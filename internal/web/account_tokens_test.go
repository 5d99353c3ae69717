package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

var shownToken = regexp.MustCompile(`<code class="token" data-token>(skr_[^<]+)</code>`)

// TestAccountTokensAndSessions: on the account page a user makes a token of a chosen
// scope and expiry, sees its secret once, finds it listed with what it may do, and
// revokes it, after which it is refused; a scope the form does not offer is refused on
// the page. The page lists the user's signed-in browsers, this one marked, and "Logga ut
// överallt" signs out every browser, the other one included.
func TestAccountTokensAndSessions(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	csrf := b.signIn("ada", "a good password")
	other := newBrowserless(t, env.URL)
	other.signIn("ada", "a good password")

	status, _, page := b.do("POST", "/account/tokens", url.Values{"csrf": {csrf}, "name": {"skript"}, "scope": {"files", "read"}, "expires_in": {"30d"}}, nil)
	m := shownToken.FindStringSubmatch(page)
	if status != http.StatusCreated || m == nil || !strings.Contains(page, "Ny API-nyckel skript") {
		t.Fatalf("creating a token on the account page: %d\n%s", status, page)
	}
	secret := m[1]
	c := env.Client(t, secret)
	if _, _, err := c.Files(ctx, "", "", 0); err != nil {
		t.Fatalf("the new token lists files: %v", err)
	}
	if _, err := c.Tokens(ctx, ""); err == nil || !strings.Contains(err.Error(), "scope") {
		t.Fatalf("the files,read token lists tokens: %v", err)
	}
	_, _, page = b.do("GET", "/account", nil, nil)
	if shownToken.MatchString(page) {
		t.Error("the account page shows a token's secret again")
	}
	id := regexp.MustCompile(`<tr data-token-id="(t_[^"]+)"><td>skript</td>\s*<td>filer, bara läsa</td>`).FindStringSubmatch(page)
	if id == nil {
		t.Fatalf("the account page does not list skript with its scope:\n%s", page)
	}
	for _, want := range []string{"Inloggade webbläsare", "Logga ut överallt", `<span class="badge">den här</span>`, "Go-http-client"} {
		if !strings.Contains(page, want) {
			t.Errorf("the account page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<tr data-session-id="); n != 2 {
		t.Errorf("the account page lists %d browsers, want 2", n)
	}

	status, _, page = b.do("POST", "/account/tokens", url.Values{"csrf": {csrf}, "name": {"x"}, "scope": {"admin"}}, nil)
	if status != http.StatusBadRequest || !strings.Contains(page, "”admin” går inte att använda som behörighet") || shownToken.MatchString(page) {
		t.Errorf("a scope the form does not offer: %d\n%s", status, page)
	}
	if status, _, _ := b.do("POST", "/account/tokens/"+id[1]+"/revoke", url.Values{}, nil); status != http.StatusForbidden {
		t.Errorf("revoking without the anti-forgery token: %d, want 403", status)
	}
	if status, h, _ := b.do("POST", "/account/tokens/"+id[1]+"/revoke", url.Values{"csrf": {csrf}}, nil); status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/account") {
		t.Fatalf("revoking skript: %d", status)
	}
	if _, _, err := c.Files(ctx, "", "", 0); err == nil {
		t.Fatal("the revoked token still lists files")
	}

	if status, h, _ := b.do("POST", "/account/sessions/end-all", url.Values{"csrf": {csrf}}, nil); status != http.StatusSeeOther || h.Get("Location") != "/signin" {
		t.Fatalf("signing out everywhere: %d %q", status, h.Get("Location"))
	}
	for name, br := range map[string]*browserless{"this browser": b, "the other browser": other} {
		if status, h, _ := br.do("GET", "/account", nil, nil); status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/signin") {
			t.Errorf("%s after signing out everywhere: %d %q", name, status, h.Get("Location"))
		}
	}
}
