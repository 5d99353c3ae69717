package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestUserStates: disabling ends a user's browser sign-ins and refuses their tokens;
// the last active admin cannot be disabled, also when two admins disable each other at
// once; a purged user is a tombstone whose name is free again.
func TestUserStates(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now()
		for _, u := range []User{newUser("u_a1", "a1", RoleAdmin), newUser("u_a2", "a2", RoleAdmin), newUser("u_x", "x", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		s.CreateToken(ctx, Token{ID: "t_x", UserID: "u_x", Hash: "hx", Name: "n", CreatedAt: now})
		s.CreateWebSession(ctx, WebSession{Hash: "wx", UserID: "u_x", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
		if u, err := s.SetUserState(ctx, "u_x", StateDisabled); err != nil || u.State != StateDisabled {
			t.Fatalf("disable: %+v %v", u, err)
		}
		if _, err := s.UserByTokenHash(ctx, "hx"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a disabled user's token: %v", err)
		}
		if n, _ := s.CountUserRows(ctx, "web_sessions", "user_id", "u_x"); n != 0 {
			t.Fatalf("%d web sessions left after disabling", n)
		}
		if _, err := s.SetUserState(ctx, "u_x", StateActive); err != nil {
			t.Fatal(err)
		}
		if u, err := s.UserByTokenHash(ctx, "hx"); err != nil || u.ID != "u_x" {
			t.Fatalf("an enabled user's token: %v", err)
		}

		// Two admins disabling each other at once: one of them stays.
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, id := range []string{"u_a1", "u_a2"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.SetUserState(ctx, id, StateDisabled)
			}()
		}
		wg.Wait()
		refused := 0
		for _, err := range errs {
			if errors.Is(err, ErrLastAdmin) {
				refused++
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if refused != 1 {
			t.Fatalf("of two admins disabling each other, %d were refused", refused)
		}
		var left string
		for _, id := range []string{"u_a1", "u_a2"} {
			if last, _ := s.LastActiveAdmin(ctx, id); last {
				left = id
			}
		}
		if left == "" {
			t.Fatal("no last active admin")
		}

		// Purged: the rows go, the user stays as a tombstone, the name is free.
		s.PutSettings(ctx, ToolSettings{UserID: "u_x", ToolID: "tool", Scope: "", Values: []byte("{}"), UpdatedAt: now})
		if err := s.PurgeUser(ctx, "u_x"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range UserTables() {
			if n, err := s.CountUserRows(ctx, tc[0], tc[1], "u_x"); err != nil || n != 0 {
				t.Fatalf("%s.%s: %d rows left (%v)", tc[0], tc[1], n, err)
			}
		}
		u, err := s.User(ctx, "u_x")
		if err != nil || u.State != StateDeleted || u.Name != DeletedName("u_x") || u.PasswordHash != "" {
			t.Fatalf("tombstone: %+v %v", u, err)
		}
		for _, l := range mustUsers(t, s) {
			if l.ID == "u_x" {
				t.Fatal("Users lists a deleted user")
			}
		}
		if err := s.CreateUser(ctx, newUser("u_x2", "x", RoleUser)); err != nil {
			t.Fatalf("the name of a deleted user: %v", err)
		}
	})
}

func mustUsers(t *testing.T, s *Store) []User {
	t.Helper()
	us, err := s.Users(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return us
}

// TestInvitationOnce: of many accepting one invitation at once, one makes a user; an
// expired one makes none; a taken name leaves it unused.
func TestInvitationOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now()
		s.CreateUser(ctx, newUser("u_adm", "adm", RoleAdmin))
		inv := Invitation{ID: "inv_1", Hash: "h1", Role: RoleAuthor, CreatedBy: "u_adm", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateInvitation(ctx, inv); err != nil {
			t.Fatal(err)
		}
		if err := s.AcceptInvitation(ctx, "inv_1", newUser("u_taken", "adm", RoleAuthor), now); !errors.Is(err, ErrConflict) {
			t.Fatalf("a taken name: %v", err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		made := 0
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.AcceptInvitation(ctx, "inv_1", newUser("u_n"+string(rune('a'+i)), "new"+string(rune('a'+i)), RoleAuthor), now)
				if err == nil {
					mu.Lock()
					made++
					mu.Unlock()
				} else if !errors.Is(err, ErrGone) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if made != 1 {
			t.Fatalf("one invitation made %d users", made)
		}
		if got, _ := s.InvitationByHash(ctx, "h1"); got.UsedAt == nil || got.UsedBy == "" {
			t.Fatalf("not marked used: %+v", got)
		}
		s.CreateInvitation(ctx, Invitation{ID: "inv_2", Hash: "h2", Role: RoleUser, CreatedBy: "u_adm", CreatedAt: now, ExpiresAt: now.Add(time.Minute)})
		if err := s.AcceptInvitation(ctx, "inv_2", newUser("u_late", "late", RoleUser), now.Add(2*time.Minute)); !errors.Is(err, ErrGone) {
			t.Fatalf("an expired invitation: %v", err)
		}
		if n, _ := s.DeleteStaleInvitations(ctx, now.Add(2*time.Hour)); n != 2 {
			t.Fatalf("stale invitations removed: %d", n)
		}
	})
}
