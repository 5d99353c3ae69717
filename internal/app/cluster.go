package app

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/version"
	"github.com/skrip-dev/skrip/internal/worker"
)

// concurrency is how many runs this node executes at once: 0 on a cluster's API node
// that leaves them to workers.
func concurrency(cfg config.Config) int {
	if cfg.RunnerConcurrency <= 0 && !cfg.Cluster() {
		return runtime.NumCPU()
	}
	return max(cfg.RunnerConcurrency, 0)
}

// openCluster makes this API node queue its runs for the cluster's workers and answer
// them (docs/cluster.md), and runs an in-process worker when this node executes runs
// too (SKRIP_RUNNER_CONCURRENCY above 0).
func (a *App) openCluster(ctx context.Context) error {
	work, err := natsblob.New(ctx, a.nc, natsblob.Config{Bucket: a.cfg.NATSWorkBucket, Replicas: a.cfg.NATSReplicas, Node: a.cfg.Node(),
		Description: workBucketDescription,
		DropMarkers: true, Log: a.log})
	if err != nil {
		return fmt.Errorf("opening the work bucket %s: %w", a.cfg.NATSWorkBucket, err)
	}
	a.closers = append(a.closers, work.Close)
	js, err := jetstream.New(a.nc)
	if err != nil {
		return err
	}
	names, err := protocol.NewNames(a.cfg.NATSPrefix)
	if err != nil {
		return fmt.Errorf("setting nats-prefix (SKRIP_NATS_PREFIX): %w", err)
	}
	dcfg := dispatch.Config{Replicas: a.cfg.NATSReplicas, Queue: a.cfg.RunnerQueue, AckWait: a.cfg.RunAckWait, Node: a.cfg.Node(), Names: names}
	stream, err := dispatch.Setup(ctx, js, dcfg, a.log)
	if err != nil {
		return err
	}
	queue := dispatch.NewQueue(a.Runs, a.nc, js, stream, a.Store, work, a.sessionCache, dcfg, a.Metrics, a.log)
	a.Runs.Use(queue)
	boxes, err := dispatch.NewBoxes(ctx, a.nc, js, work, dcfg, a.log)
	if err != nil {
		return err
	}
	boxes.CapWorkerBuckets(a.cfg.NATSWorkerBucketBytes)
	a.Sandboxes.UseCluster(boxes)
	h, err := dispatch.Serve(a.nc, stream, a.Store, a.Runs, a.Blobs, work, dcfg, a.Metrics, a.log)
	if err != nil {
		return err
	}
	h.CapWorkerBuckets(a.cfg.NATSWorkerBucketBytes)
	a.closers = append(a.closers, func() error { h.Close(); return nil })
	sctx, stopSweep := context.WithCancel(context.Background())
	swept := make(chan struct{})
	go func() { defer close(swept); a.sweep(sctx, h, work) }()
	a.closers = append(a.closers, func() error { stopSweep(); <-swept; return nil })
	// The runs wait in the database; one node of the cluster sends them to the workers,
	// users in turn.
	schedCtx, stopSched := context.WithCancel(context.Background())
	scheduled := make(chan struct{})
	go func() {
		defer close(scheduled)
		lease := a.Store.Lease(dispatch.ScheduleLease)
		defer lease.Release()
		queue.Schedule(schedCtx, lease)
	}()
	a.closers = append(a.closers, func() error { stopSched(); <-scheduled; return nil })
	conc := concurrency(a.cfg)
	if conc == 0 {
		return nil
	}
	budget, err := WorkerBoxBudget(ctx, a.cfg, a.Runner, a.log)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	w, err := worker.New(a.nc, work, a.Runner, worker.Config{ID: a.cfg.Worker(), Names: names, Host: host, Concurrency: conc, AckWait: a.cfg.RunAckWait,
		DataDir: a.cfg.DataDir, CacheBytes: a.cfg.WorkerCacheBytes, Grace: a.cfg.ShutdownGrace, Version: version.Version,
		BoxBudget: budget},
		a.Metrics, a.log.With("component", "worker"))
	if err != nil {
		return err
	}
	wctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx) }()
	a.closers = append(a.closers, func() error { stop(); <-done; return nil })
	return nil
}

// sweep ends the runs the queue lost track of (dispatch.Handlers.Sweep), every ack wait,
// on the one API node that holds the sweep's lease.
func (a *App) sweep(ctx context.Context, h *dispatch.Handlers, work blob.Store) {
	lease := a.Store.Lease(dispatch.SweepLease)
	defer lease.Release()
	t := time.NewTicker(a.cfg.RunAckWait)
	defer t.Stop()
	var collected time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if held, _ := lease.Held(ctx); !held {
			continue
		}
		if _, err := h.Sweep(ctx, 2*a.cfg.RunAckWait, a.cfg.RunWorkerWait); err != nil && ctx.Err() == nil {
			a.log.Warn("sweeping the run queue", "error", err)
		}
		if time.Since(collected) > 10*time.Minute {
			collected = time.Now()
			if n, err := dispatch.CollectWork(ctx, work, time.Now()); err != nil && ctx.Err() == nil {
				a.log.Warn("removing old objects of the work bucket", "error", err)
			} else if n > 0 {
				a.log.Info("removed old objects of the work bucket", "objects", n)
			}
			if n, err := h.SweepWorkerBuckets(ctx, protocol.WorkerBucketTTL); err != nil && ctx.Err() == nil {
				a.log.Warn("removing the buckets of workers gone", "error", err)
			} else if n > 0 {
				a.log.Info("removed the buckets of workers gone", "buckets", n)
			}
		}
	}
}

// workBucketDescription describes the cluster's shared work bucket.
const workBucketDescription = "skrip: runs' sealed inputs and scripts on their way to workers (docs/cluster.md)"
