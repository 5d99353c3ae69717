package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestFileVersions: overwriting a key keeps up to keep previous versions, the newest
// first, each with the id it had as the file; they count against the quota and the
// total; the ones beyond keep, a trim after the setting was lowered, and a delete or an
// expiry of the file retire their bytes.
func TestFileVersions(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_1", "ada", RoleUser), newUser("u_2", "bob", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		const quota = 100
		commit := func(owner, key string, n int, size int64, keep int, exp *time.Time) error {
			t.Helper()
			if _, err := s.ClaimFileKey(ctx, owner, key, now, now.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprintf("%s_%s_%d", owner, key, n)
			return s.CommitFile(ctx, File{Key: key, OwnerID: owner, Size: size, Checksum: "sha256:" + id, BlobKey: "b_" + id,
				VersionID: "v_" + id, CreatedAt: now.Add(time.Duration(n) * time.Millisecond), ExpiresAt: exp}, keep, quota, 1000, now)
		}
		ids := func(owner, key string) []string {
			t.Helper()
			vs, err := s.FileVersions(ctx, owner, key)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, v := range vs {
				out = append(out, v.ID)
			}
			return out
		}
		retired := func() map[string]bool {
			t.Helper()
			bs, err := s.RetiredFileBlobs(ctx, now.Add(time.Hour), 100)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]bool{}
			for _, b := range bs {
				out[b.BlobKey] = true
			}
			return out
		}
		usage := func(owner string) int64 {
			t.Helper()
			u, _, err := s.UserUsage(ctx, owner, now)
			if err != nil {
				t.Fatal(err)
			}
			return u.Files + u.Versions
		}

		for n := 1; n <= 4; n++ {
			if err := commit("u_1", "files/a", n, 10, 2, nil); err != nil {
				t.Fatal(err)
			}
		}
		if got := fmt.Sprint(ids("u_1", "files/a")); got != "[v_u_1_files/a_3 v_u_1_files/a_2]" {
			t.Fatalf("versions after four uploads keeping 2: %s", got)
		}
		if f, err := s.FileOf(ctx, "u_1", "files/a"); err != nil || f.VersionID != "v_u_1_files/a_4" {
			t.Fatalf("the file: %+v, %v", f, err)
		}
		if r := retired(); len(r) != 1 || !r["b_u_1_files/a_1"] {
			t.Fatalf("retired: %v, want only the first upload's bytes", r)
		}
		v, err := s.FileVersionByID(ctx, "u_1", "files/a", "v_u_1_files/a_2")
		if err != nil || v.Size != 10 || v.BlobKey != "b_u_1_files/a_2" || v.Checksum != "sha256:u_1_files/a_2" || !v.ReplacedAt.Equal(now) ||
			!v.CreatedAt.Equal(now.Add(2*time.Millisecond)) {
			t.Fatalf("FileVersionByID = %+v, %v", v, err)
		}
		if _, err := s.FileVersionByID(ctx, "u_2", "files/a", "v_u_1_files/a_2"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another owner's version: %v", err)
		}
		if u := usage("u_1"); u != 30 {
			t.Fatalf("usage %d, want 30: the file and its two versions", u)
		}

		// 55 more bytes fit alone (30+55 < 100) but not with the version they keep.
		if err := commit("u_1", "files/b", 1, 55, 2, nil); err != nil {
			t.Fatal(err)
		}
		if err := commit("u_1", "files/b", 2, 55, 2, nil); !errors.Is(err, ErrOverQuota) {
			t.Fatalf("an overwrite whose kept version passes the quota: %v", err)
		}
		if got := ids("u_1", "files/b"); len(got) != 0 {
			t.Fatalf("a refused commit kept %v", got)
		}
		// Keeping none, the same overwrite fits: the replaced bytes are retired.
		if err := commit("u_1", "files/b", 3, 55, 0, nil); err != nil {
			t.Fatal(err)
		}
		if !retired()["b_u_1_files/b_1"] {
			t.Fatal("an overwrite keeping no versions did not retire the old bytes")
		}

		// The setting lowered to 1: the trim retires the older version of files/a.
		if err := commit("u_2", "files/c", 1, 1, 3, nil); err != nil {
			t.Fatal(err)
		}
		if err := commit("u_2", "files/c", 2, 1, 3, nil); err != nil {
			t.Fatal(err)
		}
		n, err := s.TrimFileVersions(ctx, 1, 100, now)
		if err != nil || n != 1 {
			t.Fatalf("TrimFileVersions = %d, %v; want 1", n, err)
		}
		if got := fmt.Sprint(ids("u_1", "files/a")); got != "[v_u_1_files/a_3]" || !retired()["b_u_1_files/a_2"] {
			t.Fatalf("after the trim: %s, retired %v", got, retired())
		}
		if got := ids("u_2", "files/c"); len(got) != 1 {
			t.Fatalf("the trim took bob's only version: %v", got)
		}
		if n, err := s.TrimFileVersions(ctx, 1, 100, now); err != nil || n != 0 {
			t.Fatalf("a second trim: %d, %v", n, err)
		}

		// Deleting the file takes its versions and retires their bytes.
		f, _ := s.FileOf(ctx, "u_1", "files/a")
		if gone, err := s.DeleteFile(ctx, f, now); err != nil || !gone {
			t.Fatalf("DeleteFile = %v, %v", gone, err)
		}
		if got := ids("u_1", "files/a"); len(got) != 0 || !retired()["b_u_1_files/a_3"] || !retired()["b_u_1_files/a_4"] {
			t.Fatalf("after the delete: versions %v, retired %v", got, retired())
		}

		// An expired file's versions stop counting at once; overwriting it retires them
		// with it rather than keeping the expired bytes as a version.
		exp := now.Add(-time.Second)
		if err := commit("u_2", "files/c", 3, 1, 3, &exp); err != nil {
			t.Fatal(err)
		}
		if u := usage("u_2"); u != 0 {
			t.Fatalf("usage %d of an expired file and its versions, want 0", u)
		}
		if err := commit("u_2", "files/c", 4, 1, 3, nil); err != nil {
			t.Fatal(err)
		}
		if got := ids("u_2", "files/c"); len(got) != 0 || !retired()["b_u_2_files/c_3"] || !retired()["b_u_2_files/c_1"] {
			t.Fatalf("overwriting an expired file: versions %v, retired %v", got, retired())
		}
		if vs, err := s.FileVersionsIn(ctx, "u_1", "files/", "files/~"); err != nil || len(vs) != 0 {
			t.Fatalf("FileVersionsIn = %v, %v", vs, err)
		}
	})
}
