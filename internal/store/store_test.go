package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// eachDialect runs fn once on a fresh SQLite file and once on a fresh PostgreSQL schema.
func eachDialect(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Run("sqlite", func(t *testing.T) {
		s, err := Open(context.Background(), "", filepath.Join(t.TempDir(), "skrip.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		s, err := Open(context.Background(), testutil.PostgresURL(t), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		fn(t, s)
	})
}

func newUser(id, name, role string) User {
	return User{ID: id, Name: name, Role: role, CreatedAt: time.Now().Truncate(time.Millisecond)}
}

func TestUsers(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		u := newUser("u_1", "ada", RoleAuthor)
		u.PasswordHash = "$argon2id$x"
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateUser(ctx, newUser("u_2", "ada", RoleUser)); !errors.Is(err, ErrConflict) {
			t.Fatalf("duplicate name: err = %v, want ErrConflict", err)
		}
		if err := s.CreateUser(ctx, newUser("u_3", "bob", "root")); err == nil {
			t.Fatal("a role outside admin|author|user was stored")
		}
		got, err := s.User(ctx, "u_1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "ada" || got.Role != RoleAuthor || got.PasswordHash != u.PasswordHash || !got.CreatedAt.Equal(u.CreatedAt) {
			t.Fatalf("User = %+v, want %+v", got, u)
		}
		if byName, err := s.UserByName(ctx, "ada"); err != nil || byName.ID != "u_1" {
			t.Fatalf("UserByName = %+v, %v", byName, err)
		}
		if _, err := s.User(ctx, "u_missing"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing user: err = %v, want ErrNotFound", err)
		}
		if err := s.SetRole(ctx, "u_1", RoleAdmin); err != nil {
			t.Fatal(err)
		}
		if err := s.SetRole(ctx, "u_missing", RoleAdmin); !errors.Is(err, ErrNotFound) {
			t.Fatalf("SetRole on a missing user: err = %v", err)
		}
		if err := s.CreateUser(ctx, newUser("u_4", "bea", RoleUser)); err != nil {
			t.Fatal(err)
		}
		all, err := s.Users(ctx)
		if err != nil || len(all) != 2 || all[0].Name != "ada" || all[0].Role != RoleAdmin || all[1].Name != "bea" || all[1].PasswordHash != "" {
			t.Fatalf("Users = %+v, %v", all, err)
		}
		if n, err := s.CountUsers(ctx); err != nil || n != 2 {
			t.Fatalf("CountUsers = %d, %v", n, err)
		}
	})
}

func TestEnsureUserIsIdempotentAndConcurrent(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var wg sync.WaitGroup
		ids := make([]string, 8)
		errs := make([]error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u, err := s.EnsureUser(ctx, newUser("u_admin"+string(rune('a'+i)), "admin", RoleAdmin))
				ids[i], errs[i] = u.ID, err
			}()
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("EnsureUser returned two users: %q and %q", ids[0], ids[i])
			}
		}
		// SetRole won't demote the last active admin...
		if err := s.SetRole(ctx, ids[0], RoleUser); !errors.Is(err, ErrLastAdmin) {
			t.Fatalf("SetRole on the last admin: %v, want ErrLastAdmin", err)
		}
		// ...but one demoted by other means (by hand in the database) is promoted again.
		if _, err := s.exec(ctx, "UPDATE users SET role = 'user' WHERE id = ?", ids[0]); err != nil {
			t.Fatal(err)
		}
		u, err := s.EnsureUser(ctx, newUser("u_other", "admin", RoleAdmin))
		if err != nil || u.ID != ids[0] || u.Role != RoleAdmin {
			t.Fatalf("EnsureUser = %+v, %v; want the same admin, role admin", u, err)
		}
		if n, _ := s.CountUsers(ctx); n != 1 {
			t.Fatalf("CountUsers = %d, want 1", n)
		}
	})
}

func TestTokens(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, u := range []User{newUser("u_1", "ada", RoleUser), newUser("u_2", "bob", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		tok := Token{ID: "t_1", UserID: "u_1", Hash: "h1", Name: "laptop", CreatedAt: time.Now()}
		if err := s.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateToken(ctx, Token{ID: "t_2", UserID: "u_2", Hash: "h1", CreatedAt: time.Now()}); !errors.Is(err, ErrConflict) {
			t.Fatalf("duplicate hash: err = %v, want ErrConflict", err)
		}
		u, err := s.UserByTokenHash(ctx, "h1")
		if err != nil || u.ID != "u_1" {
			t.Fatalf("UserByTokenHash = %+v, %v", u, err)
		}
		if _, err := s.UserByTokenHash(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown hash: err = %v, want ErrNotFound", err)
		}
		// EnsureToken: idempotent for the same user, a conflict for another.
		for range 2 {
			if err := s.EnsureToken(ctx, Token{ID: "t_3", UserID: "u_1", Hash: "h2", CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.EnsureToken(ctx, Token{ID: "t_4", UserID: "u_2", Hash: "h2", CreatedAt: time.Now()}); !errors.Is(err, ErrConflict) {
			t.Fatalf("EnsureToken for another user: err = %v, want ErrConflict", err)
		}
	})
}

func TestVersionAndPing(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		v, err := s.Version(ctx)
		if err != nil || v == "" {
			t.Fatalf("Version = %q, %v", v, err)
		}
		want := map[Dialect]string{SQLite: "SQLite 3.", Postgres: "PostgreSQL "}[s.Dialect()]
		if len(v) < len(want) || v[:len(want)] != want {
			t.Fatalf("Version = %q, want prefix %q", v, want)
		}
	})
}

func TestOpenRejectsOtherURLs(t *testing.T) {
	_, err := Open(context.Background(), "mysql://root:secret@localhost/db", "")
	if err == nil {
		t.Fatal("mysql URL accepted")
	}
	if want := "xxxxx"; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret") {
		t.Fatalf("error %q must name the URL without its password", err)
	}
}

func TestMigrationsAreIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "skrip.db")
	for range 2 {
		s, err := Open(context.Background(), "", path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
}
