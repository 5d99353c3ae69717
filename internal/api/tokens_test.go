package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/wire"
)

// issue makes a token for user through the API and returns its answer.
func issue(t *testing.T, env *apptest.Env, asToken, user, body string) wire.IssuedToken {
	t.Helper()
	a := call(t, env, "POST", "/api/v1/users/"+user+"/tokens", asToken, strings.NewReader(body))
	if a.status != http.StatusCreated {
		t.Fatalf("issuing %s for %s: %d %s", body, user, a.status, a.raw)
	}
	var out wire.IssuedToken
	dec := json.NewDecoder(strings.NewReader(a.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("the answer is not a wire.IssuedToken: %v\n%s", err, a.raw)
	}
	if !strings.HasPrefix(out.Secret, "skr_") || out.ID == "" {
		t.Fatalf("issued token: %s", a.raw)
	}
	return out
}

func reason(a answer) string {
	e, _ := a.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	r, _ := d["reason"].(string)
	return r
}

// TestTokenScopes: a token kept to a scope reaches only its routes, and anything else
// is 403 forbidden with reason token_scope, naming the scope and what the route needs.
// GET /api/v1/me is open to every scope; users and tokens need "all".
func TestTokenScopes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, ada := env.User(t, "ada", "author")
		tok := map[string]string{}
		for _, s := range []string{"files", "runs", "sandboxes", "read", "all"} {
			tok[s] = issue(t, env, ada.Token, "ada", `{"name":"`+s+`","scope":["`+s+`"]}`).Secret
		}
		both := issue(t, env, ada.Token, "ada", `{"name":"both","scope":["files","read"]}`)
		if strings.Join(both.Scope, ",") != "files,read" || both.User != "ada" {
			t.Fatalf("a token of two scopes: %+v", both.Token)
		}
		tok["files,read"] = both.Secret
		tok["sandboxes,read"] = issue(t, env, ada.Token, "ada", `{"name":"agent","scope":["sandboxes","read"]}`).Secret
		if a := call(t, env, "POST", "/api/v1/users/ada/tokens", ada.Token, strings.NewReader(`{"scope":["files","admin"]}`)); a.status != 400 ||
			reason(a) != "invalid_token" || !strings.Contains(a.errMessage(), `"admin"`) {
			t.Fatalf("an unknown scope word: %d %s", a.status, a.raw)
		}
		type req struct{ method, path, body string }
		var (
			me        = req{"GET", "/api/v1/me", ""}
			listFiles = req{"GET", "/api/v1/files", ""}
			putFile   = req{"PUT", "/api/v1/files/files/a.txt", "hej"}
			listLinks = req{"GET", "/api/v1/links?key=files/a.txt", ""}
			listTools = req{"GET", "/api/v1/tools", ""}
			listRuns  = req{"GET", "/api/v1/runs", ""}
			newTool   = req{"POST", "/api/v1/tools", `{"slug":"x","title":"X","source":"def run_tool(input_dir, output_dir):\n    return {}"}`}
			sandboxes = req{"GET", "/api/v1/sandboxes", ""}
			delSB     = req{"DELETE", "/api/v1/sandboxes/sb_nope", ""}
			// Stage reads a staged file into a sandbox, publish writes one: they need the
			// files scope (or read, to stage) beside sandboxes.
			stage    = req{"POST", "/api/v1/sandboxes/sb_nope/stage", `{"key":"files/a.txt","path":"a.txt"}`}
			publish  = req{"POST", "/api/v1/sandboxes/sb_nope/publish", `{"path":"a.txt","key":"files/a.txt"}`}
			tokens   = req{"GET", "/api/v1/tokens", ""}
			users    = req{"PUT", "/api/v1/users/ada/password", `{"password":"x"}`}
			sessions = req{"GET", "/api/v1/me/sessions", ""}
			newToken = req{"POST", "/api/v1/users/ada/tokens", `{}`}
		)
		for _, tc := range []struct {
			scope   string
			allowed []req
			refused []req
		}{
			{"files", []req{me, listFiles, putFile, listLinks}, []req{listTools, listRuns, newTool, sandboxes, delSB, tokens, users, sessions, newToken}},
			{"runs", []req{me, listTools, listRuns, newTool}, []req{listFiles, putFile, listLinks, sandboxes, tokens, newToken}},
			{"sandboxes", []req{me, sandboxes, delSB}, []req{listFiles, listTools, tokens, newToken, stage, publish}},
			{"sandboxes,read", []req{me, sandboxes, delSB, stage, listFiles}, []req{publish, putFile, tokens}},
			{"read", []req{me, listFiles, listLinks, listTools, listRuns, sandboxes}, []req{putFile, newTool, delSB, tokens, users, sessions, newToken}},
			{"files,read", []req{listFiles, putFile, listTools, sandboxes}, []req{newTool, delSB, tokens}},
			{"all", []req{me, listFiles, putFile, listTools, sandboxes, tokens, users, sessions, newToken, stage, publish}, nil},
		} {
			t.Run(tc.scope, func(t *testing.T) {
				for _, r := range tc.allowed {
					if a := call(t, env, r.method, r.path, tok[tc.scope], strings.NewReader(r.body)); a.status == 403 || a.status == 401 {
						t.Errorf("%s %s with a %s token: %d %s; want it let through", r.method, r.path, tc.scope, a.status, a.raw)
					}
				}
				for _, r := range tc.refused {
					a := call(t, env, r.method, r.path, tok[tc.scope], strings.NewReader(r.body))
					if a.status != 403 || a.errCode() != "forbidden" || reason(a) != "token_scope" || !strings.Contains(a.errMessage(), "("+tc.scope+")") {
						t.Errorf("%s %s with a %s token: %d %s; want 403 token_scope", r.method, r.path, tc.scope, a.status, a.raw)
					}
				}
			})
		}
		// The refusal says what the route needs.
		a := call(t, env, "POST", "/api/v1/tools", tok["files"], strings.NewReader(newTool.body))
		e := a.body["error"].(map[string]any)["details"].(map[string]any)
		if needs, _ := json.Marshal(e["needs"]); string(needs) != `["runs"]` {
			t.Errorf("details.needs of POST /api/v1/tools with a files token: %s", needs)
		}
		// Any token may revoke itself.
		if a := call(t, env, "DELETE", "/api/v1/tokens/current", tok["sandboxes"], nil); a.status != 204 {
			t.Fatalf("a sandboxes token revoking itself: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "GET", "/api/v1/sandboxes", tok["sandboxes"], nil); a.status != 401 {
			t.Errorf("the revoked token: %d, want 401", a.status)
		}
	})
}

// TestTokenLifecycle: tokens are listed without secrets, a user neither sees nor revokes
// another's (404) while an admin does; a revoked token gets 401 at once, an expired one
// from its expiry; its last use is recorded, but not rewritten on every request; and
// creating and revoking are audited with the client's address.
func TestTokenLifecycle(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, ada := env.User(t, "ada", "user")
		_, bob := env.User(t, "bob", "user")
		laptop := issue(t, env, ada.Token, ada.ID, `{"name":"laptop","expires_in":"30d"}`)
		if laptop.ExpiresAt == nil || laptop.ExpiresAt.Sub(laptop.CreatedAt) != 30*24*time.Hour || laptop.LastUsedAt != nil {
			t.Fatalf("laptop: %+v", laptop.Token)
		}
		list := call(t, env, "GET", "/api/v1/tokens", ada.Token, nil)
		dec := json.NewDecoder(strings.NewReader(list.raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&wire.TokenList{}); err != nil {
			t.Fatalf("the listing is not a wire.TokenList: %v\n%s", err, list.raw)
		}
		if list.status != 200 || list.body["count"] != float64(2) || strings.Contains(list.raw, laptop.Secret) || strings.Contains(list.raw, `"hash"`) {
			t.Fatalf("ada's tokens: %d %s", list.status, list.raw)
		}
		if a := call(t, env, "GET", "/api/v1/tokens?user=ada", bob.Token, nil); a.status != 404 {
			t.Errorf("bob lists ada's tokens: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "GET", "/api/v1/tokens?user=*", bob.Token, nil); a.status != 403 {
			t.Errorf("bob lists everyone's tokens: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "DELETE", "/api/v1/tokens/"+laptop.ID, bob.Token, nil); a.status != 404 || reason(a) != "token_not_found" {
			t.Errorf("bob revokes ada's token: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "POST", "/api/v1/users/ada/tokens", bob.Token, strings.NewReader(`{}`)); a.status != 404 {
			t.Errorf("bob issues a token for ada: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "GET", "/api/v1/tokens?user=ada", env.AdminToken, nil); a.status != 200 || a.body["count"] != float64(2) {
			t.Errorf("the admin lists ada's tokens: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "GET", "/api/v1/tokens?user=*", env.AdminToken, nil); a.status != 200 || a.body["count"] != float64(4) {
			t.Errorf("the admin lists every token (bootstrap, ada's two, bob's): %d %s", a.status, a.raw)
		}

		// Last use: recorded on first use, then not again within the minute.
		lastUsed := func() *time.Time {
			t.Helper()
			toks, err := env.Admin.Tokens(context.Background(), "ada")
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range toks {
				if tk.ID == laptop.ID {
					return tk.LastUsedAt
				}
			}
			t.Fatal("laptop is not listed")
			return nil
		}
		if a := call(t, env, "GET", "/api/v1/me", laptop.Secret, nil); a.status != 200 {
			t.Fatalf("laptop: %d", a.status)
		}
		first := lastUsed()
		if first == nil || time.Since(*first) > time.Minute {
			t.Fatalf("last use after the first: %v", first)
		}
		time.Sleep(20 * time.Millisecond)
		call(t, env, "GET", "/api/v1/me", laptop.Secret, nil)
		if again := lastUsed(); again == nil || !again.Equal(*first) {
			t.Fatalf("last use rewritten within the minute: %v, then %v", first, again)
		}

		// Revocation is at once; the admin may revoke anyone's.
		if a := call(t, env, "DELETE", "/api/v1/tokens/"+laptop.ID, env.AdminToken, nil); a.status != 204 {
			t.Fatalf("the admin revokes ada's laptop: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "GET", "/api/v1/me", laptop.Secret, nil); a.status != 401 || a.errCode() != "unauthorized" {
			t.Fatalf("a revoked token: %d %s; want 401", a.status, a.raw)
		}
		if a := call(t, env, "DELETE", "/api/v1/tokens/"+laptop.ID, ada.Token, nil); a.status != 404 {
			t.Errorf("revoking it again: %d", a.status)
		}

		// Expiry: a token of one second stops at its expiry.
		short := issue(t, env, ada.Token, "ada", `{"name":"short","expires_in":"1s"}`)
		if a := call(t, env, "GET", "/api/v1/me", short.Secret, nil); a.status != 200 {
			t.Fatalf("a fresh short token: %d", a.status)
		}
		time.Sleep(time.Until(*short.ExpiresAt) + 10*time.Millisecond)
		if a := call(t, env, "GET", "/api/v1/me", short.Secret, nil); a.status != 401 {
			t.Fatalf("a token past its expiry: %d %s; want 401", a.status, a.raw)
		}
		if a := call(t, env, "POST", "/api/v1/users/ada/tokens", ada.Token, strings.NewReader(`{"expires_in":"-5m"}`)); a.status != 400 || reason(a) != "invalid_token" {
			t.Errorf("a negative expiry: %d %s", a.status, a.raw)
		}
		// DELETE /api/v1/tokens/current revokes the caller's own token.
		if a := call(t, env, "DELETE", "/api/v1/tokens/current", bob.Token, nil); a.status != 204 {
			t.Fatalf("bob logs out: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "GET", "/api/v1/me", bob.Token, nil); a.status != 401 {
			t.Errorf("bob's token after logging out: %d", a.status)
		}

		// The audit log has both, with who, to whom and from where.
		events, err := env.App.Store.Audit(context.Background(), "", 100)
		if err != nil {
			t.Fatal(err)
		}
		var created, revoked bool
		for _, e := range events {
			if e.Action == "token_created" && e.Target == "ada" && e.Actor == "ada" && e.Address == "127.0.0.1" && strings.Contains(e.Details, laptop.ID) {
				created = true
			}
			if e.Action == "token_revoked" && e.Target == "ada" && e.Actor == "admin" && strings.Contains(e.Details, laptop.ID) {
				revoked = true
			}
		}
		if !created || !revoked {
			t.Errorf("audit: created %v, revoked %v in %+v", created, revoked, events)
		}
	})
}

// TestWebSessionsAPI: a browser's sign-in is listed with its address (from a trusted
// proxy's X-Forwarded-For) and user agent, marked current when the browser asks; its
// cookie is HttpOnly, SameSite=Lax and Secure behind a proxy that says https; ending
// one, and ending all with a token, signs the browsers out at once.
func TestWebSessionsAPI(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	env := apptest.Start(t, cfg)
	u, err := env.Admin.CreateUser(t.Context(), "ada", "user", "a good password")
	if err != nil {
		t.Fatal(err)
	}
	status, ck := signInFrom(t, env, "ada", "a good password", "X-Forwarded-Proto", "https", "X-Forwarded-For", "198.51.100.7", "User-Agent", "Firefox/140")
	if status != http.StatusSeeOther || !strings.Contains(ck, "Secure") || !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Lax") {
		t.Fatalf("sign-in through an https proxy: %d, cookie %q", status, ck)
	}
	_, other := signInFrom(t, env, "ada", "a good password", "User-Agent", "Chromium/140")
	if strings.Contains(other, "Secure") {
		t.Errorf("a sign-in over plain http got a Secure cookie: %q", other)
	}
	cookie := func(setCookie string) *http.Cookie {
		c, err := http.ParseSetCookie(setCookie)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first, second := cookie(ck), cookie(other)
	asBrowser := func(c *http.Cookie, method, path string) answer {
		t.Helper()
		req, _ := http.NewRequest(method, env.URL+path, nil)
		req.AddCookie(c)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		a := answer{status: resp.StatusCode}
		json.NewDecoder(resp.Body).Decode(&a.body)
		b, _ := json.Marshal(a.body)
		a.raw = string(b)
		return a
	}
	list, err := env.Client(t, u.Token).WebSessions(t.Context())
	if err != nil || len(list) != 2 {
		t.Fatalf("ada's sessions: %+v, %v", list, err)
	}
	byAgent := map[string]wire.WebSession{}
	for _, s := range list {
		byAgent[s.UserAgent] = s
		if s.Current {
			t.Errorf("a session is current to a token: %+v", s)
		}
	}
	if ff := byAgent["Firefox/140"]; ff.Address != "198.51.100.7" || ff.ID == "" || !ff.ExpiresAt.After(time.Now().Add(7*time.Hour)) {
		t.Errorf("the session through the proxy: %+v", ff)
	}
	a := asBrowser(first, "GET", "/api/v1/me/sessions")
	if a.status != 200 || !strings.Contains(a.raw, `"current":true`) || strings.Count(a.raw, `"current":true`) != 1 {
		t.Fatalf("the browser lists its sessions: %d %s", a.status, a.raw)
	}
	// Ending one by id: the other browser is signed out, this one not.
	ffID := byAgent["Firefox/140"].ID
	if a := call(t, env, "DELETE", "/api/v1/me/sessions/"+byAgent["Chromium/140"].ID, u.Token, nil); a.status != 204 {
		t.Fatalf("ending one session: %d %s", a.status, a.raw)
	}
	if a := asBrowser(second, "GET", "/api/v1/me"); a.status != 401 {
		t.Errorf("the ended browser: %d", a.status)
	}
	if a := asBrowser(first, "GET", "/api/v1/me"); a.status != 200 {
		t.Errorf("the other browser: %d", a.status)
	}
	if a := call(t, env, "DELETE", "/api/v1/me/sessions/"+ffID, env.AdminToken, nil); a.status != 404 || reason(a) != "web_session_not_found" {
		t.Errorf("the admin ends ada's session by id through /me: %d %s", a.status, a.raw)
	}
	// Sign out everywhere, with a token.
	if err := env.Client(t, u.Token).EndWebSessions(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a := asBrowser(first, "GET", "/api/v1/me"); a.status != 401 {
		t.Errorf("a browser after signing out everywhere: %d", a.status)
	}
}
