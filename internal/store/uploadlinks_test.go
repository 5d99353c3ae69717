package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestUploadLinkLimitCounts: an owner's live upload links (unexpired, with a use left)
// count toward the limit, used-up and expired ones do not; links made at once never
// together pass it, on either database.
func TestUploadLinkLimitCounts(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, u := range []User{newUser("u_1", "ada", RoleUser), newUser("u_2", "bea", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().Truncate(time.Millisecond)
		link := func(id, owner string) UploadLink {
			return UploadLink{ID: id, TokenHash: "h_" + id, OwnerID: owner, Key: "files/a", CreatedBy: owner, CreatedAt: now,
				ExpiresAt: now.Add(time.Hour), MaxBytes: 10, Uses: 1}
		}
		for _, id := range []string{"l_1", "l_2"} {
			if err := s.CreateUploadLink(ctx, link(id, "u_1"), 2, now); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateUploadLink(ctx, link("l_3", "u_1"), 2, now); !errors.Is(err, ErrTooManyUploadLinks) {
			t.Fatalf("a third live link: got %v, want ErrTooManyUploadLinks", err)
		}
		// l_1 used up: it no longer counts.
		if ok, err := s.ReserveUploadLinkUse(ctx, "l_1", now, now.Add(time.Minute)); !ok || err != nil {
			t.Fatalf("reserve: %v %v", ok, err)
		}
		if err := s.EndUploadLinkUse(ctx, "l_1", true); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateUploadLink(ctx, link("l_3", "u_1"), 2, now); err != nil {
			t.Fatalf("a link beside a used-up one: %v", err)
		}
		// Two hours on, every link has expired: none counts.
		later := now.Add(2 * time.Hour)
		if err := s.CreateUploadLink(ctx, link("l_4", "u_1"), 1, later); err != nil {
			t.Fatalf("a link once the others expired: %v", err)
		}
		// Made at once, no more than the limit are stored.
		var made atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.CreateUploadLink(ctx, link(fmt.Sprintf("r_%d", i), "u_2"), 3, now)
				switch {
				case err == nil:
					made.Add(1)
				case !errors.Is(err, ErrTooManyUploadLinks):
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := made.Load(); n != 3 {
			t.Fatalf("%d of 8 links made at once were stored, want 3", n)
		}
	})
}
