package signon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/skrip-dev/skrip/internal/config"
)

func TestMapRole(t *testing.T) {
	m := map[string]string{"skrip-admins": "admin", "teachers": "author", "staff": "user"}
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
		RoleMap: map[string]string{"g-admins": "admin"}, DefaultRole: "author"}}
	idt := &oidc.IDToken{Issuer: "https://login.microsoftonline.com/t/v2.0", Subject: "s1"}
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   error
		role   string
	}{
		{"verified", map[string]any{"email": "a@skola.se", "email_verified": true, "groups": []any{"g-admins"}}, nil, "admin"},
		{"unsaid", map[string]any{"email": "a@Skola.SE"}, nil, ""},
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
		if err == nil && (id.Role != tc.role || !id.ManagedRole || id.DefaultRole != "author" || id.Subject != "s1") {
			t.Errorf("%s: identity %+v, want role %q", tc.name, id, tc.role)
		}
	}
	open := &Service{cfg: config.SignOn{DefaultRole: "user"}}
	if id, err := open.identity(idt, map[string]any{"email": "x@anywhere.example", "email_verified": false}); err != nil || id.ManagedRole {
		t.Fatalf("no domain list: %+v, %v; want anyone in, roles unmanaged", id, err)
	}
}
