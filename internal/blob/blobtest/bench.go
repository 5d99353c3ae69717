package blobtest

import (
	"context"
	"io"
	"testing"

	"github.com/skrip-dev/skrip/internal/blob"
)

// BenchPutGet measures streaming size bytes into s and reading them back. The bytes come
// from a 1 MiB random block repeated, so the benchmark never holds the object in memory.
func BenchPutGet(b *testing.B, s blob.Store, size int64) {
	ctx := context.Background()
	block := randomBytes(b, 1<<20)
	const key = "files/bench"
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		r := io.LimitReader(&repeatReader{block: block}, size)
		if _, err := s.Put(ctx, key, r, blob.PutOptions{}); err != nil {
			b.Fatalf("Put: %v", err)
		}
		rc, _, err := s.Get(ctx, key, 0, -1)
		if err != nil {
			b.Fatalf("Get: %v", err)
		}
		n, err := io.Copy(io.Discard, rc)
		_ = rc.Close()
		if err != nil || n != size {
			b.Fatalf("read back %d of %d bytes: %v", n, size, err)
		}
	}
}

// repeatReader yields block over and over.
type repeatReader struct {
	block []byte
	off   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := copy(p, r.block[r.off:])
	r.off = (r.off + n) % len(r.block)
	return n, nil
}
