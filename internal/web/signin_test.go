package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// signInAs posts the sign-in form from browser b as the client at address from (sent in
// X-Forwarded-For, which only a server that trusts the test's 127.0.0.1 believes) with
// the form's own anti-forgery token.
func signInAs(b *browserless, from, name, pw string) (int, http.Header, string) {
	b.t.Helper()
	return b.do("POST", "/signin", url.Values{"name": {name}, "password": {pw}, "next": {"/files"}, "csrf": {b.signInToken()}},
		http.Header{"X-Forwarded-For": {from}})
}

// TestSignInForgery: a sign-in another site's page sends (a foreign Origin, no token) is
// refused with 403 and signs nobody in (login CSRF); the form's own token, or the
// server's own Origin, signs in.
func TestSignInForgery(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	if _, err := env.Admin.CreateUser(context.Background(), "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	form := func(token string) url.Values {
		v := url.Values{"name": {"ada"}, "password": {"a good password"}, "next": {"/files"}}
		if token != "" {
			v.Set("csrf", token)
		}
		return v
	}
	other := newBrowserless(t, env.URL)
	otherToken := other.signInToken()
	for _, tc := range []struct {
		name   string
		origin string
		token  func(b *browserless) string
	}{
		{"foreign origin, no token", "https://evil.example", func(*browserless) string { return "" }},
		{"no origin, no token", "", func(*browserless) string { return "" }},
		{"null origin, no token", "null", func(*browserless) string { return "" }},
		{"foreign origin, another browser's token", "https://evil.example", func(*browserless) string { return otherToken }},
		{"foreign origin, a token without its cookie", "https://evil.example", func(b *browserless) string {
			tok := newBrowserless(t, env.URL).signInToken()
			b.signInToken() // b has a cookie of its own, which tok is not of
			return tok
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrowserless(t, env.URL)
			hdr := http.Header{}
			if tc.origin != "" {
				hdr.Set("Origin", tc.origin)
			}
			status, h, body := b.do("POST", "/signin", form(tc.token(b)), hdr)
			if status != http.StatusForbidden || strings.Contains(h.Get("Set-Cookie"), "skrip_session=") {
				t.Fatalf("answered %d, Set-Cookie %q; want 403 and no session:\n%s", status, h.Get("Set-Cookie"), body)
			}
			if !strings.Contains(body, "annan webbplats") || !strings.Contains(body, `name="csrf"`) {
				t.Errorf("the refusal does not say why, or offers no fresh form:\n%s", body)
			}
			if status, _, _ := b.do("GET", "/files", nil, nil); status != http.StatusSeeOther {
				t.Errorf("after a refused sign-in /files answered %d; want the sign-in redirect", status)
			}
		})
	}
	t.Run("the form's own token", func(t *testing.T) {
		b := newBrowserless(t, env.URL)
		status, h, body := b.do("POST", "/signin", form(b.signInToken()), http.Header{"Origin": {env.URL}})
		if status != http.StatusSeeOther || h.Get("Location") != "/files" || !strings.Contains(h.Get("Set-Cookie"), "skrip_session=") {
			t.Fatalf("answered %d to %q:\n%s", status, h.Get("Location"), body)
		}
	})
	t.Run("the server's own origin, no token", func(t *testing.T) {
		b := newBrowserless(t, env.URL)
		status, h, body := b.do("POST", "/signin", form(""), http.Header{"Origin": {env.URL}})
		if status != http.StatusSeeOther || h.Get("Location") != "/files" {
			t.Fatalf("answered %d to %q:\n%s", status, h.Get("Location"), body)
		}
	})
}

// TestSignInThrottle: failed sign-ins are throttled per client address and per name
// with 429 and Retry-After, and the page says when to try again; another address is not
// throttled by the first one's failures; the user signs in once the wait is over, which
// clears the count; the throttled answers are counted in a metric.
func TestSignInThrottle(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	cfg.SignInFailuresPerAddress, cfg.SignInFailuresPerName, cfg.SignInMaxDelay = 4, 3, 2*time.Second
	env := apptest.Start(t, cfg)
	if _, err := env.Admin.CreateUser(context.Background(), "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	b := newBrowserless(t, env.URL)
	throttled := func(t *testing.T) func(status int, h http.Header, body string) time.Duration {
		return func(status int, h http.Header, body string) time.Duration {
			t.Helper()
			after, err := strconv.Atoi(h.Get("Retry-After"))
			if status != http.StatusTooManyRequests || err != nil || after < 1 || after > 2 {
				t.Fatalf("answered %d with Retry-After %q; want 429 and 1 or 2 seconds:\n%s", status, h.Get("Retry-After"), body)
			}
			if want := fmt.Sprintf("Försök igen om %d sekund", after); !strings.Contains(body, want) {
				t.Errorf("the page does not say %q:\n%s", want, body)
			}
			return time.Duration(after) * time.Second
		}
	}

	t.Run("per address", func(t *testing.T) {
		for i := range 4 { // another name each time: only the address counts them all
			if status, _, body := signInAs(b, "198.51.100.1", fmt.Sprintf("nobody%d", i), "wrong password"); status != http.StatusUnauthorized {
				t.Fatalf("failure %d answered %d:\n%s", i+1, status, body)
			}
		}
		throttled(t)(signInAs(b, "198.51.100.1", "nobody9", "wrong password"))
		// The right password too waits: the throttle answers before any check.
		throttled(t)(signInAs(b, "198.51.100.1", "ada", "a good password"))
		if status, _, body := signInAs(newBrowserless(t, env.URL), "198.51.100.2", "nobody9", "wrong password"); status != http.StatusUnauthorized {
			t.Fatalf("another address answered %d; its failures are its own:\n%s", status, body)
		}
	})

	t.Run("per name", func(t *testing.T) {
		for i := range 3 { // from another address each time: only the name counts them all
			if status, _, body := signInAs(b, fmt.Sprintf("203.0.113.%d", i+1), "ada", "wrong password"); status != http.StatusUnauthorized {
				t.Fatalf("failure %d answered %d:\n%s", i+1, status, body)
			}
		}
		wait := throttled(t)(signInAs(b, "203.0.113.9", "ada", "a good password"))
		if status, _, _ := signInAs(b, "203.0.113.9", "bob", "wrong password"); status != http.StatusUnauthorized {
			t.Fatalf("another name from the same address answered %d; want 401", status)
		}

		time.Sleep(wait)
		if status, h, body := signInAs(newBrowserless(t, env.URL), "203.0.113.9", "ada", "a good password"); status != http.StatusSeeOther || h.Get("Location") != "/files" {
			t.Fatalf("after the wait, the right password answered %d:\n%s", status, body)
		}
		// The success cleared the name's failures: a wrong password is a plain 401 again.
		if status, _, _ := signInAs(b, "203.0.113.10", "ada", "wrong password"); status != http.StatusUnauthorized {
			t.Fatalf("after a success a wrong password answered %d; want 401", status)
		}
	})

	if n := env.Metric(t, `skrip_signin_throttled_total{by="address"}`); n != 2 {
		t.Errorf("skrip_signin_throttled_total{by=address} = %v, want 2", n)
	}
	if n := env.Metric(t, `skrip_signin_throttled_total{by="name"}`); n != 1 {
		t.Errorf("skrip_signin_throttled_total{by=name} = %v, want 1", n)
	}
}

// TestPasswordChecksCapped: with SKRIP_PASSWORD_CHECKS=1, sign-ins and new passwords
// that arrive together never hash more than one password at once (the peak the server
// counts in the real code path); those that find no turn within the wait get 503 with
// Retry-After, and the page says so.
func TestPasswordChecksCapped(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.PasswordChecks, cfg.PasswordCheckWait = 1, 50*time.Millisecond
	env := apptest.Start(t, cfg)
	if _, err := env.Admin.CreateUser(context.Background(), "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	const n = 12
	type result struct {
		status int
		after  string
		body   string
	}
	results := make(chan result, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		b := newBrowserless(t, env.URL)
		token := b.signInToken()
		wg.Go(func() {
			name := "ada"
			if i%2 == 1 {
				name = fmt.Sprintf("nobody%d", i) // unknown names cost a check too
			}
			status, h, body := b.do("POST", "/signin", url.Values{"name": {name}, "password": {"wrong password"}, "csrf": {token}}, nil)
			results <- result{status, h.Get("Retry-After"), body}
		})
		wg.Go(func() {
			// A new user with a password hashes it too, through the same cap.
			req, _ := http.NewRequest("POST", env.URL+"/api/v1/users", strings.NewReader(fmt.Sprintf(`{"name":"new%d","password":"a long password"}`, i)))
			req.Header.Set("Authorization", "Bearer "+env.AdminToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			results <- result{resp.StatusCode, resp.Header.Get("Retry-After"), ""}
		})
	}
	wg.Wait()
	close(results)
	busy := 0
	for r := range results {
		switch r.status {
		case http.StatusUnauthorized, http.StatusCreated:
		case http.StatusServiceUnavailable:
			busy++
			if r.after != "1" {
				t.Errorf("a 503 carries Retry-After %q, want 1", r.after)
			}
			if r.body != "" && !strings.Contains(r.body, "Servern kontrollerar så många lösenord") {
				t.Errorf("the busy sign-in page does not say why:\n%s", r.body)
			}
		default:
			t.Errorf("answered %d:\n%s", r.status, r.body)
		}
	}
	if peak := env.Metric(t, "skrip_password_hashes_peak"); peak != 1 {
		t.Errorf("skrip_password_hashes_peak = %v, want 1 (the cap)", peak)
	}
	if busy == 0 {
		t.Errorf("none of %d requests at once waited past 50ms for the one password check", 2*n)
	}
	if refused := env.Metric(t, "skrip_password_checks_refused_total"); refused != float64(busy) {
		t.Errorf("skrip_password_checks_refused_total = %v, want %d", refused, busy)
	}
}
