package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/config"
)

var signInToken = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signInFrom posts the web sign-in form with its own anti-forgery token and the header
// pairs hdr; it returns the status and the Set-Cookie of the session, if any.
func signInFrom(t *testing.T, env *apptest.Env, name, pw string, hdr ...string) (int, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(env.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := signInToken.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field on the sign-in page:\n%s", page)
	}
	req, _ := http.NewRequest("POST", env.URL+"/signin", strings.NewReader(url.Values{"name": {name}, "password": {pw}, "csrf": {string(m[1])}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(ck, "skrip_session=") {
			return resp.StatusCode, ck
		}
	}
	return resp.StatusCode, ""
}

// TestTrustedProxies: X-Forwarded-For, -Proto and -Host are believed only from a peer in
// SKRIP_TRUSTED_PROXIES. From any other (here, with none trusted) they change neither the
// address failed sign-ins are counted under, nor the session cookie's Secure flag, nor
// the host of a share link; from a trusted one they do. SKRIP_PUBLIC_URL wins for links.
func TestTrustedProxies(t *testing.T) {
	forwarded := []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "skrip.example.org"}
	start := func(t *testing.T, edit func(*config.Config)) (*apptest.Env, string) {
		cfg := apptest.Config(t, apptest.Backends[0])
		cfg.SignInFailuresPerAddress = 3
		edit(&cfg)
		env := apptest.Start(t, cfg)
		u, err := env.Admin.CreateUser(t.Context(), "ada", "user", "a good password")
		if err != nil {
			t.Fatal(err)
		}
		if a := send(t, env, "PUT", "/api/v1/files/files/a.txt", u.Token, "text/plain", strings.NewReader("hej")); a.status != 201 {
			t.Fatalf("upload: %d %s", a.status, a.raw)
		}
		return env, u.Token
	}
	linkURL := func(t *testing.T, env *apptest.Env, token string, hdr ...string) string {
		t.Helper()
		a := send(t, env, "POST", "/api/v1/files/files/a.txt/links", token, "application/json", strings.NewReader(`{"ttl":"1h"}`), hdr...)
		if a.status != 201 {
			t.Fatalf("link: %d %s", a.status, a.raw)
		}
		return a.body["url"].(string)
	}

	t.Run("none trusted", func(t *testing.T) {
		env, token := start(t, func(*config.Config) {})
		if u := linkURL(t, env, token, forwarded...); !strings.HasPrefix(u, env.URL+"/s/skl_") {
			t.Errorf("with X-Forwarded-Host from an untrusted peer the link is %s; want it on %s", u, env.URL)
		}
		if status, ck := signInFrom(t, env, "ada", "a good password", forwarded...); status != http.StatusSeeOther || strings.Contains(ck, "Secure") {
			t.Errorf("sign-in with X-Forwarded-Proto: https from an untrusted peer: %d, cookie %q; want no Secure", status, ck)
		}
		// Another X-Forwarded-For each time, yet all failures count against 127.0.0.1.
		for i := range 3 {
			if status, _ := signInFrom(t, env, fmt.Sprintf("nobody%d", i), "wrong password", "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i)); status != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d", i+1, status)
			}
		}
		if status, _ := signInFrom(t, env, "nobody9", "wrong password", "X-Forwarded-For", "198.51.100.99"); status != http.StatusTooManyRequests {
			t.Errorf("a fresh X-Forwarded-For from an untrusted peer escaped the throttle: %d, want 429", status)
		}
	})

	t.Run("trusted", func(t *testing.T) {
		env, token := start(t, func(c *config.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
		if u := linkURL(t, env, token, forwarded...); !strings.HasPrefix(u, "https://skrip.example.org/s/skl_") {
			t.Errorf("with X-Forwarded-Host from a trusted proxy the link is %s", u)
		}
		if u := linkURL(t, env, token); !strings.HasPrefix(u, env.URL+"/s/skl_") {
			t.Errorf("without X-Forwarded-* the link is %s; want it on %s", u, env.URL)
		}
		if status, ck := signInFrom(t, env, "ada", "a good password", forwarded...); status != http.StatusSeeOther || !strings.Contains(ck, "Secure") {
			t.Errorf("sign-in with X-Forwarded-Proto: https from a trusted proxy: %d, cookie %q; want Secure", status, ck)
		}
		for i := range 3 {
			if status, _ := signInFrom(t, env, fmt.Sprintf("nobody%d", i), "wrong password", "X-Forwarded-For", "198.51.100.7"); status != http.StatusUnauthorized {
				t.Fatalf("failure %d: %d", i+1, status)
			}
		}
		if status, _ := signInFrom(t, env, "nobody9", "wrong password", "X-Forwarded-For", "198.51.100.8"); status != http.StatusUnauthorized {
			t.Errorf("another client behind the proxy was throttled by the first one's failures: %d", status)
		}
		// What the client puts left of its own address is its own invention.
		if status, _ := signInFrom(t, env, "nobody9", "wrong password", "X-Forwarded-For", "6.6.6.6, 198.51.100.7"); status != http.StatusTooManyRequests {
			t.Errorf("the throttled client escaped with an invented hop: %d, want 429", status)
		}
	})

	t.Run("public URL", func(t *testing.T) {
		env, token := start(t, func(c *config.Config) {
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			c.PublicURL = "https://public.example/skrip"
		})
		if u := linkURL(t, env, token, forwarded...); !strings.HasPrefix(u, "https://public.example/skrip/s/skl_") {
			t.Errorf("with SKRIP_PUBLIC_URL the link is %s", u)
		}
	})
}
