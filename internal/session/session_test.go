package session

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/store"
)

// failingStore is a real blob store that fails the Put numbered failAt (from 1).
type failingStore struct {
	blob.Store
	puts, failAt int
}

func (f *failingStore) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (blob.Info, error) {
	f.puts++
	if f.puts == f.failAt {
		return blob.Info{}, errors.New("injected failure")
	}
	return f.Store.Put(ctx, key, r, opts)
}

func setup(t testing.TB) (*store.Store, *fsblob.Store, store.SessionKey) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "", filepath.Join(dir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Now()
	st.CreateUser(ctx, store.User{ID: "u_1", Name: "u", Role: store.RoleUser, CreatedAt: now})
	st.CreateTool(ctx, store.Tool{ID: "t_1", Slug: "t", Title: "t", AuthorID: "u_1", CreatedAt: now, UpdatedAt: now},
		store.ToolVersion{ID: "v_1", ToolID: "t_1", Source: "x", Entrypoint: "run_tool", CreatedBy: "u_1", CreatedAt: now}, true)
	fs, err := fsblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	return st, fs, store.SessionKey{ToolID: "t_1", UserID: "u_1", Context: "sandbox:v_1"}
}

func files(t *testing.T, names map[string]string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var list []string
	for n, body := range names {
		os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644)
		list = append(list, n)
	}
	return dir, list
}

func TestReplaceFailureKeepsTheOldSet(t *testing.T) {
	ctx := context.Background()
	st, fs, k := setup(t)
	log := slog.New(slog.DiscardHandler)
	good := New(st, fs, time.Hour, log)
	dir, names := files(t, map[string]string{"old1.txt": "one", "old2.txt": "two"})
	if err := good.Replace(ctx, k, dir, names); err != nil {
		t.Fatal(err)
	}
	before, _ := fs.List(ctx, "sessions/")

	broken := New(st, &failingStore{Store: fs, failAt: 2}, time.Hour, log)
	dir2, names2 := files(t, map[string]string{"new1.txt": "1", "new2.txt": "2", "new3.txt": "3"})
	if err := broken.Replace(ctx, k, dir2, names2); err == nil {
		t.Fatal("the injected failure was not reported")
	}
	got, _, err := good.Files(ctx, k)
	if err != nil || len(got) != 2 || got[0].Name[:3] != "old" || got[1].Name[:3] != "old" {
		t.Fatalf("after a failed replace the set is %+v, %v", got, err)
	}
	after, _ := fs.List(ctx, "sessions/")
	if len(after) != len(before) {
		t.Fatalf("a failed replace left bytes behind: %d objects before, %d after", len(before), len(after))
	}
	// The old set still injects whole.
	in := t.TempDir()
	if _, err := good.Inject(ctx, k, in); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"old1.txt": "one", "old2.txt": "two"} {
		if b, _ := os.ReadFile(filepath.Join(in, n)); string(b) != want {
			t.Fatalf("%s = %q", n, b)
		}
	}
}

// TestInjectLinksWithoutCopying: on the local backend a snapshot is hard links to the
// immutable objects, so injecting 50 MB copies nothing.
func TestInjectLinksWithoutCopying(t *testing.T) {
	ctx := context.Background()
	st, fs, k := setup(t)
	s := New(st, fs, time.Hour, slog.New(slog.DiscardHandler))
	dir := t.TempDir()
	big := make([]byte, 50<<20)
	os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644)
	if err := s.Replace(ctx, k, dir, []string{"big.bin"}); err != nil {
		t.Fatal(err)
	}
	in := t.TempDir()
	if _, err := s.Inject(ctx, k, in); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(in, "big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if nlink := info.Sys().(*syscall.Stat_t).Nlink; nlink < 2 {
		t.Fatalf("the injected file has %d link(s): its bytes were copied", nlink)
	}
	if info.Mode().Perm()&0o222 != 0 {
		t.Fatalf("the snapshot is writable: %v", info.Mode())
	}
}

// TestExpireSparesASetUsedMeanwhile: a set the janitor listed as stale but that a run
// injected before the delete must survive.
func TestExpireSparesASetUsedMeanwhile(t *testing.T) {
	ctx := context.Background()
	st, fs, k := setup(t)
	s := New(st, fs, time.Hour, slog.New(slog.DiscardHandler))
	dir, names := files(t, map[string]string{"keep.txt": "k"})
	if err := s.Replace(ctx, k, dir, names); err != nil {
		t.Fatal(err)
	}
	set, _ := st.SessionFiles(ctx, k)
	cutoff := time.Now().Add(time.Minute)                    // the set looks stale to this cutoff...
	if _, err := s.Inject(ctx, k, t.TempDir()); err != nil { // ...but is used now
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if _, err := s.Inject(ctx, k, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.remove(ctx, set, cutoff); err != nil || n != 0 {
		t.Fatalf("a set used after the cutoff was removed (%d files, %v)", n, err)
	}
	if got, _, _ := s.Files(ctx, k); len(got) != 1 {
		t.Fatalf("files = %v", got)
	}
}
