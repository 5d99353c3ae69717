package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
)

// checkInfo compares an Info with the bytes that were stored.
func checkInfo(t *testing.T, op string, info blob.Info, key string, data []byte, contentType string) {
	t.Helper()
	sum := sha256.Sum256(data)
	if info.Key != key {
		t.Errorf("%s Info.Key = %q, want %q", op, info.Key, key)
	}
	if info.Size != int64(len(data)) {
		t.Errorf("%s(%q) Info.Size = %d, want %d", op, key, info.Size, len(data))
	}
	if want := blob.FormatSHA256(sum[:]); info.Checksum != want {
		t.Errorf("%s(%q) Info.Checksum = %q, want %q", op, key, info.Checksum, want)
	}
	if info.ContentType != contentType {
		t.Errorf("%s(%q) Info.ContentType = %q, want %q", op, key, info.ContentType, contentType)
	}
	if d := time.Since(info.ModTime); info.ModTime.IsZero() || d < -time.Minute || d > time.Hour {
		t.Errorf("%s(%q) Info.ModTime = %v, want about now", op, key, info.ModTime)
	}
}

func checkKeys(t *testing.T, s blob.Store, prefix string, want []string) {
	t.Helper()
	list, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	if got := infoKeys(list); !equalStrings(got, want) {
		t.Fatalf("List(%q) = %q, want %q", prefix, got, want)
	}
}

func putBytes(t *testing.T, s blob.Store, key string, data []byte, contentType string) blob.Info {
	t.Helper()
	info, err := s.Put(context.Background(), key, bytes.NewReader(data), blob.PutOptions{ContentType: contentType})
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return info
}

func getAll(t *testing.T, s blob.Store, key string, off, n int64) ([]byte, blob.Info) {
	t.Helper()
	rc, info, err := s.Get(context.Background(), key, off, n)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, off, n, err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading Get(%q, %d, %d): %v", key, off, n, err)
	}
	return got, info
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func infoKeys(list []blob.Info) []string {
	var keys []string
	for _, info := range list {
		keys = append(keys, info.Key)
	}
	return keys
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// errReader is what failingReader fails with.
var errReader = errors.New("blobtest: reader failed on purpose")

// failingReader serves data and fails with errReader once failAt bytes were read.
type failingReader struct {
	data   []byte
	off    int
	failAt int
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.off >= r.failAt {
		return 0, errReader
	}
	n := copy(p[:min(len(p), r.failAt-r.off)], r.data[r.off:])
	r.off += n
	return n, nil
}

// cancellingReader serves data and calls cancel once cancelAt bytes were read, then keeps
// serving so only the store's own context checks can stop the Put.
type cancellingReader struct {
	data     []byte
	off      int
	cancelAt int
	cancel   context.CancelFunc
}

func (r *cancellingReader) Read(p []byte) (int, error) {
	if r.off >= r.cancelAt {
		r.cancel()
	}
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}
