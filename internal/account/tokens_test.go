package account

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// TestTokenScopeAndExpiry: a token's scope words are checked and written in one order,
// its expiry is kept to SKRIP_TOKEN_MAX_LIFETIME, and an expired token is refused from
// the moment it expires, by the service's clock.
func TestTokenScopeAndExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{TokenMaxLifetime: 90 * 24 * time.Hour})
		clock := time.Now().Truncate(time.Millisecond)
		s.now = func() time.Time { return clock }
		ctx := context.Background()
		ada, _, err := s.CreateUser(ctx, root, "ada", store.RoleUser, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			words []string
			want  Scope
			bad   string
		}{
			{nil, ScopeAll, ""},
			{[]string{"read", "files"}, "files,read", ""},
			{[]string{"sandboxes,runs"}, "runs,sandboxes", ""},
			{[]string{"files", "all"}, ScopeAll, ""},
			{[]string{"files", "admin"}, "", "admin"},
		} {
			got, err := ParseScope(tc.words)
			if tc.bad != "" {
				if !errors.Is(err, ErrBadToken) || !strings.Contains(err.Error(), `"`+tc.bad+`"`) {
					t.Errorf("ParseScope(%q) = %q, %v; want ErrBadToken naming %q", tc.words, got, err, tc.bad)
				}
				continue
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseScope(%q) = %q, %v; want %q", tc.words, got, err, tc.want)
			}
		}
		for _, exp := range []string{"0s", "-1h", "soon", "91d"} {
			if _, _, err := s.CreateToken(ctx, root, ada.ID, TokenSpec{Name: "x", ExpiresIn: exp}); !errors.Is(err, ErrBadToken) {
				t.Errorf("expires_in %q: %v, want ErrBadToken", exp, err)
			}
		}
		// With a maximum set, a token asked for without an expiry gets the maximum.
		tok, _, err := s.CreateToken(ctx, root, ada.ID, TokenSpec{Name: "forever"})
		if err != nil || !tok.ExpiresAt.Equal(clock.Add(90*24*time.Hour)) {
			t.Fatalf("a token without expires_in under a maximum: %+v, %v", tok, err)
		}
		tok, secret, err := s.CreateToken(ctx, root, ada.ID, TokenSpec{Name: "ci", Scope: []string{"runs"}, ExpiresIn: "30d"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.AuthenticateToken(ctx, secret)
		if err != nil || c.User.ID != ada.ID || c.Scope != ScopeRuns || c.TokenID != tok.ID {
			t.Fatalf("AuthenticateToken = %+v, %v", c, err)
		}
		clock = clock.Add(30*24*time.Hour - time.Millisecond)
		if _, err := s.Authenticate(ctx, secret); err != nil {
			t.Fatalf("a token a millisecond before its expiry: %v", err)
		}
		clock = clock.Add(time.Millisecond)
		if _, err := s.Authenticate(ctx, secret); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("a token at its expiry: %v, want ErrUnauthenticated", err)
		}
	})
}

// TestTokenLastUsed: a token's last use is recorded on its first use and then at most
// once a minute, however often it is used.
func TestTokenLastUsed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{})
		clock := time.Now().Truncate(time.Millisecond)
		s.now = func() time.Time { return clock }
		ctx := context.Background()
		ada, _, err := s.CreateUser(ctx, root, "ada", store.RoleUser, "")
		if err != nil {
			t.Fatal(err)
		}
		tok, secret, err := s.CreateToken(ctx, root, ada.ID, TokenSpec{Name: "laptop"})
		if err != nil {
			t.Fatal(err)
		}
		lastUsed := func() time.Time {
			t.Helper()
			got, err := st.Token(ctx, tok.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got.LastUsedAt
		}
		if !lastUsed().IsZero() {
			t.Fatal("a token never used has a last use")
		}
		first := clock
		for i := 0; i < 5; i++ {
			if _, err := s.Authenticate(ctx, secret); err != nil {
				t.Fatal(err)
			}
			if got := lastUsed(); !got.Equal(first) {
				t.Fatalf("after use %d within the minute: last used %v, want the first use %v", i, got, first)
			}
			clock = clock.Add(10 * time.Second)
		}
		clock = first.Add(time.Minute)
		if _, err := s.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(); !got.Equal(clock) {
			t.Fatalf("a minute on: last used %v, want %v", got, clock)
		}
		// The store writes only when the recorded use is a minute old, whoever asks.
		if wrote, err := st.TouchToken(ctx, tok.ID, clock.Add(30*time.Second), time.Minute); err != nil || wrote {
			t.Fatalf("TouchToken within the minute wrote: %v, %v", wrote, err)
		}
	})
}

// TestTokenListAndRevoke: a user lists and revokes their own tokens; someone else's is
// missing to them (404), while an admin lists and revokes anyone's. A revoked token is
// refused at once.
func TestTokenListAndRevoke(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{})
		ctx := context.Background()
		admin, _, err := s.CreateUser(ctx, root, "root", store.RoleAdmin, "")
		if err != nil {
			t.Fatal(err)
		}
		ada, adas, err := s.CreateUser(ctx, root, "ada", store.RoleUser, "")
		if err != nil {
			t.Fatal(err)
		}
		bob, _, err := s.CreateUser(ctx, root, "bob", store.RoleUser, "")
		if err != nil {
			t.Fatal(err)
		}
		adaTok, adaSecret, err := s.CreateToken(ctx, root, ada.ID, TokenSpec{Name: "laptop", Scope: []string{"files"}})
		if err != nil {
			t.Fatal(err)
		}
		own, err := s.Tokens(ctx, ada, "")
		if err != nil || len(own) != 2 || own[1].ID != adaTok.ID || own[1].Scope != "files" || own[1].UserName != "ada" || own[1].Hash == "" {
			t.Fatalf("ada's tokens = %+v, %v", own, err)
		}
		if _, err := s.Tokens(ctx, bob, "ada"); !errors.Is(err, ErrNotFound) {
			t.Errorf("bob lists ada's tokens: %v, want ErrNotFound", err)
		}
		if _, err := s.Tokens(ctx, bob, "*"); !errors.Is(err, ErrForbidden) {
			t.Errorf("bob lists every token: %v, want ErrForbidden", err)
		}
		if _, err := s.RevokeToken(ctx, bob, adaTok.ID); !errors.Is(err, ErrTokenNotFound) {
			t.Errorf("bob revokes ada's token: %v, want ErrTokenNotFound", err)
		}
		if _, err := s.Authenticate(ctx, adaSecret); err != nil {
			t.Fatalf("ada's token after bob's try: %v", err)
		}
		all, err := s.Tokens(ctx, admin, "*")
		if err != nil || len(all) != 3+1 { // each user's first token, and ada's laptop
			t.Fatalf("every token = %d, %v", len(all), err)
		}
		if got, err := s.Tokens(ctx, admin, "ada"); err != nil || len(got) != 2 {
			t.Fatalf("the admin lists ada's: %d, %v", len(got), err)
		}
		if _, err := s.RevokeToken(ctx, ada, adaTok.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Authenticate(ctx, adaSecret); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("a revoked token: %v, want ErrUnauthenticated", err)
		}
		if _, err := s.RevokeToken(ctx, ada, adaTok.ID); !errors.Is(err, ErrTokenNotFound) {
			t.Errorf("revoking it again: %v, want ErrTokenNotFound", err)
		}
		// A user holds at most MaxTokensPerUser tokens.
		for i := 1; i < MaxTokensPerUser; i++ { // bob holds his first token already
			if _, _, err := s.CreateToken(ctx, root, bob.ID, TokenSpec{Name: "t"}); err != nil {
				t.Fatalf("bob's token %d: %v", i+1, err)
			}
		}
		if _, _, err := s.CreateToken(ctx, root, bob.ID, TokenSpec{Name: "one too many"}); !errors.Is(err, ErrTokenLimit) {
			t.Fatalf("bob's token past the limit: %v, want ErrTokenLimit", err)
		}
		if _, err := s.RevokeToken(ctx, admin, own[0].ID); err != nil {
			t.Errorf("the admin revokes ada's first token: %v", err)
		}
		if _, err := s.Authenticate(ctx, adas); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("ada's first token after the admin revoked it: %v", err)
		}
	})
}

// TestWebSessionExpiry: a browser sign-in ends when idle longer than
// SKRIP_WEB_SESSION_IDLE, or at SKRIP_WEB_SESSION_MAX however much it is used; use
// moves its last sight at most once a minute; the janitor's ExpireSignIns removes both
// kinds; and signing out everywhere ends them all.
func TestWebSessionExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{WebSessionIdle: time.Hour, WebSessionMax: 3 * time.Hour})
		clock := time.Now().Truncate(time.Millisecond)
		s.now = func() time.Time { return clock }
		ctx := context.Background()
		ada, _, err := s.CreateUser(ctx, root, "ada", store.RoleUser, "")
		if err != nil {
			t.Fatal(err)
		}
		client := Client{Address: "192.0.2.7", UserAgent: "Mozilla/5.0 " + strings.Repeat("x", 1000)}
		busy, err := s.StartSession(ctx, ada, client)
		if err != nil {
			t.Fatal(err)
		}
		idle, err := s.StartSession(ctx, ada, client)
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.WebSessions(ctx, ada.ID)
		if err != nil || len(list) != 2 || list[0].Address != "192.0.2.7" || len(list[0].UserAgent) != MaxUserAgentLen ||
			list[0].ID == "" || list[0].ID == list[1].ID {
			t.Fatalf("WebSessions = %+v, %v", list, err)
		}
		start := clock
		// busy is used every 50 minutes; idle is not.
		for clock.Sub(start) < 3*time.Hour-50*time.Minute {
			clock = clock.Add(50 * time.Minute)
			if _, err := s.SessionUser(ctx, busy); err != nil {
				t.Fatalf("a session used every 50 minutes, at %v: %v", clock.Sub(start), err)
			}
		}
		if _, err := s.SessionUser(ctx, idle); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("a session idle for %v: %v, want ErrUnauthenticated", clock.Sub(start), err)
		}
		if n, err := s.ExpireSignIns(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireSignIns with one idle session = %d, %v", n, err)
		}
		clock = start.Add(3 * time.Hour)
		if _, err := s.SessionUser(ctx, busy); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("a session used all along, at its absolute expiry: %v, want ErrUnauthenticated", err)
		}
		if n, err := s.ExpireSignIns(ctx); err != nil || n != 1 {
			t.Fatalf("ExpireSignIns with one session past its expiry = %d, %v", n, err)
		}

		// Last sight: written on first use past a minute, not on every request.
		a, err := s.StartSession(ctx, ada, client)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.StartSession(ctx, ada, client)
		if err != nil {
			t.Fatal(err)
		}
		seen := clock
		clock = clock.Add(30 * time.Second)
		ws, _, err := s.Session(ctx, a)
		if err != nil || !ws.LastSeenAt.Equal(seen) {
			t.Fatalf("30s on, last seen %v, %v; want unchanged %v", ws.LastSeenAt, err, seen)
		}
		clock = clock.Add(31 * time.Second)
		if _, _, err := s.Session(ctx, a); err != nil {
			t.Fatal(err)
		}
		if ws, _, _ := st.WebSessionByHash(ctx, ws.Hash, clock, time.Hour); !ws.LastSeenAt.Equal(clock) {
			t.Fatalf("61s on, stored last seen %v, want %v", ws.LastSeenAt, clock)
		}

		if err := s.EndSession(ctx, ada.ID, "ws_nope"); !errors.Is(err, ErrWebSessionNotFound) {
			t.Errorf("ending a session never started: %v", err)
		}
		if n, err := s.EndSessions(ctx, ada.ID); err != nil || n != 2 {
			t.Fatalf("EndSessions = %d, %v; want 2", n, err)
		}
		for _, secret := range []string{a, b} {
			if _, err := s.SessionUser(ctx, secret); !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("a session after signing out everywhere: %v", err)
			}
		}
	})
}

// TestEveryTokenKeepsTheRules (a review found the CLI login's and the admin page's
// tokens outside them): under SKRIP_TOKEN_MAX_LIFETIME a token made without an expiry and one
// from a CLI login expire after it, and a user holding MaxTokensPerUser gets no more from
// either; the first-start admin's token never expires.
func TestEveryTokenKeepsTheRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		s := New(st, Limits{TokenMaxLifetime: 24 * time.Hour})
		clock := time.Now().Truncate(time.Millisecond)
		s.now = func() time.Time { return clock }
		ctx := context.Background()
		ada, _, err := s.CreateUser(ctx, root, "ada", store.RoleUser, "")
		if err != nil {
			t.Fatal(err)
		}
		login := func() (CLIToken, error) {
			t.Helper()
			l, err := s.StartCLILogin(ctx, "192.0.2.7", "laptop")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.DecideCLILogin(ctx, Actor{User: ada}, l.UserCode, true); err != nil {
				t.Fatal(err)
			}
			return s.PollCLILogin(ctx, l.DeviceCode)
		}
		if _, _, err := s.CreateToken(ctx, root, ada.ID, TokenSpec{Name: "admin page"}); err != nil {
			t.Fatal(err)
		}
		if _, err := login(); err != nil {
			t.Fatal(err)
		}
		toks, err := st.Tokens(ctx, ada.ID)
		if err != nil || len(toks) != 3 {
			t.Fatalf("ada's tokens: %d, %v", len(toks), err)
		}
		for _, tok := range toks {
			if !tok.ExpiresAt.Equal(clock.Add(24 * time.Hour)) {
				t.Errorf("token %q expires at %v, want the maximum lifetime from now", tok.Name, tok.ExpiresAt)
			}
		}
		for i := len(toks); i < MaxTokensPerUser; i++ {
			if _, _, err := s.CreateToken(ctx, root, ada.ID, TokenSpec{Name: "more"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.CreateToken(ctx, root, ada.ID, TokenSpec{Name: "one too many"}); !errors.Is(err, ErrTokenLimit) {
			t.Fatalf("CreateToken past the limit: %v, want ErrTokenLimit", err)
		}
		if _, err := login(); !errors.Is(err, ErrTokenLimit) {
			t.Fatalf("a CLI login past the limit: %v, want ErrTokenLimit", err)
		}
	})
	// The first-start admin's token, the operator's way in, never expires.
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "", filepath.Join(dir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(st, Limits{TokenMaxLifetime: 24 * time.Hour})
	if err := s.Bootstrap(ctx, "", dir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	admin, err := st.UserByName(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	toks, err := st.Tokens(ctx, admin.ID)
	if err != nil || len(toks) != 1 || !toks[0].ExpiresAt.IsZero() {
		t.Fatalf("the first-start admin token: %+v, %v; want one that never expires", toks, err)
	}
}
