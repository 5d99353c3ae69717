package dispatch

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	Sibling(ctx context.Context, bucket string, ttl time.Duration) (blob.Store, error)
}

// workerBuckets opens the workers' buckets beside the work bucket, each once. Opening
// one takes JetStream requests that wait out a leader election: the lock is never held
// across them, and one opening per worker serves everyone who asks meanwhile.
type workerBuckets struct {
	work blob.Store

	mu      sync.Mutex
	open    map[string]blob.Store     // by worker
	opening map[string]*bucketOpening // by worker
}

// bucketOpening is an opening of a worker's bucket under way: done closes when s and
// err are set.
type bucketOpening struct {
	done chan struct{}
	s    blob.Store
	err  error
}

func newWorkerBuckets(work blob.Store) *workerBuckets {
	return &workerBuckets{work: work, open: map[string]blob.Store{}, opening: map[string]*bucketOpening{}}
}

// opened returns worker's bucket when this node has it open, and nil otherwise: it never
// makes one.
func (b *workerBuckets) opened(worker string) blob.Store {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.open[worker]; s != nil {
		return s
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
	if s := b.open[worker]; s != nil {
		b.mu.Unlock()
		return s, nil
	}
	o := b.opening[worker]
	if o == nil {
		o = &bucketOpening{done: make(chan struct{})}
		b.opening[worker] = o
		b.mu.Unlock()
		// Not ctx: the opening serves others who wait for it, and the JetStream requests
		// bound it.
		o.s, o.err = sib.Sibling(context.WithoutCancel(ctx), protocol.WorkerBucket(sib.Bucket(), worker), protocol.WorkerBucketTTL)
		b.mu.Lock()
		delete(b.opening, worker)
		if o.err == nil {
			if len(b.open) >= maxOpenBuckets {
				clear(b.open) // workers come and go; opening one again costs a request
			}
			b.open[worker] = o.s
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
