package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// startCLILogin starts a `skrip login` as the CLI does and returns its user code.
func startCLILogin(t *testing.T, env *apptest.Env, machine string) string {
	t.Helper()
	return startCLILoginAt(t, env.URL, machine)
}

// startCLILoginAt is startCLILogin on the server at base.
func startCLILoginAt(t *testing.T, base, machine string) string {
	t.Helper()
	resp, err := http.Post(base+"/api/v1/cli/logins", "application/json", strings.NewReader(`{"machine":"`+machine+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var start struct {
		UserCode string `json:"user_code"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&start); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("starting a login: %d %v", resp.StatusCode, err)
	}
	return start.UserCode
}

// TestCLILoginPage: the page a `skrip login` prints sends a signed-out browser to sign in
// and back; signed in, it shows the code and the machine with Godkänn and Neka, which
// need the page's anti-forgery token; a wrong code is said in Swedish, and after a few
// wrong codes the user must wait.
func TestCLILoginPage(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	if _, err := env.Admin.CreateUser(context.Background(), "vera", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	code := startCLILogin(t, env, "veras-dator")
	page := "/cli/login?code=" + code
	b := newBrowserless(t, env.URL)

	status, h, _ := b.do("GET", page, nil, nil)
	if status != http.StatusSeeOther || h.Get("Location") != "/signin?next="+url.QueryEscape(page) {
		t.Fatalf("signed out: %d to %q", status, h.Get("Location"))
	}
	status, h, body := b.do("POST", "/signin", url.Values{"name": {"vera"}, "password": {"a good password"}, "next": {page}, "csrf": {b.signInToken()}}, nil)
	if status != http.StatusSeeOther || h.Get("Location") != page {
		t.Fatalf("sign-in with next: %d to %q:\n%s", status, h.Get("Location"), body)
	}
	// next is a local path only.
	for _, next := range []string{"https://evil.example/cli/login", "//evil.example/x", "/\\evil.example"} {
		if _, h, _ := b.do("GET", "/signin?next="+url.QueryEscape(next), nil, nil); h.Get("Location") != "/" {
			t.Errorf("signed in, /signin?next=%s goes to %q, want /", next, h.Get("Location"))
		}
	}

	status, _, body = b.do("GET", page, nil, nil)
	if status != http.StatusOK || !strings.Contains(body, code) || !strings.Contains(body, "veras-dator") ||
		!strings.Contains(body, ">Godkänn<") || !strings.Contains(body, ">Neka<") || !strings.Contains(body, "127.0.0.1") {
		t.Fatalf("the login page: %d\n%s", status, body)
	}
	csrf := csrfField.FindStringSubmatch(body)[1]

	// Without the anti-forgery token nothing is decided.
	if status, _, _ := b.do("POST", "/cli/login", url.Values{"code": {code}, "decision": {"approve"}}, nil); status != http.StatusForbidden {
		t.Fatalf("approving without the csrf field: %d", status)
	}
	status, _, body = b.do("POST", "/cli/login", url.Values{"code": {code}, "decision": {"deny"}, "csrf": {csrf}}, nil)
	if status != http.StatusOK || !strings.Contains(body, "Inloggningen nekades") {
		t.Fatalf("denying: %d\n%s", status, body)
	}
	// Decided: the code is no longer there to approve.
	status, _, body = b.do("POST", "/cli/login", url.Values{"code": {code}, "decision": {"approve"}, "csrf": {csrf}}, nil)
	if status != http.StatusNotFound || !strings.Contains(body, "Ingen inloggning väntar med koden "+code) {
		t.Fatalf("approving a denied login: %d\n%s", status, body)
	}

	// Without a code the page asks for one; a code typed in lower case without its dash
	// is found.
	status, _, body = b.do("GET", "/cli/login", nil, nil)
	if status != http.StatusOK || !strings.Contains(body, `name="code"`) || !strings.Contains(body, "Ange koden") {
		t.Fatalf("the page without a code: %d\n%s", status, body)
	}
	other := startCLILogin(t, env, "skolan")
	status, _, body = b.do("GET", "/cli/login?code="+strings.ToLower(strings.ReplaceAll(other, "-", "")), nil, nil)
	if status != http.StatusOK || !strings.Contains(body, other) || !strings.Contains(body, "skolan") {
		t.Fatalf("a typed code: %d\n%s", status, body)
	}

	// Wrong codes: 404 with the sentence, then after a few, 429 with Retry-After. (One
	// wrong code was counted above.)
	for i := range 4 {
		status, _, body = b.do("GET", "/cli/login?code=BBBB-BBB"+string(rune('B'+i)), nil, nil)
		if status != http.StatusNotFound || !strings.Contains(body, "Ingen inloggning väntar") || !strings.Contains(body, `name="code"`) {
			t.Fatalf("wrong code %d: %d\n%s", i, status, body)
		}
	}
	status, h, body = b.do("GET", "/cli/login?code=BBBB-BBBZ", nil, nil)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, "för många koder") {
		t.Fatalf("a sixth wrong code: %d %q\n%s", status, h.Get("Retry-After"), body)
	}
	// Even the right code waits now: guessing can't go on by mixing in a real one.
	if status, _, _ := b.do("GET", "/cli/login?code="+other, nil, nil); status != http.StatusTooManyRequests {
		t.Fatalf("a right code while throttled: %d", status)
	}
}
