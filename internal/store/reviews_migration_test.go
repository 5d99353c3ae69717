package store

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestReviewerRoleMigration: migration 36 lets a user be a reviewer. On SQLite it
// rebuilds the users table; a database with users, their tokens and a tool keeps them
// all, and the tables that reference users still cascade and refuse as before.
func TestReviewerRoleMigration(t *testing.T) {
	ctx := context.Background()
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			var s *Store
			var err error
			gd := goose.DialectSQLite3
			if d == SQLite {
				s, err = openSQLite(ctx, filepath.Join(t.TempDir(), "skrip.db"))
			} else {
				s, err = openPostgres(ctx, testutil.PostgresURL(t))
				gd = goose.DialectPostgres
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			dir, _ := fs.Sub(migrations, "migrations/"+string(d))
			p, err := goose.NewProvider(gd, s.db, dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.UpTo(ctx, 35); err != nil {
				t.Fatal(err)
			}
			now := time.Now().Truncate(time.Millisecond)
			// User u_a with tool t_1, published, in the columns of migration 35
			// (CreateTool writes tables made later).
			if err := s.CreateUser(ctx, newUser("u_a", "author", RoleAuthor)); err != nil {
				t.Fatal(err)
			}
			seedToolSQL(t, s, "t_1", "v_1")
			if _, err := s.exec(ctx, "UPDATE tools SET published_version_id = 'v_1' WHERE id = 't_1'"); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateUser(ctx, newUser("u_b", "bo", RoleUser)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.exec(ctx, "UPDATE users SET oidc_issuer = 'https://idp', oidc_subject = 'sub-b', password_hash = 'h' WHERE id = 'u_b'"); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateToken(ctx, Token{ID: "tok_b", UserID: "u_b", Hash: "hash-b", Name: "cli", CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.exec(ctx, "UPDATE users SET role = 'reviewer' WHERE id = 'u_b'"); err == nil {
				t.Fatal("before migration 36 a reviewer was accepted")
			}
			before, err := s.User(ctx, "u_b")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.SetRole(ctx, "u_b", RoleReviewer); err != nil {
				t.Fatalf("making bo a reviewer: %v", err)
			}
			u, err := s.User(ctx, "u_b")
			if err != nil || u.Role != RoleReviewer || u.OIDCIssuer != "https://idp" || u.OIDCSubject != "sub-b" || u.PasswordHash != "h" || u.State != StateActive ||
				!u.CreatedAt.Equal(before.CreatedAt) {
				t.Fatalf("bo after the migration: %+v, %v", u, err)
			}
			if _, err := s.exec(ctx, "UPDATE users SET role = 'root' WHERE id = 'u_b'"); err == nil {
				t.Fatal("a role that is none was accepted")
			}
			if tool, err := s.Tool(ctx, "t_1"); err != nil || tool.AuthorID != "u_a" {
				t.Fatalf("the tool after the migration: %+v, %v", tool, err)
			}
			if _, err := s.UserByName(ctx, "bo"); err != nil {
				t.Fatalf("the name index: %v", err)
			}
			// Foreign keys still hold: a token of no user is refused, and a user's
			// tokens go with them.
			if err := s.CreateToken(ctx, Token{ID: "tok_x", UserID: "u_nobody", Hash: "hash-x", Name: "x", CreatedAt: now}); err == nil {
				t.Fatal("a token of no user was stored")
			}
			if _, err := s.exec(ctx, "DELETE FROM users WHERE id = 'u_b'"); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := s.queryRow(ctx, "SELECT COUNT(*) FROM tokens WHERE user_id = 'u_b'").Scan(&n); err != nil || n != 0 {
				t.Fatalf("bo's tokens after bo: %d, %v", n, err)
			}
		})
	}
}
