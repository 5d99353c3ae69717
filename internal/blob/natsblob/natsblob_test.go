package natsblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/blobtest"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// startServer runs an embedded nats-server for the test and returns a connection to it.
func startServer(t testing.TB) *nats.Conn {
	t.Helper()
	srv, err := natsserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
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
	// A reader deletes a consumer on a node that stopped in the background, once the
	// cluster answers again.
	for deadline := time.Now().Add(staleConsumerPatience); si.State.Consumers != 0 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		if si, err = stream.Info(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if si.State.Consumers != 0 {
		t.Errorf("%d consumers left on the bucket's stream, want 0", si.State.Consumers)
		for ci := range stream.ListConsumers(ctx).Info() {
			var on string
			if ci.Cluster != nil {
				on = ci.Cluster.Leader
			}
			t.Logf("left: consumer %s on %q, created %s, %d pending", ci.Name, on, ci.Created.Format(time.RFC3339Nano), ci.NumPending)
		}
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
		start := time.Now()
		if _, err := s.Put(ctx, key, io.LimitReader(rand.Reader, 2<<20), blob.PutOptions{}); err == nil {
			t.Fatalf("Put of 2 MiB into a 1 MiB bucket as %s succeeded", key)
		}
		// A refusal is final: it is not retried as a leader change would be.
		if took := time.Since(start); took >= leaderWait/2 {
			t.Fatalf("the refused Put of %s took %s", key, took)
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
	nc := startServer(t)
	debris := func(t *testing.T, s *Store, id string) string {
		t.Helper()
		subj := chunkSubject(s.bucket, id)
		for range 3 {
			if _, err := s.js.Publish(ctx, subj, []byte("orphan chunk")); err != nil {
				t.Fatal(err)
			}
		}
		return subj
	}
	chunksOn := func(t *testing.T, s *Store, subj string) uint64 {
		t.Helper()
		si, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(subj))
		if err != nil {
			t.Fatal(err)
		}
		return si.State.Subjects[subj]
	}
	longAgo, later := time.Now().Add(-time.Hour), time.Now().Add(time.Minute)

	t.Run("shared bucket", func(t *testing.T) {
		s := newTestStore(t, nc, Config{Bucket: "sweep-shared", Node: "n1"})
		if _, err := s.Put(ctx, "files/live", io.LimitReader(rand.Reader, 300<<10), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		foreign := debris(t, s, "n2_CRASHED")    // another node's: maybe a slow upload
		own := debris(t, s, "n1_CRASHED")        // this node's, from before a crash
		legacy := debris(t, s, "OLDNUIDCRASHED") // written before chunks named their node
		inFlight := s.startPut()                 // a Put of this store, still writing
		writing := debris(t, s, inFlight)
		if n, err := s.sweep(ctx, longAgo, longAgo); err != nil || n != 1 {
			t.Fatalf("sweep removed %d, %v; want 1 (this node's crashed Put)", n, err)
		}
		if chunksOn(t, s, own) != 0 || chunksOn(t, s, foreign) != 3 || chunksOn(t, s, legacy) != 3 || chunksOn(t, s, writing) != 3 {
			t.Fatal("sweep removed the wrong chunks")
		}
		if n, err := s.sweep(ctx, later, longAgo); err != nil || n != 2 {
			t.Fatalf("sweep of aged debris removed %d, %v; want 2", n, err)
		}
		if chunksOn(t, s, writing) != 3 {
			t.Fatal("sweep removed the chunks of a Put in flight")
		}
		s.endPut(inFlight)
		if n, err := s.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("Sweep after the Put gave up removed %d, %v; want 1", n, err)
		}
		checkClean(t, s)
		if _, err := s.Stat(ctx, "files/live"); err != nil {
			t.Fatalf("live object after sweep: %v", err)
		}
	})
	t.Run("exclusive bucket", func(t *testing.T) {
		s := newTestStore(t, nc, Config{Bucket: "sweep-exclusive", Node: "n1", Exclusive: true})
		debris(t, s, "n2_CRASHED")
		debris(t, s, "OLDNUIDCRASHED")
		if n, err := s.Sweep(ctx); err != nil || n != 2 {
			t.Fatalf("Sweep removed %d, %v; want 2", n, err)
		}
		checkClean(t, s)
	})
	t.Run("delete markers", func(t *testing.T) {
		s := newTestStore(t, nc, Config{Bucket: "sweep-markers"})
		for _, k := range []string{"files/a", "files/b"} {
			if _, err := s.Put(ctx, k, strings.NewReader(k), blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Put(ctx, "files/b", strings.NewReader("again"), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.sweep(ctx, longAgo, longAgo); err != nil {
			t.Fatal(err)
		}
		if n := metaMessages(t, s); n != 2 {
			t.Fatalf("%d meta messages after a sweep keeping young markers, want 2", n)
		}
		if _, err := s.sweep(ctx, longAgo, later); err != nil {
			t.Fatal(err)
		}
		if n := metaMessages(t, s); n != 1 {
			t.Fatalf("%d meta messages after old markers were dropped, want 1 (files/b)", n)
		}
		if _, err := s.Stat(ctx, "files/b"); err != nil {
			t.Fatalf("files/b after the markers went: %v", err)
		}
	})
	t.Run("no markers", func(t *testing.T) {
		// A bucket with DropMarkers keeps nothing of a deleted key, not even a marker,
		// and a key put again after a delete stays.
		s := newTestStore(t, nc, Config{Bucket: "no-markers", DropMarkers: true})
		for i := range 50 {
			k := fmt.Sprintf("work/runs/r_%d/report.json", i)
			if _, err := s.Put(ctx, k, strings.NewReader(k), blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if n := metaMessages(t, s); n != 0 {
			t.Fatalf("%d meta messages after 50 keys were put and deleted, want 0", n)
		}
		for _, body := range []string{"one", "two"} {
			if _, err := s.Put(ctx, "work/cas/x", strings.NewReader(body), blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Delete(ctx, "work/cas/x"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(ctx, "work/cas/x", strings.NewReader("three"), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if info, err := s.Stat(ctx, "work/cas/x"); err != nil || info.Size != 5 {
			t.Fatalf("a key put again after its delete: %+v, %v", info, err)
		}
		if n := metaMessages(t, s); n != 1 {
			t.Fatalf("%d meta messages, want 1", n)
		}
		checkClean(t, s)
	})
}

func metaMessages(t *testing.T, s *Store) uint64 {
	t.Helper()
	si, err := s.stream.Info(context.Background(), jetstream.WithSubjectFilter("$O."+s.bucket+".M.>"))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range si.State.Subjects {
		n += c
	}
	return n
}

// TestExistingBucketLeftAlone checks that a bucket an operator made (or changed) keeps
// its settings however often skrip starts (with the replica count it has, and another), on the embedded server and on a separate one,
// and that a replica count other than the configured one is only logged.
func TestExistingBucketLeftAlone(t *testing.T) {
	servers := map[string]func(t *testing.T) *nats.Conn{
		"embedded": func(t *testing.T) *nats.Conn { return startServer(t) },
		"separate": func(t *testing.T) *nats.Conn {
			nc, err := nats.Connect(testutil.NATSServer(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(nc.Close)
			return nc
		},
	}
	for name, connect := range servers {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			nc := connect(t)
			// The operator's bucket, made with a plain nats.go client.
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			want := jetstream.ObjectStoreConfig{Bucket: "ops", Description: "the operator's bucket", MaxBytes: 64 << 20,
				Replicas: 1, Storage: jetstream.FileStorage}
			if _, err := js.CreateObjectStore(ctx, want); err != nil {
				t.Fatal(err)
			}
			var logs testutil.LockedBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			for _, replicas := range []int{1, 3} {
				newTestStore(t, nc, Config{Bucket: "ops", Replicas: replicas, Log: log})
			}
			stream, err := js.Stream(ctx, streamName("ops"))
			if err != nil {
				t.Fatal(err)
			}
			got := stream.CachedInfo().Config
			if got.Description != want.Description || got.MaxBytes != want.MaxBytes || got.Replicas != 1 {
				t.Fatalf("bucket after two starts: description %q, max_bytes %d, replicas %d; want %q, %d, 1",
					got.Description, got.MaxBytes, got.Replicas, want.Description, want.MaxBytes)
			}
			for _, w := range []string{"level=WARN", "bucket=ops", "setting=SKRIP_NATS_REPLICAS", "bucket_replicas=1", "configured_replicas=3"} {
				if !strings.Contains(logs.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, logs.String())
				}
			}
			// A missing bucket is created with the configured settings.
			newTestStore(t, nc, Config{Bucket: "fresh", Replicas: 1, MaxBytes: 32 << 20})
			fresh, err := js.Stream(ctx, streamName("fresh"))
			if err != nil {
				t.Fatal(err)
			}
			if c := fresh.CachedInfo().Config; c.Replicas != 1 || c.MaxBytes != 32<<20 || c.Description != "skrip: file bytes" {
				t.Fatalf("created bucket: %+v", c)
			}
		})
	}
}

// TestClusterBucketKeepsReplicas scales nothing down: an operator's 3-replica bucket on a
// 3-node cluster stays at 3 replicas when skrip, configured for 1, starts twice.
func TestClusterBucketKeepsReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc := testutil.StartNATSCluster(t, 3).Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "ha", Description: "three copies",
		MaxBytes: 64 << 20, Replicas: 3, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	var logs testutil.LockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for range 2 {
		s := newTestStore(t, nc, Config{Bucket: "ha", Replicas: 1, Log: log})
		if _, err := s.Put(ctx, "files/x", strings.NewReader("x"), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := js.Stream(ctx, streamName("ha"))
	if err != nil {
		t.Fatal(err)
	}
	if c := stream.CachedInfo().Config; c.Replicas != 3 || c.MaxBytes != 64<<20 || c.Description != "three copies" {
		t.Fatalf("bucket after two starts: replicas %d, max_bytes %d, description %q", c.Replicas, c.MaxBytes, c.Description)
	}
	if !strings.Contains(logs.String(), "bucket_replicas=3 configured_replicas=1") {
		t.Errorf("no warning about the replica count:\n%s", logs.String())
	}
}

// TestObjectMetadata checks that a plain nats.go client sees what an object is.
func TestObjectMetadata(t *testing.T) {
	ctx := context.Background()
	nc := startServer(t)
	s := newTestStore(t, nc, Config{Bucket: "meta"})
	key := "files/_objects/b_01TEST"
	if _, err := s.Put(ctx, key, strings.NewReader("a,b\n"), blob.PutOptions{ContentType: "text/csv",
		FileKey: "files/report.csv", Owner: "u_01OWNER", Name: "Report 2024.csv"}); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(ctx, "meta")
	if err != nil {
		t.Fatal(err)
	}
	info, err := obs.GetInfo(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"skrip-file-key": "files/report.csv", "skrip-owner": "u_01OWNER", "skrip-name": "Report 2024.csv"}
	for k, v := range want {
		if info.Metadata[k] != v {
			t.Errorf("metadata %s = %q, want %q (all: %v)", k, info.Metadata[k], v, info.Metadata)
		}
	}
	if info.Description != `file files/report.csv, owner u_01OWNER, name "Report 2024.csv"` {
		t.Errorf("description = %q", info.Description)
	}
	if info.Headers.Get("Content-Type") != "text/csv" {
		t.Errorf("headers = %v", info.Headers)
	}
	// The bytes read back through the plain client too.
	b, err := obs.GetBytes(ctx, key)
	if err != nil || string(b) != "a,b\n" {
		t.Fatalf("plain client read %q, %v", b, err)
	}
}

// TestDeleteIsWatched checks that a watcher of the bucket (a plain nats.go client) sees a
// delete as the Object Store's delete marker.
func TestDeleteIsWatched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := startServer(t)
	s := newTestStore(t, nc, Config{Bucket: "watched"})
	if _, err := s.Put(ctx, "files/doomed", strings.NewReader("bytes"), blob.PutOptions{FileKey: "files/doomed"}); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(ctx, "watched")
	if err != nil {
		t.Fatal(err)
	}
	w, err := obs.Watch(ctx, jetstream.UpdatesOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := s.Delete(ctx, "files/doomed"); err != nil {
		t.Fatal(err)
	}
	select {
	case info := <-w.Updates():
		if info == nil || info.Name != "files/doomed" || !info.Deleted {
			t.Fatalf("watcher got %+v, want files/doomed deleted", info)
		}
		if info.Metadata["skrip-file-key"] != "files/doomed" {
			t.Errorf("the marker lost the object's metadata: %v", info.Metadata)
		}
	case <-ctx.Done():
		t.Fatal("the watcher saw no delete")
	}
	if _, err := obs.GetInfo(ctx, "files/doomed"); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("plain client GetInfo after delete = %v, want not found", err)
	}
	if err := s.Delete(ctx, "files/doomed"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("second delete = %v, want ErrNotFound", err)
	}
	if _, err := s.Put(ctx, "files/doomed", strings.NewReader("again"), blob.PutOptions{}); err != nil {
		t.Fatalf("put over the delete marker: %v", err)
	}
	w.Stop()
	checkClean(t, s)
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

// TestSibling: a bucket opened beside another has its own objects, the other's
// settings (drop markers, node), and the TTL it was made with.
func TestSibling(t *testing.T) {
	ctx := context.Background()
	nc := startServer(t)
	s := newTestStore(t, nc, Config{Bucket: "work", DropMarkers: true, Node: "n1"})
	if _, err := s.Put(ctx, "files/x", strings.NewReader("x"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	sib, err := s.Sibling(ctx, "work-w-w1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	o := sib.(*Store)
	st, err := o.obs.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bucket() != "work-w-w1" || st.TTL() != time.Hour || !o.dropMarkers || o.node != "n1" || s.Bucket() != "work" {
		t.Fatalf("sibling %q ttl %s, drop markers %v, node %q", st.Bucket(), st.TTL(), o.dropMarkers, o.node)
	}
	if _, err := sib.Stat(ctx, "files/x"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the sibling holds the other bucket's object: %v", err)
	}
	if _, err := sib.Put(ctx, "files/y", strings.NewReader("y"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "files/y"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the other bucket holds the sibling's object: %v", err)
	}
}

// TestBucketDescriptions: a bucket says what it holds to whoever lists the account's
// streams: the files bucket and the work bucket as their makers describe them, a
// worker's bucket as one, and none as the other's "file bytes".
func TestBucketDescriptions(t *testing.T) {
	nc, err := nats.Connect(testutil.NATSServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := New(ctx, nc, Config{Bucket: "skrip-work", Description: "skrip: runs in transit"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sib, err := s.Sibling(ctx, "skrip-work-w-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer sib.Close()
	js, _ := jetstream.New(nc)
	for bucket, want := range map[string]string{"skrip-work": "skrip: runs in transit", "skrip-work-w-1": siblingDescription} {
		st, err := js.Stream(ctx, "OBJ_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.CachedInfo().Config.Description; got != want {
			t.Errorf("%s is described %q, want %q", bucket, got, want)
		}
	}
}
