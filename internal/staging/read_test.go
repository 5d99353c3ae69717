package staging

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/skrip-dev/skrip/internal/blob/fsblob"
)

// TestCopyN copies pieces of a version, from the head Open read, across its end and past
// it, on each backend (fsblob hands over its file, natsblob is read), and checks the
// bytes against the version.
func TestCopyN(t *testing.T) {
	data := make([]byte, 3*headBytes+123)
	for i := range data {
		data[i] = byte(i * 31)
	}
	for _, backend := range []string{"fs", "nats"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			s := newService(t, backend, Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 1 << 20, MaxTotalBytes: 1 << 20})
			if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/k", Body: bytes.NewReader(data)}); err != nil {
				t.Fatal(err)
			}
			size := int64(len(data))
			for _, c := range []struct{ off, n int64 }{
				{0, size}, {0, 10}, {10, 100}, {headBytes - 5, 10}, {headBytes, headBytes},
				{2 * headBytes, size}, {size - 1, 5}, {size, 5}, {100, 0},
			} {
				r, err := s.Open(ctx, "u_1", "files/k")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Seek(c.off, io.SeekStart); err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				n, err := r.CopyN(&out, c.n)
				want := data[c.off:min(c.off+c.n, size)]
				if err != nil || n != int64(len(want)) || !bytes.Equal(out.Bytes(), want) {
					t.Fatalf("CopyN(%d) at %d = %d, %v; want the %d bytes there", c.n, c.off, n, err, len(want))
				}
				// Read goes on where CopyN stopped.
				rest, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(rest, data[c.off+n:]) {
					t.Fatalf("after CopyN(%d) at %d Read gave %d bytes, %v; want %d", c.n, c.off, len(rest), err, size-c.off-n)
				}
				r.Close()
			}
			// Back to before where the blob reader is: it is opened again there.
			r, err := s.Open(ctx, "u_1", "files/k")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := r.CopyN(io.Discard, 2*headBytes); err != nil {
				t.Fatal(err)
			}
			r.Seek(headBytes+7, io.SeekStart)
			var out bytes.Buffer
			if n, err := r.CopyN(&out, 100); err != nil || n != 100 || !bytes.Equal(out.Bytes(), data[headBytes+7:headBytes+107]) {
				t.Fatalf("CopyN after seeking back = %d, %v", n, err)
			}
		})
	}
}

// TestCopyNShortFile: bytes cut short on disk after Open fail CopyN with errShort,
// logged and counted once, instead of ending it early as if the file were whole.
func TestCopyNShortFile(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "fs", Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 1 << 20, MaxTotalBytes: 1 << 20})
	data := bytes.Repeat([]byte("0123456789"), 30_000)
	f, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/k", Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Open(ctx, "u_1", "files/k")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path, _, err := s.blobs.(*fsblob.Store).ObjectPath(ctx, f.BlobKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 100_000); err != nil {
		t.Fatal(err)
	}
	n, err := r.CopyN(io.Discard, int64(len(data)))
	if !errors.Is(err, ErrUnreadable) || n != 100_000 || !errors.Is(r.Failed(), ErrUnreadable) {
		t.Fatalf("CopyN of a cut file = %d, %v (Failed %v); want 100000 bytes and ErrUnreadable", n, err, r.Failed())
	}
}
