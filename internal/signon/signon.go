// Package signon owns OpenID Connect sign-in: discovering the provider, the authorization
// code flow with PKCE, state and nonce kept in a short-lived signed cookie, checking the
// ID token and the claims (allowed e-mail domains, the role claim), and handing the
// person the provider vouched for to account, which finds or makes their user.
package signon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinel errors. Each has its own row, and so its own reason, in httpkit's error table.
var (
	// ErrOff means sign-on is not configured here (SKRIP_OIDC_ISSUER is empty).
	ErrOff = errors.New("sign-on is off")
	// ErrUnavailable means the provider's discovery document could not be read.
	ErrUnavailable = errors.New("sign-on provider unavailable")
	// ErrState means the callback's state does not match the browser's sign-on cookie:
	// missing, expired, forged, or from another sign-on.
	ErrState = errors.New("sign-on state mismatch")
	// ErrProvider means the provider sent the browser back with an error instead of a code.
	ErrProvider = errors.New("sign-on refused by the provider")
	// ErrCode means the provider would not exchange the code for tokens: used before,
	// expired, or without the PKCE verifier it was issued for.
	ErrCode = errors.New("sign-on code rejected")
	// ErrTokenExpired means the ID token had expired when it was checked.
	ErrTokenExpired = errors.New("sign-on ID token expired")
	// ErrToken means the ID token is not valid: bad signature, audience, issuer or nonce.
	ErrToken = errors.New("sign-on ID token invalid")
	// ErrDomain means the person's e-mail domain is not among SKRIP_OIDC_ALLOWED_DOMAINS.
	ErrDomain = errors.New("sign-on e-mail domain not allowed")
	// ErrUnverified means the provider says the person's e-mail is not verified, so its
	// domain proves nothing.
	ErrUnverified = errors.New("sign-on e-mail not verified")
)

// CallbackPath is where the provider sends the browser back; the redirect URI to
// register at the provider is the public URL and this path.
const CallbackPath = "/auth/oidc/callback"

// LoginPath starts a sign-on.
const LoginPath = "/auth/oidc/login"

// rediscoverAfter is how long after a failed discovery the next sign-on tries again, so
// that a provider that is down costs one request now and then, not one per click.
const rediscoverAfter = 5 * time.Second

// Service signs people on through one OpenID provider.
type Service struct {
	cfg      config.SignOn
	accounts *account.Service
	log      *slog.Logger
	client   *http.Client
	key      []byte // signs the flow cookie

	mu        sync.Mutex
	provider  *oidc.Provider
	triedAt   time.Time // the last failed discovery
	now       func() time.Time
	cookieTTL time.Duration
}

// New returns the sign-on of cfg, or nil when cfg has no issuer (sign-on is off). It
// tries discovery once and, when the provider does not answer, starts anyway: the next
// sign-on tries again.
func New(ctx context.Context, cfg config.SignOn, accounts *account.Service, log *slog.Logger) (*Service, error) {
	if cfg.Issuer == "" {
		return nil, nil
	}
	if u, err := url.Parse(cfg.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("setting oidc-issuer (SKRIP_OIDC_ISSUER): %q is not an http(s) URL such as https://accounts.google.com", cfg.Issuer)
	}
	if cfg.ClientID == "" {
		return nil, errors.New("setting oidc-client-id (SKRIP_OIDC_CLIENT_ID) is empty, and sign-on needs it (SKRIP_OIDC_ISSUER is set)")
	}
	if cfg.DefaultRole == "" {
		cfg.DefaultRole = store.RoleUser
	}
	if !store.ValidRole(cfg.DefaultRole) {
		return nil, fmt.Errorf("setting oidc-default-role (SKRIP_OIDC_DEFAULT_ROLE): %q is not one of admin, reviewer, author, user", cfg.DefaultRole)
	}
	for v, role := range cfg.RoleMap {
		if !store.ValidRole(role) {
			return nil, fmt.Errorf("setting oidc-role-map (SKRIP_OIDC_ROLE_MAP): %s=%s: %q is not one of admin, reviewer, author, user", v, role, role)
		}
	}
	if len(cfg.RoleMap) > 0 && cfg.RoleClaim == "" {
		return nil, errors.New("setting oidc-role-map (SKRIP_OIDC_ROLE_MAP) needs oidc-role-claim (SKRIP_OIDC_ROLE_CLAIM), the claim it reads")
	}
	if !slices.Contains(cfg.Scopes, oidc.ScopeOpenID) {
		cfg.Scopes = append([]string{oidc.ScopeOpenID}, cfg.Scopes...)
	}
	for i, d := range cfg.AllowedDomains {
		cfg.AllowedDomains[i] = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(d), "@"))
	}
	if cfg.Name == "" {
		u, _ := url.Parse(cfg.Issuer)
		cfg.Name = u.Hostname()
	}
	s := &Service{cfg: cfg, accounts: accounts, log: log, client: &http.Client{Timeout: 10 * time.Second},
		key: cookieKey(cfg.ClientSecret), now: time.Now, cookieTTL: 10 * time.Minute}
	if _, err := s.discover(ctx); err != nil {
		log.Warn("the sign-on provider did not answer; serving anyway, and the next sign-on tries again", "issuer", cfg.Issuer, "err", err)
	}
	return s, nil
}

// Name is the provider's name for the sign-in page's button.
func (s *Service) Name() string { return s.cfg.Name }

// SetClock makes the ID token checks read the time from now: tests move it past a
// token's expiry. The server never calls it.
func (s *Service) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

func (s *Service) clock() func() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// discover returns the provider, reading its discovery document when it has not been
// read yet, at most once per rediscoverAfter while the provider does not answer.
func (s *Service) discover(ctx context.Context) (*oidc.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider != nil {
		return s.provider, nil
	}
	unavailable := errs.New(ErrUnavailable, map[string]any{"issuer": s.cfg.Issuer},
		"the sign-on provider %s does not answer; try again in a minute, or sign in with a password if you have one", s.cfg.Name)
	if !s.triedAt.IsZero() && time.Since(s.triedAt) < rediscoverAfter {
		return nil, unavailable
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.client), s.cfg.Issuer)
	if err != nil {
		s.triedAt = time.Now()
		s.log.Warn("reading the sign-on provider's discovery document", "issuer", s.cfg.Issuer, "err", err)
		return nil, unavailable
	}
	s.provider = p
	return p, nil
}

// oauth is the OAuth 2 client of p with the redirect URI at origin (the public URL).
func (s *Service) oauth(p *oidc.Provider, origin string) *oauth2.Config {
	return &oauth2.Config{ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, Endpoint: p.Endpoint(),
		RedirectURL: origin + CallbackPath, Scopes: s.cfg.Scopes}
}

// Start begins a sign-on that returns to next, a path on this site: it returns the
// provider's URL to send the browser to and the value of the flow cookie (FlowCookie)
// that the callback needs. origin is the scheme and host users reach the server at.
func (s *Service) Start(ctx context.Context, origin, next string) (authURL, cookie string, err error) {
	p, err := s.discover(ctx)
	if err != nil {
		return "", "", err
	}
	f := newFlow(next, time.Now().Add(s.cookieTTL))
	authURL = s.oauth(p, origin).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	return authURL, f.seal(s.key), nil
}

// Finish completes the sign-on that the provider sent the browser back from, with the
// callback's query and the flow cookie's value: it checks the state, exchanges the code
// with the PKCE verifier, checks the ID token and its nonce, reads the claims and signs
// the person in. It returns the user, the new browser session's secret and the path to
// go to.
func (s *Service) Finish(ctx context.Context, actor account.Actor, origin string, q url.Values, cookie string) (store.User, string, string, error) {
	if e := q.Get("error"); e != "" {
		return store.User{}, "", "", errs.New(ErrProvider, map[string]any{"error": clip(e, 64)},
			"the sign-on provider did not sign you in (it said %q); try again, or ask your administrator", clip(e, 64))
	}
	f, ok := openFlow(s.key, cookie, time.Now())
	if !ok || q.Get("state") == "" || !f.stateIs(q.Get("state")) {
		return store.User{}, "", "", errs.New(ErrState, nil,
			"this sign-on did not start in this browser, took too long, or was already used; start it again")
	}
	code := q.Get("code")
	if code == "" {
		return store.User{}, "", "", errs.New(ErrCode, nil, "the sign-on provider sent no code back; start the sign-on again")
	}
	p, err := s.discover(ctx)
	if err != nil {
		return store.User{}, "", "", err
	}
	ctx = context.WithValue(oidc.ClientContext(ctx, s.client), oauth2.HTTPClient, s.client)
	oc := s.oauth(p, origin)
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		s.log.Warn("the sign-on provider refused the code", "issuer", s.cfg.Issuer, "err", err)
		return store.User{}, "", "", errs.New(ErrCode, nil,
			"the sign-on provider would not accept this sign-on's code (it may have been used already or expired); start the sign-on again")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return store.User{}, "", "", errs.New(ErrToken, nil, "the sign-on provider sent no ID token; ask your administrator to check the sign-on settings")
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: s.cfg.ClientID, Now: s.clock()}).Verify(ctx, raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return store.User{}, "", "", errs.New(ErrTokenExpired, nil, "the sign-on provider's answer has expired; start the sign-on again")
		}
		s.log.Warn("the sign-on provider's ID token is not valid", "issuer", s.cfg.Issuer, "err", err)
		return store.User{}, "", "", errs.New(ErrToken, nil, "the sign-on provider's answer could not be verified; start the sign-on again")
	}
	if !f.nonceIs(idt.Nonce) {
		return store.User{}, "", "", errs.New(ErrToken, map[string]any{"nonce": false},
			"the sign-on provider's answer belongs to another sign-on; start the sign-on again")
	}
	c, err := s.claims(ctx, p, idt, oc.TokenSource(ctx, tok))
	if err != nil {
		return store.User{}, "", "", err
	}
	id, err := s.identity(idt, c)
	if err != nil {
		return store.User{}, "", "", err
	}
	u, secret, err := s.accounts.SignOn(ctx, actor, id)
	if err != nil {
		return store.User{}, "", "", err
	}
	return u, secret, f.Next, nil
}

// claims are the ID token's claims, with those only the userinfo endpoint has (as some
// providers send e-mail and name only there) added; the ID token's win.
func (s *Service) claims(ctx context.Context, p *oidc.Provider, idt *oidc.IDToken, ts oauth2.TokenSource) (map[string]any, error) {
	c := map[string]any{}
	if err := idt.Claims(&c); err != nil {
		return nil, errs.New(ErrToken, nil, "the sign-on provider's answer could not be read; start the sign-on again")
	}
	if p.UserInfoEndpoint() == "" {
		return c, nil
	}
	ui, err := p.UserInfo(ctx, ts)
	if err != nil {
		// The ID token is enough to sign in by; its claims are all there is then.
		s.log.Warn("reading the sign-on provider's userinfo", "issuer", s.cfg.Issuer, "err", err)
		return c, nil
	}
	if ui.Subject != idt.Subject {
		return nil, errs.New(ErrToken, nil, "the sign-on provider's user info names another person; start the sign-on again")
	}
	extra := map[string]any{}
	if err := ui.Claims(&extra); err == nil {
		for k, v := range extra {
			if _, ok := c[k]; !ok {
				c[k] = v
			}
		}
	}
	return c, nil
}

// identity reads the person from the claims c of idt: checks the e-mail domain and maps
// the role claim.
func (s *Service) identity(idt *oidc.IDToken, c map[string]any) (account.Identity, error) {
	email, _ := c["email"].(string)
	preferred, _ := c["preferred_username"].(string)
	if err := s.checkDomain(email, preferred, c["email_verified"]); err != nil {
		return account.Identity{}, err
	}
	id := account.Identity{Issuer: idt.Issuer, Subject: idt.Subject, PreferredName: preferred, Email: email,
		DefaultRole: s.cfg.DefaultRole}
	if s.cfg.RoleClaim != "" {
		if v, ok := c[s.cfg.RoleClaim]; ok {
			id.ManagedRole = true
			id.Role = MapRole(v, s.cfg.RoleMap)
		} else {
			// The claim is missing, not empty: Entra ID leaves out groups for a member of
			// more than 200 (an overage claim instead). The role stays as it is, rather
			// than falling to the default at every sign-on; a new user gets the default.
			s.log.Warn("the sign-on's ID token lacks the role claim; the user's role is left as it is",
				"claim", s.cfg.RoleClaim, "issuer", idt.Issuer)
		}
	}
	return id, nil
}

// checkDomain allows the person when no domains are listed, or when their e-mail (or,
// without one, a preferred_username that is an address, as Entra ID's is) is in one of
// them and the provider does not say it is unverified.
func (s *Service) checkDomain(email, preferred string, verified any) error {
	if len(s.cfg.AllowedDomains) == 0 {
		return nil
	}
	addr := email
	if addr == "" && strings.Contains(preferred, "@") {
		addr = preferred
	}
	_, domain, _ := strings.Cut(strings.ToLower(addr), "@")
	if domain == "" || !slices.Contains(s.cfg.AllowedDomains, domain) {
		return errs.New(ErrDomain, map[string]any{"domain": domain, "allowed": strings.Join(s.cfg.AllowedDomains, ", ")},
			"sign-on here is for addresses at %s, and yours is %q", strings.Join(s.cfg.AllowedDomains, ", "), addr)
	}
	if email != "" && isFalse(verified) {
		return errs.New(ErrUnverified, map[string]any{"email": email},
			"the sign-on provider says your address %s is not verified; verify it there and sign on again", email)
	}
	return nil
}

// isFalse reports whether an email_verified claim says no (a boolean, or the string
// some providers send). An absent claim is not a no.
func isFalse(v any) bool {
	switch b := v.(type) {
	case bool:
		return !b
	case string:
		return strings.EqualFold(b, "false")
	}
	return false
}

// roleRank orders the roles, for the highest of several mapped values.
var roleRank = map[string]int{store.RoleUser: 1, store.RoleAuthor: 2, store.RoleReviewer: 3, store.RoleAdmin: 4}

// MapRole is the highest role that a value of the role claim v (a string, or a list of
// strings such as groups) maps to in m, or "" when none does.
func MapRole(v any, m map[string]string) string {
	var values []string
	switch x := v.(type) {
	case string:
		values = []string{x}
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				values = append(values, s)
			}
		}
	case []string:
		values = x
	}
	best := ""
	for _, val := range values {
		if r, ok := m[val]; ok && roleRank[r] > roleRank[best] {
			best = r
		}
	}
	return best
}

// clip cuts s to n bytes, for a provider's word echoed back.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
