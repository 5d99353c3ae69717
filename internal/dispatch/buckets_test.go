package dispatch

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// stalledSibling is the work bucket of a cluster whose stream of one worker's bucket
// is electing a leader: opening that bucket waits until release closes.
type stalledSibling struct {
	*natsblob.Store
	stalled string
	release chan struct{}
	opened  atomic.Int32 // openings of the stalled bucket
}

func (s *stalledSibling) SiblingCapped(ctx context.Context, bucket string, ttl time.Duration, maxBytes int64) (blob.Store, error) {
	if strings.HasSuffix(bucket, s.stalled) {
		s.opened.Add(1)
		<-s.release
	}
	return s.Store.SiblingCapped(ctx, bucket, ttl, maxBytes)
}

// TestWorkerBucketsOpenApart: a worker's bucket that takes long to open holds up no
// other worker's, and the callers waiting for it share one opening.
func TestWorkerBucketsOpenApart(t *testing.T) {
	nc, err := nats.Connect(testutil.NATSServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	work, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: "skrip-work"})
	if err != nil {
		t.Fatal(err)
	}
	sib := &stalledSibling{Store: work, stalled: "-w-slow", release: make(chan struct{})}
	b := newWorkerBuckets(sib)
	slow := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := b.of(ctx, "slow")
			slow <- err
		}()
	}
	for sib.opened.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	fast := make(chan error, 1)
	go func() {
		_, err := b.of(ctx, "fast")
		fast <- err
	}()
	select {
	case err := <-fast:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(sib.release)
		t.Fatal("opening a worker's bucket waited for another worker's")
	}
	close(sib.release)
	for range 2 {
		if err := <-slow; err != nil {
			t.Fatal(err)
		}
	}
	if n := sib.opened.Load(); n != 1 {
		t.Errorf("the slow bucket was opened %d times, want once", n)
	}
	if b.opened("slow") == nil || b.opened("fast") == nil || b.opened("other") != nil {
		t.Errorf("opened: slow %v, fast %v, other %v", b.opened("slow"), b.opened("fast"), b.opened("other"))
	}
}

// TestSweepWorkerBuckets: a worker's bucket an API node makes has the size cap, and the
// sweep deletes the buckets of workers gone from the registry whose objects have aged
// out, and no other.
func TestSweepWorkerBuckets(t *testing.T) {
	nc, err := nats.Connect(testutil.NATSServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, _ := jetstream.New(nc)
	work, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: "skrip-work"})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: protocol.Names{}.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "alive", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	h := &Handlers{js: js, work: work, own: newWorkerBuckets(work)}
	h.CapWorkerBuckets(64 << 20)
	for _, w := range []string{"alive", "gone", "busy"} {
		own, err := h.own.of(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		if w == "busy" {
			if _, err := own.Put(ctx, "work/xfer/x", strings.NewReader("a file on its way"), blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	stream, err := js.Stream(ctx, "OBJ_"+protocol.WorkerBucket("skrip-work", "gone"))
	if err != nil {
		t.Fatal(err)
	}
	if got := stream.CachedInfo().Config.MaxBytes; got != 64<<20 {
		t.Errorf("a worker's bucket was made with MaxBytes %d, want %d", got, 64<<20)
	}
	if n, err := h.SweepWorkerBuckets(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("a sweep of young buckets removed %d, %v", n, err)
	}
	time.Sleep(1100 * time.Millisecond)
	if n, err := h.SweepWorkerBuckets(ctx, time.Second); err != nil || n != 1 {
		t.Fatalf("the sweep removed %d buckets, %v; want 1", n, err)
	}
	for w, want := range map[string]bool{"alive": true, "gone": false, "busy": true} {
		_, err := js.Stream(ctx, "OBJ_"+protocol.WorkerBucket("skrip-work", w))
		if got := err == nil; got != want {
			t.Errorf("worker %s's bucket is there: %v (%v), want %v", w, got, err, want)
		}
	}
	if h.own.opened("gone") != nil {
		t.Error("the node keeps a deleted bucket open")
	}
	// The worker comes back: its next claim makes its bucket anew.
	if _, err := h.own.of(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx, "OBJ_"+protocol.WorkerBucket("skrip-work", "gone")); err != nil {
		t.Fatalf("the bucket of a worker back: %v", err)
	}
}
