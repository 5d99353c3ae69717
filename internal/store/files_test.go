package store

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestFileOwnerKeysMigration: a database with files from before keys were per owner keeps
// every file, and afterwards two owners may hold the same key.
func TestFileOwnerKeysMigration(t *testing.T) {
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
			// 7 is the last version with one owner per key.
			if _, err := p.UpTo(ctx, 7); err != nil {
				t.Fatal(err)
			}
			// The users table of version 7, written as it was then.
			if _, err := s.exec(ctx, `INSERT INTO users (id, name, role, created_at) VALUES ('u_1', 'ada', 'user', 1), ('u_2', 'bob', 'user', 1)`); err != nil {
				t.Fatal(err)
			}
			if _, err := s.exec(ctx, `INSERT INTO files (key, owner_id, size, checksum, content_type, original_name, created_at, expires_at, blob_key)
				VALUES ('files/a', 'u_1', 3, 'sha256:aa', 'text/plain', 'a.txt', 1, NULL, 'files/_objects/b_1'),
				       ('files/b', 'u_2', 4, 'sha256:bb', 'text/csv', 'b.csv', 2, 5000, 'files/_objects/b_2')`); err != nil {
				t.Fatal(err)
			}
			if err := s.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			a, err := s.FileOf(ctx, "u_1", "files/a")
			if err != nil || a.Size != 3 || a.Checksum != "sha256:aa" || a.OriginalName != "a.txt" || a.BlobKey != "files/_objects/b_1" || a.ExpiresAt != nil {
				t.Fatalf("files/a after the migration: %+v, %v", a, err)
			}
			b, err := s.FileOf(ctx, "u_2", "files/b")
			if err != nil || b.ExpiresAt == nil || b.ContentType != "text/csv" {
				t.Fatalf("files/b after the migration: %+v, %v", b, err)
			}
			// Migration 00016 gives every file from before it a version id of its own.
			if !strings.HasPrefix(a.VersionID, "v_") || !strings.HasPrefix(b.VersionID, "v_") || a.VersionID == b.VersionID {
				t.Fatalf("version ids after the migration: %q and %q", a.VersionID, b.VersionID)
			}
			now := time.Now()
			if _, err := s.ClaimFileKey(ctx, "u_2", "files/a", now, now.Add(time.Hour)); err != nil {
				t.Fatalf("bob claims ada's key: %v", err)
			}
			if err := s.CommitFile(ctx, File{Key: "files/a", OwnerID: "u_2", Size: 1, Checksum: "sha256:cc", BlobKey: "files/_objects/b_3", CreatedAt: now},
				0, 1<<20, 1<<20, now); err != nil {
				t.Fatal(err)
			}
			if a2, err := s.FileOf(ctx, "u_1", "files/a"); err != nil || a2.BlobKey != "files/_objects/b_1" {
				t.Fatalf("ada's file after bob's commit: %+v, %v", a2, err)
			}
		})
	}
}
