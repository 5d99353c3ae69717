package staging

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestReopenKeepsAFinishedFile: a one-request upload whose finish committed the file
// (the part's blob is the file's bytes) but could not record that the upload finished is
// found finished when it is next asked for, once the finishing server's hold is over,
// rather than reopened, which would delete the live file's bytes.
func TestReopenKeepsAFinishedFile(t *testing.T) {
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
	s := New(st, blobs, Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 1 << 20, MaxTotalBytes: 1 << 20}, metrics.New(), slog.New(slog.DiscardHandler))
	up, err := s.CreateUpload(ctx, NewUpload{OwnerID: "u_1", Key: "files/k", Size: 5})
	if err != nil {
		t.Fatal(err)
	}
	if n, last, err := s.WriteUpload(ctx, "u_1", up.ID, 0, strings.NewReader("hello")); err != nil || n != 5 || !last {
		t.Fatalf("write: %d %v %v", n, last, err)
	}
	// The finish, up to the commit: the server dies before EndFinishUpload.
	u, _ := st.UploadOf(ctx, up.ID)
	if _, _, err := s.finish(ctx, u); err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return time.Now().Add(2 * finishHold) }
	got, err := s.Upload(ctx, "u_1", up.ID)
	if err != nil || got.FinishedAt == nil || got.Received != 5 {
		t.Fatalf("the upload after its holder died: %+v, %v", got, err)
	}
	rc, err := s.Open(ctx, "u_1", "files/k")
	if err != nil {
		t.Fatalf("the file's bytes are gone: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello" {
		t.Fatalf("read %q", b)
	}
}
