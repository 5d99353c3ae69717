package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTokenRows: a token keeps its scope and expiry; the lookup refuses it from its
// expiry on and for a user who is not active; TouchToken writes only when the last use
// is older than the interval; listings name the holder; a deleted token is gone.
func TestTokenRows(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_1", "ada", RoleUser), newUser("u_2", "bob", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateToken(ctx, Token{ID: "t_1", UserID: "u_1", Hash: "h1", Name: "ci", Scope: "files,read", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, Token{ID: "t_2", UserID: "u_2", Hash: "h2", CreatedAt: now.Add(time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		tok, u, err := s.TokenByHash(ctx, "h1", now)
		if err != nil || u.ID != "u_1" || tok.Scope != "files,read" || !tok.ExpiresAt.Equal(now.Add(time.Hour)) || !tok.LastUsedAt.IsZero() || tok.UserName != "ada" {
			t.Fatalf("TokenByHash = %+v, %+v, %v", tok, u, err)
		}
		if _, _, err := s.TokenByHash(ctx, "h1", now.Add(time.Hour)); !errors.Is(err, ErrNotFound) {
			t.Errorf("a token at its expiry: %v, want ErrNotFound", err)
		}
		if tok, _, err := s.TokenByHash(ctx, "h2", now.Add(100*365*24*time.Hour)); err != nil || tok.Scope != ScopeAll || !tok.ExpiresAt.IsZero() {
			t.Errorf("a token without expiry, a century on: %+v, %v", tok, err)
		}
		if _, err := s.exec(ctx, "UPDATE users SET state = 'disabled' WHERE id = 'u_2'"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.TokenByHash(ctx, "h2", now); !errors.Is(err, ErrNotFound) {
			t.Errorf("a disabled user's token: %v, want ErrNotFound", err)
		}

		for i, tc := range []struct {
			at    time.Time
			wrote bool
		}{{now, true}, {now.Add(59 * time.Second), false}, {now.Add(time.Minute), true}, {now.Add(90 * time.Second), false}} {
			if wrote, err := s.TouchToken(ctx, "t_1", tc.at, time.Minute); err != nil || wrote != tc.wrote {
				t.Errorf("touch %d at +%v: wrote %v, %v; want %v", i, tc.at.Sub(now), wrote, err, tc.wrote)
			}
		}
		if got, err := s.Token(ctx, "t_1"); err != nil || !got.LastUsedAt.Equal(now.Add(time.Minute)) {
			t.Errorf("last used = %v, %v", got.LastUsedAt, err)
		}

		if own, err := s.Tokens(ctx, "u_1"); err != nil || len(own) != 1 || own[0].ID != "t_1" {
			t.Errorf("Tokens(u_1) = %+v, %v", own, err)
		}
		if all, err := s.Tokens(ctx, ""); err != nil || len(all) != 2 || all[1].UserName != "bob" {
			t.Errorf("Tokens() = %+v, %v", all, err)
		}
		if err := s.DeleteToken(ctx, "t_1"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteToken(ctx, "t_1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleting it again: %v", err)
		}
		if _, _, err := s.TokenByHash(ctx, "h1", now); !errors.Is(err, ErrNotFound) {
			t.Errorf("a deleted token: %v", err)
		}
	})
}

// TestWebSessionRows: a session is live until its absolute expiry and while seen within
// the idle time; the sweep removes the others; one user's sessions end by id or all
// together, and never another user's.
func TestWebSessionRows(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_1", "ada", RoleUser), newUser("u_2", "bob", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		idle := time.Hour
		for _, ws := range []WebSession{
			{ID: "ws_fresh", Hash: "a", UserID: "u_1", CreatedAt: now, ExpiresAt: now.Add(3 * time.Hour), Address: "192.0.2.1", UserAgent: "Firefox"},
			{ID: "ws_idle", Hash: "b", UserID: "u_1", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(time.Hour)},
			{ID: "ws_old", Hash: "c", UserID: "u_1", CreatedAt: now.Add(-3 * time.Hour), LastSeenAt: now, ExpiresAt: now},
			{ID: "ws_bob", Hash: "d", UserID: "u_2", CreatedAt: now, ExpiresAt: now.Add(3 * time.Hour)},
		} {
			if err := s.CreateWebSession(ctx, ws); err != nil {
				t.Fatal(err)
			}
		}
		ws, u, err := s.WebSessionByHash(ctx, "a", now, idle)
		if err != nil || u.ID != "u_1" || ws.ID != "ws_fresh" || ws.Address != "192.0.2.1" || ws.UserAgent != "Firefox" || !ws.LastSeenAt.Equal(now) {
			t.Fatalf("WebSessionByHash = %+v, %+v, %v", ws, u, err)
		}
		for _, h := range []string{"b", "c"} {
			if _, _, err := s.WebSessionByHash(ctx, h, now, idle); !errors.Is(err, ErrNotFound) {
				t.Errorf("session %s: %v, want ErrNotFound", h, err)
			}
		}
		if live, err := s.WebSessions(ctx, "u_1", now, idle); err != nil || len(live) != 1 || live[0].ID != "ws_fresh" {
			t.Errorf("WebSessions = %+v, %v", live, err)
		}
		if wrote, err := s.TouchWebSession(ctx, "ws_fresh", now.Add(30*time.Second), time.Minute); err != nil || wrote {
			t.Errorf("a touch within the minute wrote: %v, %v", wrote, err)
		}
		if wrote, err := s.TouchWebSession(ctx, "ws_fresh", now.Add(50*time.Minute), time.Minute); err != nil || !wrote {
			t.Errorf("a touch 50 minutes on: %v, %v", wrote, err)
		}
		if _, _, err := s.WebSessionByHash(ctx, "a", now.Add(100*time.Minute), idle); err != nil {
			t.Errorf("a session seen 50 minutes before: %v", err)
		}
		if n, err := s.DeleteExpiredWebSessions(ctx, now, idle); err != nil || n != 2 {
			t.Errorf("DeleteExpiredWebSessions = %d, %v; want the idle and the old", n, err)
		}
		if err := s.DeleteWebSessionByID(ctx, "u_1", "ws_bob"); !errors.Is(err, ErrNotFound) {
			t.Errorf("ending bob's session as ada: %v", err)
		}
		if n, err := s.DeleteUserWebSessions(ctx, "u_1"); err != nil || n != 1 {
			t.Errorf("DeleteUserWebSessions = %d, %v", n, err)
		}
		if _, _, err := s.WebSessionByHash(ctx, "d", now, idle); err != nil {
			t.Errorf("bob's session after ada signed out everywhere: %v", err)
		}
		if err := s.DeleteWebSessionByID(ctx, "u_2", "ws_bob"); err != nil {
			t.Error(err)
		}
	})
}
