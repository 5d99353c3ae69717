package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

// What a worker writes goes in a bucket of its own (protocol.WorkerBucket): its NATS
// user may write there and nowhere else, so that no worker can overwrite another's
// reports and artifacts, or read its sandboxes' files. An API node makes a worker's
// bucket before it gives the worker a run or a sandbox's file, and reads a run's report
// and artifacts only from the bucket of the worker that holds the run.

// sibling is a work store that opens the buckets beside it: natsblob's.
type sibling interface {
	Bucket() string
	SiblingCapped(ctx context.Context, bucket string, ttl time.Duration, maxBytes int64) (blob.Store, error)
}

// workerBuckets opens the workers' buckets beside the work bucket, each once. Opening
// one takes JetStream requests that wait out a leader election: the lock is never held
// across them, and one opening per worker serves everyone who asks meanwhile.
type workerBuckets struct {
	work blob.Store
	// maxBytes caps a worker's bucket an API node makes (SKRIP_NATS_WORKER_BUCKET_BYTES),
	// so that a worker cannot fill the NATS servers' disks; 0 leaves it uncapped.
	maxBytes atomic.Int64

	mu      sync.Mutex
	open    map[string]openBucket     // by worker
	opening map[string]*bucketOpening // by worker
}

// openBucket is a worker's bucket this node has open, since when. The sweep deletes the
// bucket of a worker gone for longer than protocol.WorkerBucketTTL
// (SweepWorkerBuckets), so an open one older than half that is opened again (making it
// anew when it went) before it is used.
type openBucket struct {
	s  blob.Store
	at time.Time
}

// bucketOpening is an opening of a worker's bucket under way: done closes when s and
// err are set.
type bucketOpening struct {
	done chan struct{}
	s    blob.Store
	err  error
}

func newWorkerBuckets(work blob.Store) *workerBuckets {
	return &workerBuckets{work: work, open: map[string]openBucket{}, opening: map[string]*bucketOpening{}}
}

// opened returns worker's bucket when this node has it open, and nil otherwise: it never
// makes one.
func (b *workerBuckets) opened(worker string) blob.Store {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o, ok := b.open[worker]; ok && time.Since(o.at) < protocol.WorkerBucketTTL/2 {
		return o.s
	}
	return nil
}

// of returns worker's bucket, making it when it is missing.
func (b *workerBuckets) of(ctx context.Context, worker string) (blob.Store, error) {
	sib, ok := b.work.(sibling)
	if !ok {
		return nil, fmt.Errorf("the work store %T keeps no bucket per worker", b.work)
	}
	b.mu.Lock()
	if o, ok := b.open[worker]; ok && time.Since(o.at) < protocol.WorkerBucketTTL/2 {
		b.mu.Unlock()
		return o.s, nil
	}
	o := b.opening[worker]
	if o == nil {
		o = &bucketOpening{done: make(chan struct{})}
		b.opening[worker] = o
		b.mu.Unlock()
		// Not ctx: the opening serves others who wait for it, and the JetStream requests
		// bound it.
		o.s, o.err = sib.SiblingCapped(context.WithoutCancel(ctx), protocol.WorkerBucket(sib.Bucket(), worker), protocol.WorkerBucketTTL, b.maxBytes.Load())
		b.mu.Lock()
		delete(b.opening, worker)
		if o.err == nil {
			if len(b.open) >= maxOpenBuckets {
				clear(b.open) // workers come and go; opening one again costs a request
			}
			b.open[worker] = openBucket{s: o.s, at: time.Now()}
		}
		close(o.done)
	}
	b.mu.Unlock()
	select {
	case <-o.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("worker %s's bucket: %w", worker, ctx.Err())
	}
	if o.err != nil {
		return nil, fmt.Errorf("worker %s's bucket: %w", worker, o.err)
	}
	return o.s, nil
}

// maxOpenBuckets bounds the workers' buckets an API node keeps open.
const maxOpenBuckets = 1024

// forget drops worker's bucket from those open here.
func (b *workerBuckets) forget(worker string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.open, worker)
}

// CapWorkerBuckets sets the size cap of the workers' buckets this node makes from now on
// (SKRIP_NATS_WORKER_BUCKET_BYTES); 0 leaves them uncapped. A bucket made already keeps
// its own.
func (h *Handlers) CapWorkerBuckets(maxBytes int64) { h.own.maxBytes.Store(maxBytes) }

// CapWorkerBuckets is Handlers.CapWorkerBuckets for the buckets Boxes makes.
func (b *Boxes) CapWorkerBuckets(maxBytes int64) { b.own.maxBytes.Store(maxBytes) }

// SweepWorkerBuckets deletes the buckets of the workers that are gone: no heartbeat in
// the registry, and nothing in the bucket, none of it put for idle (the buckets' TTL,
// protocol.WorkerBucketTTL: everything in it has aged out by then). Without it every
// worker that ever was would keep a stream of its own. A worker that comes back gets its
// bucket made anew by its next claim or sandbox. It returns how many went.
func (h *Handlers) SweepWorkerBuckets(ctx context.Context, idle time.Duration) (int, error) {
	sib, ok := h.work.(sibling)
	if !ok {
		return 0, nil
	}
	kv, err := h.js.KeyValue(ctx, h.names.Registry())
	if err != nil {
		return 0, err
	}
	prefix := "OBJ_" + protocol.WorkerBucket(sib.Bucket(), "")
	names := h.js.StreamNames(ctx)
	var gone []string
	for name := range names.Name() {
		if worker, ok := strings.CutPrefix(name, prefix); ok && worker != "" {
			gone = append(gone, worker)
		}
	}
	if err := names.Err(); err != nil {
		return 0, fmt.Errorf("listing the workers' buckets: %w", err)
	}
	n := 0
	for _, worker := range gone {
		if _, err := kv.Get(ctx, worker); err == nil {
			continue
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return n, err
		}
		stream, err := h.js.Stream(ctx, prefix+worker)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		info := stream.CachedInfo()
		if info.State.Msgs > 0 || time.Since(info.Created) < idle || time.Since(info.State.LastTime) < idle {
			continue
		}
		h.own.forget(worker)
		if err := h.js.DeleteStream(ctx, prefix+worker); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return n, fmt.Errorf("deleting worker %s's bucket: %w", worker, err)
		}
		n++
	}
	return n, nil
}
