package dispatch

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
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

func (s *stalledSibling) Sibling(ctx context.Context, bucket string, ttl time.Duration) (blob.Store, error) {
	if strings.HasSuffix(bucket, s.stalled) {
		s.opened.Add(1)
		<-s.release
	}
	return s.Store.Sibling(ctx, bucket, ttl)
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
