package hashcopy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestCopy(t *testing.T) {
	for _, size := range []int{0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 5*chunkSize + 17} {
		data := make([]byte, size)
		rand.Read(data)
		var out bytes.Buffer
		// HalfReader makes every Read short, as a multipart part's reads are.
		n, sum, err := Copy(context.Background(), &out, iotest.HalfReader(bytes.NewReader(data)))
		want := sha256.Sum256(data)
		if err != nil || n != int64(size) || !bytes.Equal(out.Bytes(), data) || !bytes.Equal(sum, want[:]) {
			t.Fatalf("size %d: n=%d err=%v equal=%v", size, n, err, bytes.Equal(out.Bytes(), data))
		}
	}
}

func TestCopyErrors(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader(make([]byte, 3*chunkSize)), iotest.ErrReader(boom))
	if _, _, err := Copy(context.Background(), io.Discard, r); !errors.Is(err, boom) {
		t.Fatalf("reader error: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Copy(ctx, io.Discard, bytes.NewReader(make([]byte, 10))); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, _, err := Copy(context.Background(), failWriter{boom}, bytes.NewReader(make([]byte, 10))); !errors.Is(err, boom) {
		t.Fatalf("writer error: %v", err)
	}
}

// TestCopyStopsAtAWriteError: a writer that fails ends the copy of an endless reader,
// and nothing is written after the failure.
func TestCopyStopsAtAWriteError(t *testing.T) {
	boom := errors.New("disk full")
	w := &countingWriter{failAt: 3, err: boom}
	n, _, err := Copy(context.Background(), w, endless{})
	if !errors.Is(err, boom) || w.calls != 3 || n != 2*chunkSize {
		t.Fatalf("err = %v after %d writes, n = %d; want %v at the third write, n = %d", err, w.calls, n, boom, 2*chunkSize)
	}
}

// countingWriter fails its failAt-th Write and every one after, counting them.
type countingWriter struct {
	failAt, calls int
	err           error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.calls++
	if c.calls >= c.failAt {
		return 0, c.err
	}
	return len(p), nil
}

type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }
