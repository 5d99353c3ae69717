package files

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestExpiryDoesNotTakeAReupload: the janitor lists a file as expired, its owner uploads
// to the same key, then the janitor removes what it listed. The new version stays whole.
func TestExpiryDoesNotTakeAReupload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "", filepath.Join(dir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.CreateUser(ctx, store.User{ID: "u_1", Name: "u", Role: store.RoleUser, CreatedAt: time.Now()})
	blobs, err := fsblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	s := New(st, blobs, Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 1 << 20, MaxTotalBytes: 1 << 20}, slog.New(slog.DiscardHandler))
	u := store.User{ID: "u_1", Role: store.RoleUser}
	if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/k", Body: strings.NewReader("old"), TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	listed, err := st.ExpiredFiles(ctx, time.Now(), 10)
	if err != nil || len(listed) != 1 {
		t.Fatalf("expired = %v, %v", listed, err)
	}
	if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/k", Body: strings.NewReader("new")}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.remove(ctx, listed[0]); err != nil || ok {
		t.Fatalf("remove of the listed version = %v, %v; want nothing removed", ok, err)
	}
	f, err := s.Get(ctx, u, "files/k")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := s.Open(ctx, f, 0, -1)
	if err != nil {
		t.Fatalf("the re-upload's bytes are gone: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "new" {
		t.Fatalf("read %q", b)
	}
}
