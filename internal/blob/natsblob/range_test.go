package natsblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
)

// rangeCase is one ranged read of an object of size bytes, and the first byte it wants.
type rangeCase struct {
	name   string
	off, n int64
}

func rangeCases(size int64) []rangeCase {
	const c = chunkSize
	return []rangeCase{
		{"whole", 0, -1},
		{"zero length", 5 * c, 0},
		{"start", 0, 1024},
		{"suffix", size - 1024, -1},
		{"last byte", size - 1, -1},
		{"in the last chunk", size - 100, 50},
		{"past the end", size, -1},
		{"far past the end", size + 10*c, 5},
		{"spanning two chunks", 7*c - 10, 20},
		{"spanning many chunks", 3*c + 5, 10 * c},
		{"at a chunk boundary", 9 * c, c},
		{"inside the first chunk", 100, 200},
		{"second chunk to the end", c, -1},
		{"longer than the rest", size - 10, 1000},
	}
}

// readRange reads Get(off, n) of key whole and returns the bytes and the reader, closed.
func readRange(t *testing.T, s *Store, key string, off, n int64) ([]byte, io.ReadCloser) {
	t.Helper()
	rc, info, err := s.Get(context.Background(), key, off, n)
	if err != nil {
		t.Fatalf("Get(%d, %d): %v", off, n, err)
	}
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%d, %d): read: %v", off, n, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if info.Size <= 0 && off == 0 && n != 0 && len(got) > 0 {
		t.Fatalf("Get(%d, %d): info %+v", off, n, info)
	}
	return got, rc
}

func wantRange(data []byte, off, n int64) []byte {
	size := int64(len(data))
	if off >= size || n == 0 {
		return nil
	}
	end := size
	if n > 0 && off+n < size {
		end = off + n
	}
	return data[off:end]
}

// chunksReceived is how many chunks a reader Get returned took from its consumer.
func chunksReceived(t *testing.T, rc io.ReadCloser) uint64 {
	t.Helper()
	switch r := rc.(type) {
	case *chunkReader:
		return r.delivered
	case limitedReader:
		return r.Closer.(*chunkReader).delivered
	}
	return 0 // nothing to read
}

// TestRangeStartsAtItsChunk checks that a ranged read of a large object starts at the
// chunk that holds its first byte (it was as slow as reading the object whole), for
// every kind of range, and that the bytes are right.
func TestRangeStartsAtItsChunk(t *testing.T) {
	s := newTestStore(t, startServer(t), Config{Bucket: "range"})
	const size = 50*chunkSize + 1000
	data := make([]byte, size)
	rand.Read(data)
	if _, err := s.Put(context.Background(), "files/big", bytes.NewReader(data), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range rangeCases(size) {
		t.Run(c.name, func(t *testing.T) {
			got, rc := readRange(t, s, "files/big", c.off, c.n)
			if want := wantRange(data, c.off, c.n); !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (or they differ)", len(got), len(want))
			}
			if len(got) == 0 {
				return
			}
			// The chunks from the one holding off to the one holding the last byte read.
			first, last := c.off/chunkSize, (c.off+int64(len(got))-1)/chunkSize
			if want, have := uint64(last-first+1), chunksReceived(t, rc); have != want {
				t.Errorf("received %d chunks, want %d: the read did not start at the chunk holding byte %d", have, want, c.off)
			}
		})
	}
	checkClean(t, s)
}

// interleavingReader feeds data to a Put and, before each Read, puts a small object
// under another key, so that the stream holds other messages between the chunks.
type interleavingReader struct {
	t    *testing.T
	s    *Store
	r    io.Reader
	puts int
}

func (r *interleavingReader) Read(p []byte) (int, error) {
	r.puts++
	if r.puts%3 == 0 {
		if _, err := r.s.Put(context.Background(), "files/other", bytes.NewReader([]byte("between")), blob.PutOptions{}); err != nil {
			r.t.Error(err)
		}
	}
	return r.r.Read(p)
}

// TestRangeOfInterleavedChunks checks ranged reads of an object whose chunks are not
// contiguous in the stream, as when uploads run at once: seekChunk bisects.
func TestRangeOfInterleavedChunks(t *testing.T) {
	s := newTestStore(t, startServer(t), Config{Bucket: "interleaved"})
	const size = 40*chunkSize + 77
	data := make([]byte, size)
	rand.Read(data)
	// Reads of 40 KiB: a chunk takes several, and other puts land between chunks.
	src := &interleavingReader{t: t, s: s, r: &capReader{r: bytes.NewReader(data), max: 40 << 10}}
	if _, err := s.Put(context.Background(), "files/big", src, blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range rangeCases(size) {
		t.Run(c.name, func(t *testing.T) {
			got, rc := readRange(t, s, "files/big", c.off, c.n)
			if want := wantRange(data, c.off, c.n); !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (or they differ)", len(got), len(want))
			}
			if len(got) == 0 {
				return
			}
			first, last := c.off/chunkSize, (c.off+int64(len(got))-1)/chunkSize
			if want, have := uint64(last-first+1), chunksReceived(t, rc); have != want {
				t.Errorf("received %d chunks, want %d", have, want)
			}
		})
	}
	checkClean(t, s)
}

// capReader returns at most max bytes per Read.
type capReader struct {
	r   io.Reader
	max int
}

func (c *capReader) Read(p []byte) (int, error) {
	if len(p) > c.max {
		p = p[:c.max]
	}
	return c.r.Read(p)
}

// TestRangeOfForeignObjects checks ranged reads of objects that nats.go's ObjectStore
// wrote: its chunks carry no index and need not be full (it stores what each Read of its
// source returned), so they are read from the first chunk, and correctly.
func TestRangeOfForeignObjects(t *testing.T) {
	nc := startServer(t)
	s := newTestStore(t, nc, Config{Bucket: "foreign"})
	const size = 20*chunkSize + 5
	data := make([]byte, size)
	rand.Read(data)
	for _, tc := range []struct {
		name string
		src  io.Reader
		opts *jetstream.ObjectMetaOptions
	}{
		{"full chunks", bytes.NewReader(data), nil},
		{"short chunks", iotest.HalfReader(bytes.NewReader(data)), nil},
		{"another chunk size", bytes.NewReader(data), &jetstream.ObjectMetaOptions{ChunkSize: 100 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "files/" + strings.ReplaceAll(tc.name, " ", "-")
			if _, err := s.obs.Put(context.Background(), jetstream.ObjectMeta{Name: key, Opts: tc.opts}, tc.src); err != nil {
				t.Fatal(err)
			}
			for _, c := range rangeCases(size) {
				got, _ := readRange(t, s, key, c.off, c.n)
				if want := wantRange(data, c.off, c.n); !bytes.Equal(got, want) {
					t.Errorf("%s: got %d bytes, want %d (or they differ)", c.name, len(got), len(want))
				}
			}
		})
	}
}

// TestRangeOfEmptyObject checks every range of a 0-byte object.
func TestRangeOfEmptyObject(t *testing.T) {
	s := newTestStore(t, startServer(t), Config{Bucket: "empty"})
	if _, err := s.Put(context.Background(), "files/empty", bytes.NewReader(nil), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range rangeCases(0) {
		if c.off < 0 {
			continue
		}
		if got, _ := readRange(t, s, "files/empty", c.off, c.n); len(got) != 0 {
			t.Errorf("%s: got %d bytes", c.name, len(got))
		}
	}
}

// TestRangeChecksChunkLengths checks that a read starting past the first chunk, which
// cannot check the object's digest, fails on a chunk whose length breaks the layout: here
// chunks 2 and 3 are replaced by a short chunk 2 and a full chunk 3 with the message IDs
// Put gives, so the seek finds the short one.
func TestRangeChecksChunkLengths(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, startServer(t), Config{Bucket: "layout", Timeout: 2 * time.Second})
	if _, err := s.Put(ctx, "files/x", bytes.NewReader(make([]byte, 4*chunkSize)), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := s.obs.GetInfo(ctx, "files/x")
	if err != nil {
		t.Fatal(err)
	}
	subj := chunkSubject(s.bucket, info.NUID)
	seq2, seq3 := nthChunkSeq(t, s, subj, 2), nthChunkSeq(t, s, subj, 3)
	for _, seq := range []uint64{seq2, seq3} {
		if err := s.stream.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	for k, n := range []int{10, chunkSize} {
		msg := nats.NewMsg(subj)
		msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s.%d.9", info.NUID, k+2))
		msg.Data = make([]byte, n)
		if _, err := s.js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	rc, _, err := s.Get(ctx, "files/x", 2*chunkSize+5, -1)
	if err == nil {
		_, err = io.ReadAll(rc)
		rc.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "not where its layout says") {
		t.Fatalf("a read from a chunk of the wrong length: %v, want the layout's error", err)
	}
}

func nthChunkSeq(t *testing.T, s *Store, subj string, k int) uint64 {
	t.Helper()
	seq := uint64(1)
	for i := 0; ; i++ {
		m, err := s.nextStored(context.Background(), subj, seq)
		if err != nil {
			t.Fatal(err)
		}
		if i == k {
			return m.Sequence
		}
		seq = m.Sequence + 1
	}
}

// TestSeek checks the reader's Seek, which http.ServeContent uses (through the staging
// reader) for a Range: a jump ahead starts at the chunk holding the offset, and any
// sequence of seeks and reads reads the right bytes, for Put's objects and nats.go's.
func TestSeek(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, startServer(t), Config{Bucket: "seek"})
	const size = 30*chunkSize + 333
	data := make([]byte, size)
	rand.Read(data)
	if _, err := s.Put(ctx, "files/put", bytes.NewReader(data), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.obs.Put(ctx, jetstream.ObjectMeta{Name: "files/foreign"}, iotest.HalfReader(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	type step struct {
		off    int64
		whence int
		read   int // bytes to read after the seek; -1: to the end
	}
	for _, key := range []string{"files/put", "files/foreign"} {
		for name, steps := range map[string][]step{
			"suffix":             {{-1024, io.SeekEnd, -1}},
			"head then suffix":   {{0, io.SeekStart, 64 << 10}, {size - 1024, io.SeekStart, -1}},
			"small jump":         {{100, io.SeekStart, 10}, {1000, io.SeekCurrent, 10}, {2 * chunkSize, io.SeekStart, -1}},
			"back":               {{20 * chunkSize, io.SeekStart, 100}, {5, io.SeekStart, 100}, {-50, io.SeekCurrent, 200}},
			"to the end":         {{0, io.SeekEnd, -1}},
			"past the end":       {{size + 10, io.SeekStart, -1}, {3, io.SeekStart, 3}},
			"middle to the end":  {{size / 2, io.SeekStart, -1}},
			"within a chunk":     {{chunkSize + 10, io.SeekStart, 10}, {chunkSize + 100, io.SeekStart, 10}},
			"whole after a jump": {{25 * chunkSize, io.SeekStart, 10}, {0, io.SeekStart, -1}},
		} {
			rc, _, err := s.Get(ctx, key, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			sk := rc.(io.ReadSeeker)
			pos := int64(0)
			for i, st := range steps {
				abs, err := sk.Seek(st.off, st.whence)
				if err != nil {
					t.Fatalf("%s %s: step %d: seek: %v", key, name, i, err)
				}
				want := map[int]int64{io.SeekStart: st.off, io.SeekCurrent: pos + st.off, io.SeekEnd: size + st.off}[st.whence]
				if abs != want {
					t.Fatalf("%s %s: step %d: seek to %d, want %d", key, name, i, abs, want)
				}
				var got []byte
				if st.read < 0 {
					got, err = io.ReadAll(sk)
				} else {
					got = make([]byte, st.read)
					var k int
					k, err = io.ReadFull(sk, got)
					got = got[:k]
					if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
						err = nil
					}
				}
				if err != nil {
					t.Fatalf("%s %s: step %d: read: %v", key, name, i, err)
				}
				if w := wantRange(data, abs, int64(st.read)); !bytes.Equal(got, w) {
					t.Fatalf("%s %s: step %d: read %d bytes at %d, want %d (or they differ)", key, name, i, len(got), abs, len(w))
				}
				pos = abs + int64(len(got))
			}
			if name == "suffix" && key == "files/put" {
				// The last 1024 bytes lie in the last two chunks.
				if have := rc.(*chunkReader).delivered; have != 2 {
					t.Errorf("a suffix read received %d chunks from its consumer, want 2", have)
				}
			}
			rc.Close()
		}
	}
	checkClean(t, s)
}
