package run

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/store"
)

// local is the Executor of a server that runs its runs itself: Concurrency workers of
// this process take the admitted runs from a fair queue and execute them on the
// service's runner. At most Concurrency+Queue runs are admitted at once, queued or
// running (its slots).
type local struct {
	s       *Service
	slots   chan struct{} // one per admitted run, queued or running
	jobs    *fairQueue    // the admitted runs waiting for a worker
	mu      sync.Mutex
	active  map[string]*job
	workers sync.WaitGroup
}

type job struct {
	job      Job // what executes, computed at submission
	dir      string
	run      store.Run
	ctx      context.Context
	cancel   context.CancelFunc
	canceled atomic.Bool // by a user, not by shutdown
	retired  sync.Once
	attempt  int64 // the run's attempt this job claimed; its result is recorded only as that
}

// newLocal starts the pool of s's runs: cfg.Concurrency workers.
func newLocal(s *Service) *local {
	l := &local{s: s, slots: make(chan struct{}, s.cfg.Concurrency+s.cfg.Queue), jobs: newFairQueue(), active: map[string]*job{}}
	for range s.cfg.Concurrency {
		l.workers.Add(1)
		go l.worker()
	}
	return l
}

var _ Executor = (*local)(nil)

// Admit takes a slot, or refuses the run when every one is held.
func (l *local) Admit(context.Context) (func(), error) {
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, nil
	default:
		return nil, errs.New(ErrBusy, map[string]any{"queue": l.s.cfg.Queue},
			"every worker is busy and %d runs are waiting; try again in a few seconds", l.s.cfg.Queue)
	}
}

// Limit is 0: the slots bound this server's runs exactly.
func (l *local) Limit() int { return 0 }

// Start queues run r for the pool, in the slot Admit took.
func (l *local) Start(ctx context.Context, r store.Run, exec Job, dir string) error {
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j := &job{job: exec, dir: dir, run: r, ctx: jctx, cancel: cancel}
	l.mu.Lock()
	if l.s.stopping.Load() {
		l.mu.Unlock()
		cancel()
		l.s.st.CancelQueuedRun(ctx, r.ID, "cancelled: the server shut down", l.s.now())
		return errs.New(ErrBusy, nil, "the server is shutting down; try again in a moment")
	}
	l.active[r.ID] = j
	l.jobs.push(j) // a slot was reserved
	l.mu.Unlock()
	l.s.metrics.QueueDepth.Inc()
	return nil
}

func (l *local) worker() {
	defer l.workers.Done()
	for {
		j, ok := l.jobs.pop()
		if !ok {
			return
		}
		l.s.metrics.QueueDepth.Dec()
		l.execute(j)
		l.retire(j)
		l.jobs.done(j)
	}
}

// retire gives back what job j holds: its input directory and its slot. execute calls
// it before the run is recorded as over, so that a caller who saw it end finds the slot
// free; it runs once.
func (l *local) retire(j *job) {
	j.retired.Do(func() {
		l.mu.Lock()
		delete(l.active, j.run.ID)
		l.mu.Unlock()
		j.cancel()
		os.RemoveAll(j.dir)
		<-l.slots
	})
}

// execute runs one job to its end on this node's runner and records it.
func (l *local) execute(j *job) {
	s := l.s
	ctx := context.WithoutCancel(j.ctx)
	r := j.run
	// The local pool runs each run once: its only claim is attempt 1.
	j.attempt = 1
	if ok, err := s.Claim(ctx, r.ID, j.attempt, s.cfg.Node); err != nil || !ok {
		if err != nil {
			s.log.Error("claiming run", "run", r.ID, "error", err)
		}
		return // cancelled while queued
	}
	rep := Report{Limits: j.job.Limits, Stopped: StopCancelled}
	if !j.canceled.Load() {
		// Cancel came as this worker took the run, when it is set here: the run was still
		// queued when Cancel flagged it, but running by the time Cancel tried to end it as
		// queued, so it is for the worker to end.
		rep = l.executeHere(j)
	}
	l.retire(j)
	if _, err := s.Record(ctx, r.ID, j.attempt, rep); err != nil {
		s.log.Error("recording a finished run", "run", r.ID, "error", err)
	}
}

// executeHere runs job j on this node's runner, keeping its artifacts in the blob store.
func (l *local) executeHere(j *job) Report {
	s := l.s
	id := j.run.ID
	collect := func(ctx context.Context, dir string) ([]Artifact, []contract.Output, error) {
		return runjob.Collect(ctx, s.blobs, "runs/"+id+"/output/", dir, s.Quota(j.run))
	}
	onLine := func(stream string, line []byte) { s.hub.publish(id, Event{Type: stream, Data: string(line)}) }
	rep := runjob.Execute(j.ctx, s.runner, j.job, j.dir, collect, onLine)
	if rep.Failure != "" {
		s.log.Error("run failed in the server", "run", id, "error", rep.Failure)
	}
	switch {
	case j.canceled.Load():
		rep.Stopped = StopCancelled
	case j.ctx.Err() != nil:
		rep.Stopped = StopShutdown
	}
	return rep
}

// Cancel ends a queued run at once, and stops a running one, whose worker records it.
// It reports false when the pool does not hold the run.
func (l *local) Cancel(ctx context.Context, runID string) (bool, error) {
	s := l.s
	l.mu.Lock()
	j := l.active[runID]
	l.mu.Unlock()
	if j == nil {
		return false, nil
	}
	j.canceled.Store(true)
	j.cancel()
	// A run still queued never reaches the runner: end it here. A running one is ended by
	// its worker, which keeps what it printed and wrote so far.
	ok, err := s.st.CancelQueuedRun(ctx, runID, "cancelled", s.now())
	if err != nil {
		return false, err
	}
	if ok {
		s.metrics.Runs.WithLabelValues(store.StatusCancelled).Inc()
		s.status(runID, store.StatusCancelled)
	}
	return true, nil
}

// Status tells no one: there are no other servers.
func (l *local) Status(string, string) {}

// Watch has nothing to pass: the pool's runs print into the service's hub.
func (l *local) Watch(store.Run, func(Event)) func() { return func() {} }

// Recover marks runs a crash left queued or running as failed: this server held them.
func (l *local) Recover(ctx context.Context) error {
	n, err := l.s.st.FailUnfinishedRuns(ctx, "interrupted by server restart", reason(ReasonRestart).String(), l.s.now())
	if n > 0 {
		l.s.log.Warn("marked runs interrupted by a restart as failed", "runs", n)
	}
	return err
}

// Shutdown lets the running and queued runs finish for up to grace, then cancels the
// rest (they end "cancelled") and waits for the workers.
func (l *local) Shutdown(grace time.Duration) {
	l.mu.Lock()
	l.jobs.close()
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.workers.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	l.mu.Lock()
	for _, j := range l.active {
		j.cancel()
	}
	l.mu.Unlock()
	<-done
}
