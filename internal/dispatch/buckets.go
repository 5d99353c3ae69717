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

// workerBuckets opens the workers' buckets beside the work bucket, each once.
type workerBuckets struct {
	work blob.Store

	mu   sync.Mutex
	open map[string]blob.Store // by worker
}

func newWorkerBuckets(work blob.Store) *workerBuckets {
	return &workerBuckets{work: work, open: map[string]blob.Store{}}
}

// of returns worker's bucket, making it when it is missing.
func (b *workerBuckets) of(ctx context.Context, worker string) (blob.Store, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.open[worker]; s != nil {
		return s, nil
	}
	sib, ok := b.work.(sibling)
	if !ok {
		return nil, fmt.Errorf("the work store %T keeps no bucket per worker", b.work)
	}
	s, err := sib.Sibling(ctx, protocol.WorkerBucket(sib.Bucket(), worker), protocol.WorkerBucketTTL)
	if err != nil {
		return nil, fmt.Errorf("worker %s's bucket: %w", worker, err)
	}
	if len(b.open) >= maxOpenBuckets {
		clear(b.open) // workers come and go; opening one again costs a request
	}
	b.open[worker] = s
	return s, nil
}

// maxOpenBuckets bounds the workers' buckets an API node keeps open.
const maxOpenBuckets = 1024
