package signon_test

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/signon"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// The provider's people. The example provider emits no groups claim (its storage sets
// only the standard claims of the scopes asked), so role mapping reads family_name,
// a claim it does emit, standing in for a group: "skrip-admins" maps to admin,
// "teachers" to author.
var (
	anna    = testutil.OIDCUser{ID: "sub-anna", Username: "anna@skola.test", Password: "anna-secret-1", FirstName: "Anna", LastName: "teachers", Email: "anna@skola.test", EmailVerified: true}
	rektor  = testutil.OIDCUser{ID: "sub-rektor", Username: "rektor", Password: "rektor-secret-1", FirstName: "Rut", LastName: "skrip-admins", Email: "rektor@skola.test", EmailVerified: true}
	eve     = testutil.OIDCUser{ID: "sub-eve", Username: "eve", Password: "eve-secret-1", FirstName: "Eve", LastName: "Outside", Email: "eve@elsewhere.test", EmailVerified: true}
	mallory = testutil.OIDCUser{ID: "sub-mallory", Username: "mallory", Password: "mallory-secret-1", FirstName: "Mal", LastName: "Lory", Email: "mallory@skola.test", EmailVerified: false}
	people  = []testutil.OIDCUser{anna, rektor, eve, mallory}
)

type rig struct {
	env *apptest.Env
	idp *testutil.OIDCProvider
}

// newRig starts the provider and a skrip server that signs on through it, on backend b;
// edit changes skrip's settings first.
func newRig(t *testing.T, b apptest.Backend, edit func(*config.Config)) *rig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	public := "http://" + ln.Addr().String()
	idp := testutil.StartOIDCProvider(t, public+signon.CallbackPath, people)
	cfg := apptest.Config(t, b)
	cfg.PublicURL = public
	cfg.SignOn = config.SignOn{Issuer: idp.Issuer, ClientID: "web", ClientSecret: "secret", Scopes: []string{"openid", "profile", "email"},
		RoleClaim: "family_name", RoleMap: map[string]string{"skrip-admins": "admin", "teachers": "author"}, DefaultRole: "user"}
	if edit != nil {
		edit(&cfg)
	}
	return &rig{env: apptest.StartOn(t, cfg, ln), idp: idp}
}

// browser is a person's browser, driven by hand: it follows no redirect by itself, so
// that each hop can be looked at.
type browser struct {
	t   *testing.T
	c   *http.Client
	jar *cookiejar.Jar
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, jar: jar, c: &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends req and returns the response with its body read.
func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (b *browser) get(u string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

// location is where resp sends the browser, resolved against its request.
func (b *browser) location(resp *http.Response) *url.URL {
	b.t.Helper()
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		b.t.Fatalf("%s %s: status %d, want a redirect", resp.Request.Method, resp.Request.URL, resp.StatusCode)
	}
	u, err := resp.Location()
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

// start opens skrip's sign-on with next and returns the provider's authorize URL it
// sends the browser to.
func (b *browser) start(env *apptest.Env, next string) *url.URL {
	b.t.Helper()
	resp, _ := b.get(env.URL + signon.LoginPath + "?next=" + url.QueryEscape(next))
	return b.location(resp)
}

// atProvider signs in at the provider's own pages, as u, from the authorize URL, and
// returns the callback URL the provider sends the browser back to (not visited yet).
func (b *browser) atProvider(authorize *url.URL, u testutil.OIDCUser) *url.URL {
	b.t.Helper()
	resp, _ := b.get(authorize.String())
	login := b.location(resp)
	resp, page := b.get(login.String())
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `name="password"`) {
		b.t.Fatalf("the provider's login page: %d %.500s", resp.StatusCode, page)
	}
	form := url.Values{"id": {login.Query().Get("authRequestID")}, "username": {u.Username}, "password": {u.Password}}
	req, _ := http.NewRequest(http.MethodPost, login.ResolveReference(&url.URL{Path: "/login/username"}).String(), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, page = b.do(req)
	if resp.StatusCode != http.StatusFound {
		b.t.Fatalf("signing in at the provider as %s: %d %.500s", u.Username, resp.StatusCode, page)
	}
	resp, _ = b.get(b.location(resp).String())
	cb := b.location(resp)
	if cb.Path != signon.CallbackPath {
		b.t.Fatalf("the provider sent the browser to %s, not skrip's callback", cb)
	}
	return cb
}

// signOn is a whole sign-on as u that must succeed: it returns the signed-in user.
func (b *browser) signOn(r *rig, u testutil.OIDCUser, next string) store.User {
	b.t.Helper()
	cb := b.atProvider(b.start(r.env, next), u)
	resp, body := b.get(cb.String())
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("callback as %s: %d %.800s", u.Username, resp.StatusCode, body)
	}
	if got := resp.Header.Get("Location"); got != next {
		b.t.Fatalf("after sign-on the browser goes to %s, want %s", got, next)
	}
	return b.me(r.env)
}

// me is the user the browser's session cookie signs in.
func (b *browser) me(env *apptest.Env) store.User {
	b.t.Helper()
	base, _ := url.Parse(env.URL)
	for _, c := range b.jar.Cookies(base) {
		if c.Name == account.SessionCookie {
			u, err := env.App.Accounts.SessionUser(context.Background(), c.Value)
			if err != nil {
				b.t.Fatalf("the session cookie signs no one in: %v", err)
			}
			return u
		}
	}
	b.t.Fatal("no session cookie after sign-on")
	return store.User{}
}

var reasonRE = regexp.MustCompile(`<code id="reason">([a-z_]+)</code>`)

// refused checks that resp is a sign-on failure page with status and reason, in Swedish.
func refused(t *testing.T, resp *http.Response, body string, status int, reason string) {
	t.Helper()
	m := reasonRE.FindStringSubmatch(body)
	if resp.StatusCode != status || m == nil || m[1] != reason {
		t.Fatalf("got %d with reason %v, want %d %s; page: %.1500s", resp.StatusCode, m, status, reason, body)
	}
	if !strings.Contains(body, "Inloggningen misslyckades") || !strings.Contains(body, `lang="sv"`) {
		t.Fatalf("the failure page is not the Swedish one: %.1500s", body)
	}
	for _, c := range resp.Cookies() {
		if c.Name == account.SessionCookie && c.MaxAge >= 0 {
			t.Fatalf("a failed sign-on set a session cookie")
		}
	}
}

func usersNamed(t *testing.T, env *apptest.Env) map[string]store.User {
	t.Helper()
	us, err := env.App.Store.Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.User{}
	for _, u := range us {
		out[u.Name] = u
	}
	return out
}

func TestCodeFlow(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		r := newRig(t, b, nil)
		ctx := context.Background()
		br := newBrowser(t)
		authorize := br.start(r.env, "/runs")
		q := authorize.Query()
		// PKCE: the provider is asked with an S256 challenge; state and nonce are sent.
		if q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" || q.Get("state") == "" || q.Get("nonce") == "" ||
			q.Get("client_id") != "web" || q.Get("redirect_uri") != r.env.URL+signon.CallbackPath {
			t.Fatalf("authorize URL %s lacks PKCE, state, nonce or the right client and redirect URI", authorize)
		}
		cb := br.atProvider(authorize, anna)
		resp, body := br.get(cb.String())
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs" {
			t.Fatalf("callback: %d %s %.500s", resp.StatusCode, resp.Header.Get("Location"), body)
		}
		u := br.me(r.env)
		// Named from preferred_username's part before the @; teachers maps to author.
		if u.Name != "anna" || u.Role != store.RoleAuthor || u.OIDCIssuer != r.idp.Issuer || u.OIDCSubject != anna.ID || u.PasswordHash != "" {
			t.Fatalf("signed on as %+v, want anna, author, bound to (%s, %s)", u, r.idp.Issuer, anna.ID)
		}
		// The session cookie is the same as a password sign-in's: HttpOnly, SameSite=Lax.
		for _, c := range resp.Cookies() {
			if c.Name == account.SessionCookie && (!c.HttpOnly || c.SameSite != http.SameSiteLaxMode) {
				t.Fatalf("session cookie %+v is not HttpOnly and SameSite=Lax", c)
			}
		}
		// The pages are open to the session.
		resp, body = br.get(r.env.URL + "/runs")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "anna") {
			t.Fatalf("GET /runs signed on: %d %.300s", resp.StatusCode, body)
		}
		// Audit: the user was made and signed in, by sign-on.
		evs, err := r.env.App.Store.Audit(ctx, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, e := range evs {
			if e.Target == "anna" {
				seen[e.Action] = e.Details
			}
		}
		if !strings.Contains(seen[account.AuditUserCreated], `"method":"oidc"`) || seen[account.AuditSignIn] != `{"method":"oidc"}` {
			t.Fatalf("audit events of anna: %v", seen)
		}
		// A second sign-on finds the same user, and makes no other.
		again := newBrowser(t).signOn(r, anna, "/")
		if again.ID != u.ID {
			t.Fatalf("second sign-on is user %s, want %s", again.ID, u.ID)
		}
		if n, _ := r.env.App.Store.CountUsers(ctx); n != 2 { // admin and anna
			t.Fatalf("%d users after two sign-ons of one person, want 2", n)
		}
	})
}

func TestPKCEVerifierMatters(t *testing.T) {
	r := newRig(t, apptest.Backends[0], nil)
	br := newBrowser(t)
	cb := br.atProvider(br.start(r.env, "/"), anna)
	code := cb.Query().Get("code")
	// The token endpoint of the provider, exchanging the code as skrip would, but
	// without the verifier, then with a wrong one: both refused, as the provider holds
	// the challenge skrip sent.
	exchange := func(verifier string) int {
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {r.env.URL + signon.CallbackPath}}
		if verifier != "" {
			form.Set("code_verifier", verifier)
		}
		req, _ := http.NewRequest(http.MethodPost, r.idp.Issuer+"oauth/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("web", "secret")
		resp, body := br.do(req)
		t.Logf("exchange with verifier %q: %d %s", verifier, resp.StatusCode, body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"invalid_`) || strings.Contains(body, "id_token") {
			t.Fatalf("exchange with verifier %q: %d %s, want 400 and no tokens", verifier, resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	exchange("")
	exchange("not-the-verifier-0123456789-0123456789-0123456789")
	// skrip's own callback, with the verifier in its flow cookie, gets the same code in.
	resp, body := br.get(cb.String())
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("skrip's callback with the same code: %d %.800s", resp.StatusCode, body)
	}
	if u := br.me(r.env); u.OIDCSubject != anna.ID {
		t.Fatalf("signed on as %+v", u)
	}
}

func TestRefusals(t *testing.T) {
	r := newRig(t, apptest.Backends[0], func(c *config.Config) { c.SignOn.AllowedDomains = []string{"skola.test"} })
	ctx := context.Background()

	t.Run("wrong state", func(t *testing.T) {
		br := newBrowser(t)
		cb := br.atProvider(br.start(r.env, "/"), anna)
		q := cb.Query()
		q.Set("state", "forged-"+q.Get("state"))
		cb.RawQuery = q.Encode()
		resp, body := br.get(cb.String())
		refused(t, resp, body, http.StatusBadRequest, "oidc_state")
	})
	t.Run("no flow cookie", func(t *testing.T) {
		br := newBrowser(t)
		cb := br.atProvider(br.start(r.env, "/"), anna)
		resp, body := newBrowser(t).get(cb.String()) // another browser: no cookie
		refused(t, resp, body, http.StatusBadRequest, "oidc_state")
	})
	t.Run("replayed code", func(t *testing.T) {
		br := newBrowser(t)
		cb := br.atProvider(br.start(r.env, "/"), anna)
		base, _ := url.Parse(r.env.URL + "/auth/oidc/")
		var flow *http.Cookie
		for _, c := range br.jar.Cookies(base) {
			if c.Name == signon.FlowCookie {
				flow = c
			}
		}
		if flow == nil {
			t.Fatal("no flow cookie after the start of a sign-on")
		}
		if resp, body := br.get(cb.String()); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("first callback: %d %.500s", resp.StatusCode, body)
		}
		// The same callback again, with the same flow cookie (an attacker who copied
		// both): the provider will not take the code twice.
		other := newBrowser(t)
		req, _ := http.NewRequest(http.MethodGet, cb.String(), nil)
		req.AddCookie(&http.Cookie{Name: flow.Name, Value: flow.Value})
		resp, body := other.do(req)
		refused(t, resp, body, http.StatusBadRequest, "oidc_code_rejected")
	})
	t.Run("expired ID token", func(t *testing.T) {
		// The verifier's clock two hours on: the provider's ID tokens live one hour.
		r.env.App.SignOn.SetClock(func() time.Time { return time.Now().Add(2 * time.Hour) })
		defer r.env.App.SignOn.SetClock(time.Now)
		br := newBrowser(t)
		resp, body := br.get(br.atProvider(br.start(r.env, "/"), rektor).String())
		refused(t, resp, body, http.StatusBadRequest, "oidc_token_expired")
		if _, ok := usersNamed(t, r.env)["rektor"]; ok {
			t.Fatal("an expired ID token made a user")
		}
	})
	t.Run("disallowed domain", func(t *testing.T) {
		br := newBrowser(t)
		resp, body := br.get(br.atProvider(br.start(r.env, "/"), eve).String())
		refused(t, resp, body, http.StatusForbidden, "oidc_domain")
		if !strings.Contains(body, "skola.test") {
			t.Fatalf("the refusal does not name the allowed domain: %.800s", body)
		}
		if _, err := r.env.App.Store.UserByOIDC(ctx, r.idp.Issuer, eve.ID); err == nil {
			t.Fatal("a refused domain made a user")
		}
	})
	t.Run("e-mail verified unsaid", func(t *testing.T) {
		// The example provider leaves email_verified out when it is false (omitempty),
		// and an absent claim is no refusal: mallory's domain is allowed. (An explicit
		// false is refused: TestIdentity.)
		if u := newBrowser(t).signOn(r, mallory, "/"); u.Name != "mallory" {
			t.Fatalf("signed on as %+v", u)
		}
	})
	t.Run("provider error", func(t *testing.T) {
		br := newBrowser(t)
		authorize := br.start(r.env, "/")
		resp, body := br.get(r.env.URL + signon.CallbackPath + "?error=access_denied&state=" + authorize.Query().Get("state"))
		refused(t, resp, body, http.StatusForbidden, "oidc_provider_error")
		if !strings.Contains(body, "access_denied") {
			t.Fatalf("the page does not say what the provider answered: %.800s", body)
		}
	})
	t.Run("disabled user", func(t *testing.T) {
		u := newBrowser(t).signOn(r, anna, "/")
		// Disabled as the account lifecycle does it (its own tests cover how): the state
		// column, set through the database itself.
		db, err := sql.Open("sqlite", r.env.Config.Path("skrip.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, "UPDATE users SET state = 'disabled' WHERE id = ?", u.ID); err != nil {
			t.Fatal(err)
		}
		defer db.ExecContext(ctx, "UPDATE users SET state = 'active' WHERE id = ?", u.ID)
		br := newBrowser(t)
		resp, body := br.get(br.atProvider(br.start(r.env, "/"), anna).String())
		refused(t, resp, body, http.StatusForbidden, "account_closed")
	})
	t.Run("next stays on this site", func(t *testing.T) {
		for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example"} {
			u := newBrowser(t)
			cb := u.atProvider(u.start(r.env, next), anna)
			resp, _ := u.get(cb.String())
			if got := resp.Header.Get("Location"); got != "/" {
				t.Fatalf("next %q: the browser goes to %s after sign-on, want /", next, got)
			}
		}
	})
}

func TestRoleMappingEverySignOn(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		r := newRig(t, b, nil)
		if u := newBrowser(t).signOn(r, rektor, "/"); u.Role != store.RoleAdmin || u.Name != "rektor" {
			t.Fatalf("rektor (family_name skrip-admins) signed on as %+v, want admin", u)
		}
		// Out of the admins "group", and with a new e-mail and name: the same (iss, sub)
		// is the same user, whose role follows the claim.
		moved := rektor
		moved.LastName, moved.Email, moved.Username = "Nobody", "rut.r@skola.test", "rut"
		r.idp.Restart(t, []testutil.OIDCUser{anna, moved})
		u := newBrowser(t).signOn(r, moved, "/")
		if u.Name != "rektor" || u.Role != store.RoleUser {
			t.Fatalf("after leaving the admins: %+v, want rektor with role user", u)
		}
		if n, _ := r.env.App.Store.CountUsers(context.Background()); n != 2 {
			t.Fatalf("%d users, want admin and rektor", n)
		}
	})
}

func TestNamesMadeUnique(t *testing.T) {
	r := newRig(t, apptest.Backends[0], nil)
	// A password user already holds the name anna.
	if _, err := r.env.Admin.CreateUser(context.Background(), "anna", "user", ""); err != nil {
		t.Fatal(err)
	}
	// So do two sign-on people whose preferred names both come to anna.
	other := anna
	other.ID, other.Username, other.Email = "sub-anna-2", "anna", "anna@annan.test"
	r.idp.Restart(t, []testutil.OIDCUser{anna, other})
	if u := newBrowser(t).signOn(r, anna, "/"); u.Name != "anna-2" {
		t.Fatalf("first sign-on anna is named %q, want anna-2", u.Name)
	}
	if u := newBrowser(t).signOn(r, other, "/"); u.Name != "anna-3" {
		t.Fatalf("second sign-on anna is named %q, want anna-3", u.Name)
	}
}

func TestAdminPasswordsOnly(t *testing.T) {
	r := newRig(t, apptest.Backends[0], func(c *config.Config) { c.Passwords = "admin" })
	ctx := context.Background()
	if _, err := r.env.Admin.CreateUser(ctx, "lena", "author", "lenas-password-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.env.Admin.CreateUser(ctx, "boss", "admin", "boss-password-1"); err != nil {
		t.Fatal(err)
	}
	br := newBrowser(t)
	resp, page := br.get(r.env.URL + "/signin")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Logga in med localhost") ||
		!strings.Contains(page, "Lösenord är bara till för administratörer") || !strings.Contains(page, `type="password"`) {
		t.Fatalf("sign-in page: %d %.2000s", resp.StatusCode, page)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)[1]
	signIn := func(name, pw string) (*http.Response, string) {
		form := url.Values{"csrf": {csrf}, "name": {name}, "password": {pw}, "next": {"/"}}
		req, _ := http.NewRequest(http.MethodPost, r.env.URL+"/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return br.do(req)
	}
	resp, page = signIn("lena", "lenas-password-1")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "bara administratörer logga in med lösenord") {
		t.Fatalf("a non-admin's right password: %d %.2000s", resp.StatusCode, page)
	}
	// A wrong password is told apart from nothing: it is just wrong.
	if resp, page = signIn("lena", "wrong-password-1"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a non-admin's wrong password: %d %.500s", resp.StatusCode, page)
	}
	if resp, page = signIn("boss", "boss-password-1"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the admin's password: %d %.500s", resp.StatusCode, page)
	}
	if u := br.me(r.env); u.Name != "boss" {
		t.Fatalf("signed in as %s", u.Name)
	}
}

func TestProviderDownAtStart(t *testing.T) {
	// The provider is not running when skrip starts: skrip serves, says so on a sign-on,
	// and finds the provider once it answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + ln.Addr().String()
	idp := testutil.StartOIDCProvider(t, public+signon.CallbackPath, people)
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.PublicURL = public
	cfg.SignOn = config.SignOn{Issuer: idp.Issuer, ClientID: "web", ClientSecret: "secret", Scopes: []string{"openid", "profile", "email"}}
	idp.Stop()
	env := apptest.StartOn(t, cfg, ln)
	br := newBrowser(t)
	resp, body := br.get(env.URL + signon.LoginPath)
	refused(t, resp, body, http.StatusServiceUnavailable, "oidc_unavailable")
	if resp.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	idp.Restart(t, people)
	r := &rig{env: env, idp: idp}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, _ := br.get(env.URL + signon.LoginPath)
		if resp.StatusCode == http.StatusFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sign-on still %d after the provider came back", resp.StatusCode)
		}
		time.Sleep(time.Second)
	}
	if u := newBrowser(t).signOn(r, anna, "/"); u.Role != store.RoleUser {
		t.Fatalf("signed on as %+v, want the default role user (no role claim)", u)
	}
}
