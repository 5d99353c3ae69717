package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestUploadParts: of requests racing to add bytes at the same offset exactly one wins;
// the one that brings the last byte holds the upload for finishing, so a reader cannot
// reopen it meanwhile; reservations count unfinished, unexpired uploads only; the open
// uploads' cap holds.
func TestUploadParts(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		up := Upload{ID: "up_1", OwnerID: "u_1", Key: "files/a", Name: "a", ContentType: "text/plain", Size: 10,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		lim := UploadLimits{MaxOpen: 2, UserQuota: 1 << 20, MaxTotal: 1 << 30}
		if err := s.CreateUpload(ctx, up, lim, now); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.AddUploadPart(ctx, "up_1", UploadPart{Start: 0, Size: 4, BlobKey: "b_" + string(rune('a'+i)), Checksum: "c"}, 100, now, now.Add(time.Hour), now.Add(time.Minute))
				if err == nil {
					mu.Lock()
					won++
					mu.Unlock()
				} else if !errors.Is(err, ErrConflict) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("%d racing parts at offset 0 were taken", won)
		}
		if u, _ := s.UploadOf(ctx, "up_1"); u.Received != 4 || u.Parts != 1 || !u.FinishingUntil.Before(now) {
			t.Fatalf("after one part: %+v", u)
		}
		if err := s.AddUploadPart(ctx, "up_1", UploadPart{Start: 4, Size: 7, BlobKey: "b_x", Checksum: "c"}, 100, now, now.Add(time.Hour), now.Add(time.Minute)); !errors.Is(err, ErrConflict) {
			t.Fatalf("a part past the length: %v", err)
		}
		if err := s.AddUploadPart(ctx, "up_1", UploadPart{Start: 4, Size: 6, BlobKey: "b_y", Checksum: "c"}, 100, now, now.Add(time.Hour), now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		// The last part holds the upload: it cannot be reopened or taken by another.
		if dropped, err := s.DropLastUploadPart(ctx, "up_1", UploadPart{Start: 4, Size: 6}, now); err != nil || dropped {
			t.Fatalf("a held upload was reopened: %v %v", dropped, err)
		}
		if took, err := s.BeginFinishUpload(ctx, "up_1", now, now.Add(time.Minute)); err != nil || took {
			t.Fatalf("a held upload was taken again: %v %v", took, err)
		}
		// Once the hold has passed (its holder died), it can be reopened.
		later := now.Add(2 * time.Minute)
		if dropped, err := s.DropLastUploadPart(ctx, "up_1", UploadPart{Start: 4, Size: 6}, later); err != nil || !dropped {
			t.Fatalf("reopening after the hold: %v %v", dropped, err)
		}
		if parts, _ := s.UploadParts(ctx, "up_1"); len(parts) != 1 || parts[0].Size != 4 {
			t.Fatalf("parts after reopening: %+v", parts)
		}
		if u, total, _ := s.UserUsage(ctx, "u_1", now); u.Uploads != 10 || u.Total() != 10 || total != 10 {
			t.Fatalf("reservations %+v %d", u, total)
		}
		if u, _, _ := s.UsageBesideUpload(ctx, "u_1", "up_1", now); u.Uploads != 0 {
			t.Fatalf("reservations without up_1: %+v", u)
		}
		if err := s.CreateUpload(ctx, Upload{ID: "up_2", OwnerID: "u_1", Size: 1, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, lim, now); err != nil {
			t.Fatal(err)
		}
		up3 := Upload{ID: "up_3", OwnerID: "u_1", Size: 1, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateUpload(ctx, up3, lim, now); !errors.Is(err, ErrTooManyUploads) {
			t.Fatalf("a third open upload with a cap of 2: %v", err)
		}
		// The quota and the total count the reservations (11 bytes), in the same step.
		if err := s.CreateUpload(ctx, up3, UploadLimits{MaxOpen: 10, UserQuota: 11, MaxTotal: 100}, now); !errors.Is(err, ErrOverQuota) {
			t.Fatalf("an upload past the quota: %v", err)
		}
		if err := s.CreateUpload(ctx, up3, UploadLimits{MaxOpen: 10, UserQuota: 100, MaxTotal: 11}, now); !errors.Is(err, ErrOverTotal) {
			t.Fatalf("an upload past the total: %v", err)
		}
		if exp, _ := s.ExpiredUploads(ctx, now.Add(2*time.Hour), 10); len(exp) != 2 {
			t.Fatalf("expired: %+v", exp)
		}
		if parts, gone, err := s.DeleteUpload(ctx, "up_1", later); err != nil || !gone || len(parts) != 1 || parts[0].Size != 4 {
			t.Fatalf("delete: %+v %v %v", parts, gone, err)
		}
		if parts, _ := s.UploadParts(ctx, "up_1"); len(parts) != 0 {
			t.Fatalf("parts after delete: %+v", parts)
		}
	})
}
