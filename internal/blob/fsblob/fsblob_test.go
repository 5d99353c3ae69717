package fsblob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/blobtest"
)

func newTestStore(t testing.TB) *Store {
	t.Helper()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store { return newTestStore(t) }, blobtest.Options{
		LeftoverCheck: func(t *testing.T, bs blob.Store) { checkClean(t, bs.(*Store)) },
	})
}

// checkClean fails t when tmp/ holds anything, when an object is not named by exactly
// one pointer, or when a pointer names a missing object.
func checkClean(t *testing.T, s *Store) {
	t.Helper()
	tmps, err := os.ReadDir(s.tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tmps {
		t.Errorf("leftover temp file %s", e.Name())
	}
	refs := map[string]int{}
	err = filepath.WalkDir(s.keys, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		p, err := readPointer(path)
		if err != nil {
			return err
		}
		refs[p.Object]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := os.ReadDir(s.objects)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range objs {
		if refs[e.Name()] != 1 {
			t.Errorf("object %s is named by %d pointers, want 1", e.Name(), refs[e.Name()])
		}
		delete(refs, e.Name())
	}
	for obj := range refs {
		t.Errorf("a pointer names object %s, which does not exist", obj)
	}
}

func TestDeletePrunesEmptyDirs(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	for _, key := range []string{"files/x/y/z", "runs/r/a"} {
		if _, err := s.Put(ctx, key, strings.NewReader(key), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"files/x/y/z", "runs/r/a"} {
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{"files/x", "runs/r"} {
		if _, err := os.Stat(filepath.Join(s.keys, dir)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("keys/%s still exists after its last key was deleted (err %v)", dir, err)
		}
	}
	for _, dir := range []string{"files", "runs"} {
		if _, err := os.Stat(filepath.Join(s.keys, dir)); err != nil {
			t.Errorf("top-level keys/%s was pruned: %v", dir, err)
		}
	}
}

func TestSweep(t *testing.T) {
	ctx := context.Background()
	old := time.Now().Add(-2 * SweepAge)
	write := func(t *testing.T, path string, aged bool) string {
		t.Helper()
		if err := os.WriteFile(path, []byte("debris"), 0o600); err != nil {
			t.Fatal(err)
		}
		if aged {
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return path
	}
	// debris plants what a crash leaves, old and new, and a Put in progress; it returns
	// what Sweep must keep and what it must remove.
	debris := func(t *testing.T, s *Store) (keep, gone []string) {
		if _, err := s.Put(ctx, "files/live", strings.NewReader("live"), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		// The live object is old too, but a pointer names it.
		livePath, _, err := s.ObjectPath(ctx, "files/live")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(livePath, old, old); err != nil {
			t.Fatal(err)
		}
		id := s.startPut()
		keep = []string{livePath, write(t, filepath.Join(s.tmp, "obj-"+id), true), write(t, filepath.Join(s.objects, id), true)}
		gone = []string{
			write(t, filepath.Join(s.tmp, "obj-01OLD"), true), write(t, filepath.Join(s.objects, "ORPHANOLD"), true),
			write(t, filepath.Join(s.tmp, "obj-01NEW"), false), write(t, filepath.Join(s.objects, "ORPHANNEW"), false),
			write(t, filepath.Join(s.tmp, "obj-1234567"), false), // a name from before Puts named their files
		}
		return keep, gone
	}
	check := func(t *testing.T, paths []string, want bool) {
		t.Helper()
		for _, path := range paths {
			_, err := os.Stat(path)
			if exists := err == nil; exists != want {
				t.Errorf("after Sweep %s exists = %v, want %v", path, exists, want)
			}
		}
	}

	t.Run("locked root: leftovers go at once", func(t *testing.T) {
		s := newTestStore(t)
		keep, gone := debris(t, s)
		removed, err := s.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if removed != len(gone) {
			t.Errorf("Sweep removed %d files, want %d", removed, len(gone))
		}
		check(t, keep, true)
		check(t, gone, false)
	})
	t.Run("unlocked root: only old leftovers", func(t *testing.T) {
		s := newTestStore(t)
		s.exclusive = false
		keep, gone := debris(t, s)
		removed, err := s.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if removed != 2 {
			t.Errorf("Sweep removed %d files, want 2", removed)
		}
		check(t, keep, true)
		check(t, gone[:2], false)
		check(t, gone[2:], true)
	})
}

func TestRootLock(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if s2, err := New(root); !errors.Is(err, ErrLocked) {
		if err == nil {
			s2.Close()
		}
		t.Fatalf("second New on a held root = %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := New(root)
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	s2.Close()
}

func TestObjectPath(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, _, err := s.ObjectPath(ctx, "files/none"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("ObjectPath of missing key = %v, want ErrNotFound", err)
	}
	if _, _, err := s.ObjectPath(ctx, "bad"); !errors.Is(err, blob.ErrInvalidKey) {
		t.Fatalf("ObjectPath of bad key = %v, want ErrInvalidKey", err)
	}
	if _, err := s.Put(ctx, "files/doc", strings.NewReader("first"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	path, info, err := s.ObjectPath(ctx, "files/doc")
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(path) || info.Size != 5 {
		t.Fatalf("ObjectPath = %q, %+v", path, info)
	}
	// A hard link keeps the old bytes after the key is overwritten.
	link := filepath.Join(t.TempDir(), "snapshot")
	if err := os.Link(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "files/doc", strings.NewReader("second"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(link); err != nil || string(got) != "first" {
		t.Fatalf("hard link reads %q, %v; want %q", got, err, "first")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old object path still exists after overwrite: %v", err)
	}
}

// TestOpenReaderSurvivesOverwrite checks that a reader opened before an overwrite or a
// Delete keeps reading the old bytes.
func TestOpenReaderSurvivesOverwrite(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if _, err := s.Put(ctx, "files/doc", strings.NewReader("old bytes"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Get(ctx, "files/doc", 4, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := s.Put(ctx, "files/doc", strings.NewReader("new"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "files/doc"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil || string(got) != "bytes" {
		t.Fatalf("reading after overwrite and delete = %q, %v; want %q", got, err, "bytes")
	}
}

func TestPing(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t)
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(s.root); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err == nil {
		t.Fatal("Ping succeeded after the root was removed")
	}
}

func BenchmarkPutGet100MiB(b *testing.B) {
	blobtest.BenchPutGet(b, newTestStore(b), 100<<20)
}

// TestPutPastWriteback stores objects around and past the sizes at which Put asks the
// kernel to start writing (writebackBytes) and reads each back whole, with its checksum.
func TestPutPastWriteback(t *testing.T) {
	ctx := context.Background()
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, size := range []int{writebackBytes - 1, writebackBytes, 2*writebackBytes + 12345} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7 / 3)
		}
		info, err := s.Put(ctx, "files/big", bytes.NewReader(data), blob.PutOptions{})
		sum := sha256.Sum256(data)
		if err != nil || info.Size != int64(size) || info.Checksum != blob.FormatSHA256(sum[:]) {
			t.Fatalf("put of %d bytes = %+v, %v", size, info, err)
		}
		rc, _, err := s.Get(ctx, "files/big", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read back %d of %d bytes, %v", len(got), size, err)
		}
	}
}
