package staging

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestVersions, on each blob backend: overwrites keep the two newest previous versions,
// which read whole by their id (from an offset too); an overwrite retires the version it
// pushes out; a version opened before its file is deleted still reads whole; a service
// with a lower setting trims the extra versions in its expiry pass; and an expired file
// takes its versions with it. The quota is far above what the test holds, so no old
// bytes are freed early (TestOldBytesNearTheQuota covers that) and the expiry pass
// frees every retired version.
func TestVersions(t *testing.T) {
	for _, backend := range []string{"fs", "nats"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			limits := Limits{MaxFileBytes: 64 << 10, UserQuotaBytes: 1 << 20, MaxTotalBytes: 4 << 20, Versions: 2}
			s := newService(t, backend, limits)
			clock := time.Now()
			s.now = func() time.Time { return clock }
			put := func(key, body string, ttl time.Duration) (string, error) {
				t.Helper()
				f, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: key, Name: "n.txt", Body: strings.NewReader(body), TTL: ttl})
				return f.VersionID, err
			}
			read := func(key, id string, off int64) (string, error) {
				t.Helper()
				r, err := s.OpenVersion(ctx, "u_1", key, id)
				if err != nil {
					return "", err
				}
				defer r.Close()
				if _, err := r.Seek(off, io.SeekStart); err != nil {
					return "", err
				}
				b, err := io.ReadAll(r)
				return string(b), err
			}
			bodies := []string{strings.Repeat("1", 30_000), strings.Repeat("2", 30_000), strings.Repeat("3", 30_000), strings.Repeat("4", 30_000)}
			var ids []string
			for _, b := range bodies[:3] {
				id, err := put("files/k", b, 0)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			cur, kept, err := s.Versions(ctx, "u_1", "files/k")
			if err != nil || cur.VersionID != ids[2] || len(kept) != 2 || kept[0].ID != ids[1] || kept[1].ID != ids[0] {
				t.Fatalf("Versions = %v, %+v, %v; want %v newest first", cur.VersionID, kept, err, ids)
			}
			if got, err := read("files/k", ids[0], 29_990); err != nil || got != bodies[0][29_990:] {
				t.Fatalf("the first version from byte 29990: %q, %v", got, err)
			}
			if _, err := read("files/k", "v_nope", 0); !errors.Is(err, ErrNoVersion) || !strings.Contains(err.Error(), "v_nope") {
				t.Fatalf("an unknown version: %v", err)
			}

			id4, err := put("files/k", bodies[3], 0)
			if err != nil {
				t.Fatalf("an overwrite that pushes the oldest version out: %v", err)
			}
			if _, err := read("files/k", ids[0], 0); !errors.Is(err, ErrNoVersion) {
				t.Fatalf("the version pushed out: %v", err)
			}

			// A version opened before its file is deleted reads whole; then it is gone.
			r, err := s.OpenVersion(ctx, "u_1", "files/k", ids[1])
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := s.Delete(ctx, "u_1", "files/k"); err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(r); err != nil || string(b) != bodies[1] {
				t.Fatalf("an opened version after the delete read %d bytes, %v", len(b), err)
			}
			if _, err := read("files/k", ids[2], 0); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a version of a deleted file: %v", err)
			}
			if _, err := read("files/k", id4, 0); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a deleted file: %v", err)
			}

			// Written with 2 kept, trimmed by a service that keeps 1.
			for _, b := range bodies[:3] {
				if _, err := put("files/t", b[:10], 0); err != nil {
					t.Fatal(err)
				}
			}
			lower := New(s.st, s.blobs, Limits{MaxFileBytes: 64 << 10, UserQuotaBytes: 1 << 20, MaxTotalBytes: 4 << 20, Versions: 1}, s.metrics, s.log)
			lower.now = s.now
			if exp, err := lower.Expire(ctx); err != nil || exp.Trimmed != 1 || exp.Versions != 0 {
				t.Fatalf("the trim = %+v, %v; want 1 trimmed", exp, err)
			}
			if _, kept, _ := s.Versions(ctx, "u_1", "files/t"); len(kept) != 1 {
				t.Fatalf("%d versions after the trim, want 1", len(kept))
			}

			// An expired file's versions go with it.
			for _, b := range bodies[:2] {
				if _, err := put("files/e", b[:10], time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			clock = clock.Add(RetiredGrace + time.Minute)
			if exp, err := s.Expire(ctx); err != nil || exp.Files != 1 || exp.Versions != 5 {
				// Retired long enough: k's four versions (one pushed out, three deleted)
				// and t's trimmed one; e's two go at the next pass.
				t.Fatalf("expire = %+v, %v; want 1 file and 5 versions' bytes", exp, err)
			}
			if vs, err := s.st.FileVersions(ctx, "u_1", "files/e"); err != nil || len(vs) != 0 {
				t.Fatalf("versions of an expired file: %v, %v", vs, err)
			}
		})
	}
}

// TestOldBytesNearTheQuota, on each blob backend: the versions kept and the old bytes of
// overwritten or deleted files count against the quota until they are freed (SPEC §12),
// and they are freed early, the oldest first and no more than needed, when the owner
// needs the room: an overwrite whose pushed-out version would pass the quota frees it at
// once, and an upload frees old bytes until one more file of the largest size fits.
func TestOldBytesNearTheQuota(t *testing.T) {
	for _, backend := range []string{"fs", "nats"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			s := newService(t, backend, Limits{MaxFileBytes: 64 << 10, UserQuotaBytes: 100_000, MaxTotalBytes: 4 << 20, Versions: 2})
			clock := time.Now()
			s.now = func() time.Time { return clock }
			put := func(key string, n int) error {
				t.Helper()
				_, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: key, Name: "n.txt", Body: strings.NewReader(strings.Repeat("x", n))})
				return err
			}
			usage := func(want store.Usage) {
				t.Helper()
				if got, err := s.Usage(ctx, "u_1"); err != nil || got != want {
					t.Fatalf("usage = %+v, %v; want %+v", got, err, want)
				}
			}
			for range 3 {
				if err := put("files/k", 30_000); err != nil {
					t.Fatal(err)
				}
			}
			_, kept, err := s.Versions(ctx, "u_1", "files/k")
			if err != nil || len(kept) != 2 {
				t.Fatalf("versions: %+v, %v", kept, err)
			}
			usage(store.Usage{Files: 30_000, Versions: 60_000})

			// 90 000 bytes held of 100 000: a new key of 20 000 does not fit, while the
			// overwrite that pushes the oldest version out does, and the pushed-out
			// version's bytes, which would pass the quota, are freed at once.
			if err := put("files/other", 20_000); !errors.Is(err, ErrQuota) {
				t.Fatalf("a file past the quota with the versions counted: %v", err)
			}
			if err := put("files/k", 30_000); err != nil {
				t.Fatalf("an overwrite that pushes the oldest version out: %v", err)
			}
			usage(store.Usage{Files: 30_000, Versions: 60_000})
			if _, err := s.blobs.Stat(ctx, kept[1].BlobKey); !errors.Is(err, blob.ErrNotFound) {
				t.Fatalf("the pushed-out version's bytes: %v; want them deleted", err)
			}

			// A delete retires all 90 000 bytes, which count. A small upload then frees
			// the oldest of them until a file of the largest size (65 536) fits beside
			// what stays: two of the three, 30 000 left.
			if err := s.Delete(ctx, "u_1", "files/k"); err != nil {
				t.Fatal(err)
			}
			usage(store.Usage{Retained: 90_000})
			if err := put("files/small", 10); err != nil {
				t.Fatal(err)
			}
			usage(store.Usage{Files: 10, Retained: 30_000})

			// The last one goes after the grace, as any retired version does.
			clock = clock.Add(RetiredGrace + time.Minute)
			if exp, err := s.Expire(ctx); err != nil || exp.Versions != 1 {
				t.Fatalf("expire = %+v, %v; want the 1 retired version left", exp, err)
			}
			usage(store.Usage{Files: 10})
		})
	}
}
