package signon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/skrip-dev/skrip/internal/config"
)

func TestMapRole(t *testing.T) {
	m := map[string]string{"skrip-admins": "admin", "teachers": "author", "staff": "user", "granskare": "reviewer"}
	for _, tc := range []struct {
		claim any
		want  string
	}{
		{"skrip-admins", "admin"},
		{"teachers", "author"},
		{"pupils", ""},
		{nil, ""},
		{[]any{"staff", "teachers"}, "author"},
		{[]any{"teachers", "skrip-admins", "staff"}, "admin"},
		{[]any{"pupils", 7, map[string]any{}}, ""},
		{[]string{"staff"}, "user"},
		{42.0, ""},
		// reviewer is between author and admin.
		{[]any{"teachers", "granskare"}, "reviewer"},
		{[]any{"granskare", "skrip-admins"}, "admin"},
	} {
		if got := MapRole(tc.claim, m); got != tc.want {
			t.Errorf("MapRole(%v) = %q, want %q", tc.claim, got, tc.want)
		}
	}
}

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/runs":                 "/runs",
		"/tools/x?a=b":          "/tools/x?a=b",
		"":                      "/",
		"runs":                  "/",
		"//evil.example/":       "/",
		"/\\evil.example":       "/",
		"https://evil.example/": "/",
		"/a\r\nSet-Cookie: x":   "/",
	} {
		if got := LocalPath(in); got != want {
			t.Errorf("LocalPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFlowCookie(t *testing.T) {
	key := cookieKey("secret")
	now := time.Now()
	f := newFlow("/runs", now.Add(10*time.Minute))
	v := f.seal(key)
	got, ok := openFlow(key, v, now)
	if !ok || got != f || !got.stateIs(f.State) || got.stateIs("x") || !got.nonceIs(f.Nonce) {
		t.Fatalf("openFlow = %+v, %v; want %+v", got, ok, f)
	}
	if _, ok := openFlow(key, v, now.Add(11*time.Minute)); ok {
		t.Fatal("an expired flow cookie opened")
	}
	if _, ok := openFlow(cookieKey("other secret"), v, now); ok {
		t.Fatal("a flow cookie opened under another key")
	}
	body, mac, _ := strings.Cut(v, ".")
	forged := newFlow("/", now.Add(time.Hour))
	forged.State = f.State
	fb, _, _ := strings.Cut(forged.seal(cookieKey("attacker")), ".")
	for _, bad := range []string{"", "x", body, body + ".", fb + "." + mac, body + "." + mac + "x", strings.Repeat("a", 5000) + "." + mac} {
		if _, ok := openFlow(key, bad, now); ok {
			t.Fatalf("flow cookie %.60q opened", bad)
		}
	}
	// A next too long for a cookie returns to the front page instead.
	if f := newFlow("/"+strings.Repeat("a", 2000), now); f.Next != "/" {
		t.Fatalf("a long next kept: %.40q", f.Next)
	}
}

func TestIdentity(t *testing.T) {
	s := &Service{cfg: config.SignOn{AllowedDomains: []string{"skola.se"}, RoleClaim: "groups",
		RoleMap: map[string]string{"g-admins": "admin"}, DefaultRole: "author"}, log: slog.New(slog.DiscardHandler)}
	idt := &oidc.IDToken{Issuer: "https://login.microsoftonline.com/t/v2.0", Subject: "s1"}
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   error
		role   string
	}{
		{"verified", map[string]any{"email": "a@skola.se", "email_verified": true, "groups": []any{"g-admins"}}, nil, "admin"},
		// No groups claim at all (Entra's overage): the role is not managed this time.
		{"unsaid", map[string]any{"email": "a@Skola.SE"}, nil, ""},
		{"no groups", map[string]any{"email": "a@skola.se", "groups": []any{}}, nil, ""},
		{"unverified", map[string]any{"email": "a@skola.se", "email_verified": false}, ErrUnverified, ""},
		{"unverified as text", map[string]any{"email": "a@skola.se", "email_verified": "false"}, ErrUnverified, ""},
		{"other domain", map[string]any{"email": "a@skola.se.evil.example", "email_verified": true}, ErrDomain, ""},
		{"subdomain", map[string]any{"email": "a@elev.skola.se"}, ErrDomain, ""},
		{"no e-mail", map[string]any{}, ErrDomain, ""},
		// Entra ID sends no e-mail unless asked, but its preferred_username is the
		// tenant's address.
		{"entra upn", map[string]any{"preferred_username": "lena@skola.se", "groups": "g-admins"}, nil, "admin"},
	} {
		id, err := s.identity(idt, tc.claims)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
			continue
		}
		_, hasClaim := tc.claims["groups"]
		if err == nil && (id.Role != tc.role || id.ManagedRole != hasClaim || id.DefaultRole != "author" || id.Subject != "s1") {
			t.Errorf("%s: identity %+v, want role %q", tc.name, id, tc.role)
		}
	}
	open := &Service{cfg: config.SignOn{DefaultRole: "user"}}
	if id, err := open.identity(idt, map[string]any{"email": "x@anywhere.example", "email_verified": false}); err != nil || id.ManagedRole {
		t.Fatalf("no domain list: %+v, %v; want anyone in, roles unmanaged", id, err)
	}
}

func TestNewChecksSettings(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Nothing listens on port 1: discovery fails at once, and New serves anyway.
	base := config.SignOn{Issuer: "http://127.0.0.1:1/", ClientID: "c"}
	for _, tc := range []struct {
		name string
		edit func(*config.SignOn)
		want string // in the error; "" for none
	}{
		{"off", func(c *config.SignOn) { c.Issuer = "" }, ""},
		{"provider down", func(*config.SignOn) {}, ""},
		{"not a URL", func(c *config.SignOn) { c.Issuer = "accounts.google.com" }, "SKRIP_OIDC_ISSUER"},
		{"no client", func(c *config.SignOn) { c.ClientID = "" }, "SKRIP_OIDC_CLIENT_ID"},
		{"bad default role", func(c *config.SignOn) { c.DefaultRole = "root" }, "SKRIP_OIDC_DEFAULT_ROLE"},
		{"bad mapped role", func(c *config.SignOn) { c.RoleClaim, c.RoleMap = "groups", map[string]string{"g": "root"} }, "SKRIP_OIDC_ROLE_MAP"},
		{"map without claim", func(c *config.SignOn) { c.RoleMap = map[string]string{"g": "admin"} }, "SKRIP_OIDC_ROLE_CLAIM"},
	} {
		c := base
		tc.edit(&c)
		s, err := New(context.Background(), c, nil, log)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.want)
		case tc.name == "off" && s != nil:
			t.Errorf("off: a service")
		case tc.name == "provider down":
			if s.Name() != "127.0.0.1" || s.cfg.Scopes[0] != "openid" {
				t.Errorf("provider down: name %q, scopes %v", s.Name(), s.cfg.Scopes)
			}
			if _, _, err := s.Start(context.Background(), "http://skrip.test", "/"); !errors.Is(err, ErrUnavailable) {
				t.Errorf("provider down: Start err = %v, want ErrUnavailable", err)
			}
		}
	}
}
