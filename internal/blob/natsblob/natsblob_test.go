package natsblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/blobtest"
	"github.com/skrip-dev/skrip/internal/natsserver"
)

// startServer runs an embedded nats-server for the test and returns a connection to it.
func startServer(t testing.TB) *nats.Conn {
	t.Helper()
	srv, err := natsserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func newTestStore(t testing.TB, nc *nats.Conn, cfg Config) *Store {
	t.Helper()
	s, err := New(context.Background(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	nc := startServer(t)
	var buckets atomic.Int64
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return newTestStore(t, nc, Config{Bucket: fmt.Sprintf("conf-%d", buckets.Add(1))})
	}, blobtest.Options{
		LeftoverCheck: func(t *testing.T, bs blob.Store) { checkClean(t, bs.(*Store)) },
	})
}

// checkClean fails t when the bucket holds chunks of anything but its live objects, or
// when a reader left its consumer behind.
func checkClean(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	live := map[string]uint32{}
	infos, err := s.obs.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Fatal(err)
	}
	for _, info := range infos {
		if info.Chunks > 0 {
			live[chunkSubject(s.bucket, info.NUID)] = info.Chunks
		}
	}
	stream, err := s.js.Stream(ctx, streamName(s.bucket))
	if err != nil {
		t.Fatal(err)
	}
	si, err := stream.Info(ctx, jetstream.WithSubjectFilter("$O."+s.bucket+".C.>"))
	if err != nil {
		t.Fatal(err)
	}
	for subj, n := range si.State.Subjects {
		if live[subj] != uint32(n) {
			t.Errorf("%d chunks on %s, want %d (leftover of a failed or replaced Put?)", n, subj, live[subj])
		}
		delete(live, subj)
	}
	for subj := range live {
		t.Errorf("live object's chunks on %s are missing", subj)
	}
	if si.State.Consumers != 0 {
		t.Errorf("%d consumers left on the bucket's stream, want 0", si.State.Consumers)
	}
}

func TestFailedPutReleasesStorage(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, startServer(t), Config{Bucket: "failed"})
	if _, err := s.Put(ctx, "files/kept", strings.NewReader("previous"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	before := bucketBytes(t, s)

	boom := errors.New("boom")
	r := io.MultiReader(io.LimitReader(rand.Reader, 2<<20), errReader{boom})
	if _, err := s.Put(ctx, "files/kept", r, blob.PutOptions{}); !errors.Is(err, boom) {
		t.Fatalf("Put with failing reader = %v, want boom", err)
	}
	if after := bucketBytes(t, s); after != before {
		t.Errorf("bucket holds %d bytes after a failed Put, %d before", after, before)
	}

	cctx, cancel := context.WithCancel(ctx)
	r = io.MultiReader(io.LimitReader(rand.Reader, 2<<20), cancelReader{cancel}, io.LimitReader(rand.Reader, 2<<20))
	if _, err := s.Put(cctx, "files/kept", r, blob.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Put = %v, want context.Canceled", err)
	}
	if after := bucketBytes(t, s); after != before {
		t.Errorf("bucket holds %d bytes after a cancelled Put, %d before", after, before)
	}
	checkClean(t, s)
}

func TestMaxBytes(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, startServer(t), Config{Bucket: "small", MaxBytes: 1 << 20})
	if _, err := s.Put(ctx, "files/kept", strings.NewReader("previous"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"files/big", "files/kept"} {
		if _, err := s.Put(ctx, key, io.LimitReader(rand.Reader, 2<<20), blob.PutOptions{}); err == nil {
			t.Fatalf("Put of 2 MiB into a 1 MiB bucket as %s succeeded", key)
		}
	}
	if _, err := s.Stat(ctx, "files/big"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("Stat after a refused Put = %v, want ErrNotFound", err)
	}
	rc, _, err := s.Get(ctx, "files/kept", 0, -1)
	if err != nil {
		t.Fatalf("previous version after a refused overwrite: %v", err)
	}
	got, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil || string(got) != "previous" {
		t.Fatalf("previous version after a refused overwrite = %q, %v", got, err)
	}
	if _, err := s.Put(ctx, "files/small", io.LimitReader(rand.Reader, 100<<10), blob.PutOptions{}); err != nil {
		t.Fatalf("Put of 100 KiB after a refused Put: %v", err)
	}
	checkClean(t, s)
}

func TestConfigDefaults(t *testing.T) {
	ctx := context.Background()
	nc := startServer(t)
	s := newTestStore(t, nc, Config{})
	st, err := s.obs.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.(*jetstream.ObjectBucketStatus).StreamInfo().Config
	if st.Bucket() != DefaultBucket || cfg.Replicas != 1 || cfg.MaxBytes != -1 || cfg.Storage != jetstream.FileStorage {
		t.Fatalf("bucket %q replicas=%d max_bytes=%d storage=%v", st.Bucket(), cfg.Replicas, cfg.MaxBytes, cfg.Storage)
	}
	// Opening the same bucket again keeps its objects.
	if _, err := s.Put(ctx, "files/x", strings.NewReader("x"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	again := newTestStore(t, nc, Config{Bucket: DefaultBucket})
	if _, err := again.Stat(ctx, "files/x"); err != nil {
		t.Fatalf("Stat through a second store: %v", err)
	}
}

// TestSlowReader reads an object for several times Config.Timeout: only the wait for each
// chunk is bounded, not the transfer.
func TestSlowReader(t *testing.T) {
	ctx := context.Background()
	const timeout = time.Second
	s := newTestStore(t, startServer(t), Config{Bucket: "slow", Timeout: timeout})
	data := make([]byte, 12*chunkSize)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "files/slow", bytes.NewReader(data), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Get(ctx, "files/slow", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	start := time.Now()
	var got bytes.Buffer
	buf := make([]byte, chunkSize)
	for {
		n, err := rc.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read after %d bytes and %s: %v", got.Len(), time.Since(start), err)
		}
		time.Sleep(timeout / 4)
	}
	if !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("slow read returned %d different bytes", got.Len())
	}
	if elapsed := time.Since(start); elapsed < 2*timeout {
		t.Fatalf("the read took only %s; the test needs it to outlast Timeout", elapsed)
	}
}

// TestReadWhileOverwritten: an object's chunks are purged when it is replaced or deleted,
// so a reader in flight either already holds every byte or fails, soon and well before
// Config.Timeout; it never hangs and never mixes versions.
func TestReadWhileOverwritten(t *testing.T) {
	for _, replace := range []string{"overwrite", "delete"} {
		t.Run(replace, func(t *testing.T) {
			ctx := context.Background()
			s := newTestStore(t, startServer(t), Config{Bucket: "race", Timeout: time.Minute})
			old := make([]byte, 8<<20)
			if _, err := rand.Read(old); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Put(ctx, "files/doc", bytes.NewReader(old), blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			rc, _, err := s.Get(ctx, "files/doc", 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			head := make([]byte, 64<<10)
			if _, err := io.ReadFull(rc, head); err != nil {
				t.Fatal(err)
			}
			if replace == "overwrite" {
				_, err = s.Put(ctx, "files/doc", strings.NewReader("new"), blob.PutOptions{})
			} else {
				err = s.Delete(ctx, "files/doc")
			}
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			rest, err := io.ReadAll(rc)
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Fatalf("reader took %s after the %s", elapsed, replace)
			}
			if err == nil && !bytes.Equal(append(head, rest...), old) {
				t.Fatal("reader returned bytes that are not the old object")
			}
			t.Logf("read after %s: %d more bytes, err %v", replace, len(rest), err)
		})
	}
}

func TestGetCancelled(t *testing.T) {
	s := newTestStore(t, startServer(t), Config{Bucket: "cancel"})
	if _, err := s.Put(context.Background(), "files/doc", io.LimitReader(rand.Reader, 4<<20), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc, _, err := s.Get(ctx, "files/doc", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, 1<<20); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) {
		// Bytes already buffered may be served, but the object cannot end cleanly.
		t.Fatalf("reading after cancel = %v, want context.Canceled", err)
	}
}

func TestPingClosedConnection(t *testing.T) {
	nc := startServer(t)
	s := newTestStore(t, nc, Config{Bucket: "ping"})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if err := s.Ping(context.Background()); err == nil {
		t.Fatal("Ping succeeded on a closed connection")
	}
}

func TestReadChunk(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		r       io.Reader
		wantN   int
		wantErr error
	}{
		{"fills across short reads", ctx, io.MultiReader(strings.NewReader("ab"), strings.NewReader("cd")), 4, nil},
		{"short at EOF", ctx, strings.NewReader("ab"), 2, io.EOF},
		{"keeps the reader's ErrUnexpectedEOF", ctx, io.MultiReader(strings.NewReader("ab"), errReader{io.ErrUnexpectedEOF}), 2, io.ErrUnexpectedEOF},
		{"cancelled", cancelled, strings.NewReader("abcd"), 0, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := make([]byte, 4)
			n, err := readChunk(c.ctx, c.r, p)
			if n != c.wantN || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("readChunk = %d, %v; want %d, %v", n, err, c.wantN, c.wantErr)
			}
		})
	}
}

func TestSweep(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, startServer(t), Config{Bucket: "sweep"})
	if _, err := s.Put(ctx, "files/live", io.LimitReader(rand.Reader, 300<<10), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// What a crash between the chunks and the commit leaves behind.
	for range 3 {
		if _, err := s.js.Publish(ctx, chunkSubject(s.bucket, "CRASHED"), []byte("orphan chunk")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep of fresh debris removed %d, %v; want 0", n, err)
	}
	if n, err := s.sweep(ctx, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("sweep of aged debris removed %d, %v; want 1", n, err)
	}
	checkClean(t, s)
	if _, err := s.Stat(ctx, "files/live"); err != nil {
		t.Fatalf("live object after sweep: %v", err)
	}
}

func BenchmarkPutGet100MiB(b *testing.B) {
	blobtest.BenchPutGet(b, newTestStore(b, startServer(b), Config{Bucket: "bench"}), 100<<20)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// cancelReader cancels its context when read and then reports EOF, so the next reader of
// an io.MultiReader goes on supplying data.
type cancelReader struct{ cancel context.CancelFunc }

func (c cancelReader) Read([]byte) (int, error) {
	c.cancel()
	return 0, io.EOF
}

func bucketBytes(t *testing.T, s *Store) uint64 {
	t.Helper()
	st, err := s.obs.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
