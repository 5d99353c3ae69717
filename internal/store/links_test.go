package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFileLinks: a link is made only for a committed file, is found by its token's hash,
// counts its downloads up to the limit (exactly one of many racing for the last), outlives
// an overwrite of its file and goes with the file, when revoked or when it expires.
func TestFileLinks(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_1", "ada", RoleUser), newUser("u_2", "bob", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		commit := func(owner, key, blobKey string) {
			t.Helper()
			if _, err := s.ClaimFileKey(ctx, owner, key, now, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			if err := s.CommitFile(ctx, File{Key: key, OwnerID: owner, Size: 3, Checksum: "sha256:" + blobKey, BlobKey: blobKey, CreatedAt: now}, 0, 1<<20, 1<<20, now); err != nil {
				t.Fatal(err)
			}
		}
		commit("u_1", "files/a", "b_1")
		one := int64(1)
		link := func(id, owner, key string, maxDl *int64, expires time.Time) FileLink {
			return FileLink{ID: id, TokenHash: "h_" + id, OwnerID: owner, Key: key, CreatedBy: owner, CreatedAt: now, ExpiresAt: expires, MaxDownloads: maxDl}
		}
		if err := s.CreateFileLink(ctx, link("l_1", "u_1", "files/a", &one, now.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		// Bob has no files/a; a pending claim is no file either.
		if err := s.CreateFileLink(ctx, link("l_2", "u_2", "files/a", nil, now.Add(time.Hour))); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a link of a file the owner does not have: err = %v, want ErrNotFound", err)
		}
		if _, err := s.ClaimFileKey(ctx, "u_1", "files/pending", now, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateFileLink(ctx, link("l_3", "u_1", "files/pending", nil, now.Add(time.Hour))); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a link of a pending upload: err = %v, want ErrNotFound", err)
		}
		got, err := s.FileLinkByToken(ctx, "h_l_1")
		if err != nil || got.ID != "l_1" || got.OwnerID != "u_1" || got.Key != "files/a" || got.MaxDownloads == nil || *got.MaxDownloads != 1 ||
			got.Downloads != 0 || !got.ExpiresAt.Equal(now.Add(time.Hour)) || !got.CreatedAt.Equal(now) {
			t.Fatalf("FileLinkByToken = %+v, %v", got, err)
		}
		if _, err := s.FileLinkByToken(ctx, "h_nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("an unknown token: err = %v", err)
		}
		// A disabled owner's links stop with their tokens, and work again when enabled.
		if _, err := s.SetUserState(ctx, "u_1", StateDisabled); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FileLinkByToken(ctx, "h_l_1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a disabled owner's link: err = %v, want ErrNotFound", err)
		}
		if _, err := s.SetUserState(ctx, "u_1", StateActive); err != nil {
			t.Fatal(err)
		}
		if _, err := s.FileLinkByToken(ctx, "h_l_1"); err != nil {
			t.Fatalf("the link once its owner is enabled: %v", err)
		}

		// Eight downloads of a 100-byte file race for the one there is.
		var wg sync.WaitGroup
		var counted atomic.Int32
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := s.ReserveFileLinkRead(ctx, "l_1", now, 100, 100, true)
				if err != nil {
					t.Error(err)
				}
				if ok {
					counted.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := counted.Load(); n != 1 {
			t.Fatalf("%d of 8 racing downloads counted at max_downloads 1, want exactly 1", n)
		}
		if err := s.ReturnFileLinkRead(ctx, "l_1", 100, true); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.ReserveFileLinkRead(ctx, "l_1", now, 100, 100, true); !ok || err != nil {
			t.Fatalf("a download given back could not be counted again: %v, %v", ok, err)
		}
		if ok, _ := s.ReserveFileLinkRead(ctx, "l_1", now, 0, 100, true); ok {
			t.Fatal("a download past max_downloads was counted")
		}
		// Cut after 40 bytes: the 60 not sent come back, and a resume may read them, and
		// no byte more, whatever range asks.
		if err := s.ReturnFileLinkRead(ctx, "l_1", 60, false); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.ReserveFileLinkRead(ctx, "l_1", now, 61, 100, false); ok {
			t.Fatal("61 bytes were reserved where 60 were left")
		}
		if ok, err := s.ReserveFileLinkRead(ctx, "l_1", now, 60, 100, false); !ok || err != nil {
			t.Fatalf("the 60 bytes left could not be reserved: %v, %v", ok, err)
		}
		if ok, _ := s.ReserveFileLinkRead(ctx, "l_1", now, 1, 100, false); ok {
			t.Fatal("a byte past max_downloads × size was reserved")
		}
		if l, _ := s.FileLinkByToken(ctx, "h_l_1"); l.BytesServed != 100 || l.Downloads != 1 {
			t.Fatalf("after one whole download: %+v", l)
		}

		// No limit, but an expiry.
		if err := s.CreateFileLink(ctx, link("l_4", "u_1", "files/a", nil, now.Add(time.Minute))); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if ok, err := s.ReserveFileLinkRead(ctx, "l_4", now, 100, 100, true); !ok || err != nil {
				t.Fatalf("a link without a limit refused a download: %v, %v", ok, err)
			}
		}
		if ok, _ := s.ReserveFileLinkRead(ctx, "l_4", now.Add(time.Minute), 0, 100, false); ok {
			t.Fatal("a download at the link's expiry was counted")
		}
		list, err := s.FileLinks(ctx, "u_1", "files/a", now)
		if err != nil || len(list) != 2 || list[0].ID != "l_4" || list[0].Downloads != 3 || list[1].ID != "l_1" || list[1].Downloads != 1 {
			t.Fatalf("FileLinks = %+v, %v", list, err)
		}
		if list, _ := s.FileLinks(ctx, "u_1", "files/a", now.Add(30*time.Minute)); len(list) != 1 || list[0].ID != "l_1" {
			t.Fatalf("FileLinks after l_4 expired = %+v", list)
		}
		if list, _ := s.FileLinks(ctx, "u_2", "files/a", now); len(list) != 0 {
			t.Fatalf("bob sees ada's links: %+v", list)
		}

		// An overwrite keeps the links; the janitor's pass removes the expired one.
		commit("u_1", "files/a", "b_2")
		if _, err := s.FileLinkByToken(ctx, "h_l_1"); err != nil {
			t.Fatalf("the link after its file was overwritten: %v", err)
		}
		if n, err := s.DeleteExpiredFileLinks(ctx, now.Add(time.Minute)); n != 1 || err != nil {
			t.Fatalf("DeleteExpiredFileLinks = %d, %v; want 1", n, err)
		}
		if _, err := s.FileLinkByToken(ctx, "h_l_4"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the expired link after the pass: err = %v", err)
		}

		// Revoking: only by the link's owner.
		if err := s.CreateFileLink(ctx, link("l_5", "u_1", "files/a", nil, now.Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.DeleteFileLink(ctx, "u_2", "l_5"); ok || err != nil {
			t.Fatalf("bob revoked ada's link: %v, %v", ok, err)
		}
		if ok, err := s.DeleteFileLink(ctx, "u_1", "l_5"); !ok || err != nil {
			t.Fatalf("DeleteFileLink = %v, %v", ok, err)
		}
		if _, err := s.FileLinkByToken(ctx, "h_l_5"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a revoked link: err = %v", err)
		}

		// Deleting the file deletes its links, and a new file under the key has none.
		f, err := s.FileOf(ctx, "u_1", "files/a")
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.DeleteFile(ctx, f, now); !ok || err != nil {
			t.Fatalf("DeleteFile = %v, %v", ok, err)
		}
		if _, err := s.FileLinkByToken(ctx, "h_l_1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the link of a deleted file: err = %v", err)
		}
		commit("u_1", "files/a", "b_3")
		if list, _ := s.FileLinks(ctx, "u_1", "files/a", now); len(list) != 0 {
			t.Fatalf("a new file under a deleted file's key has its links: %+v", list)
		}
	})
}
