package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// ScheduleLease is the name of the lease under which one API node of a cluster sends
// the held runs to the workers.
const ScheduleLease = "dispatch-schedule"

// How the scheduler works: it looks every scheduleEvery (and at once when a run is
// held), and reads the workers' capacity at most every capacityEvery. A user's last send
// counts for servedMemory.
const (
	scheduleEvery = 250 * time.Millisecond
	capacityEvery = time.Second
	servedMemory  = time.Hour
)

func (q *Queue) kick() {
	if err := q.nc.Publish(q.cfg.Names.KickSubject(), nil); err != nil {
		q.log.Warn("waking the run scheduler; it looks again within a second", "error", err)
	}
}

// Schedule sends held runs to the workers until ctx ends, on the one API node of the
// cluster that holds lease (ScheduleLease), serving users in turn (SPEC §12).
//
// A run waits in the database (Dispatch), not on the stream, whose order is first in,
// first out: there, a user who queued eight runs would have them all ahead of the next
// user's. The stream gets only as many runs as the workers have slots (the sum of their
// heartbeats' concurrency, less the messages on the stream, which leave it when their
// run is recorded), so it never holds a backlog of its own. Whenever a slot is free, the
// next run sent is the oldest of the user whose last run was sent longest ago (a user
// never served first). Another user's run thus starts within one run's time however
// many one user queued, across every API node, since there is one scheduler.
//
// Nothing is lost when the scheduler's node dies: the held runs are in the database, and
// the next node to take the lease sends them. A run is marked sent before it is
// published; one whose publish never happened (its scheduler died in between) is sent
// again by the sweep (Handlers.Sweep), and the message id (the run id) keeps a publish
// that is tried twice one message.
func (q *Queue) Schedule(ctx context.Context, lease *store.Lease) {
	wake := make(chan struct{}, 1)
	// KickSubject wakes the scheduler when an API node held a run (API nodes only: workers
	// may neither publish nor subscribe under skrip.api.).
	sub, err := protocol.Subscribe(q.nc, q.cfg.Names.KickSubject(), "", false, func(*nats.Msg) {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		q.log.Warn("listening for held runs; the scheduler looks every 250 ms instead", "error", err)
	} else {
		defer sub.Unsubscribe()
	}
	t := time.NewTicker(scheduleEvery)
	defer t.Stop()
	var s schedState
	var warned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wake:
		}
		if time.Since(s.leaseAt) > capacityEvery {
			s.leaseAt = time.Now()
			s.held, _ = lease.Held(ctx)
		}
		if !s.held {
			continue
		}
		if err := q.schedule(ctx, &s); err != nil && ctx.Err() == nil && time.Since(warned) > time.Minute {
			warned = time.Now()
			q.log.Warn("sending held runs to the workers; trying again", "error", err)
		}
	}
}

// schedState is what the scheduler keeps between its looks.
type schedState struct {
	held     bool // the lease, as last checked
	leaseAt  time.Time
	capacity int // the workers' slots, as last read
	capAt    time.Time
}

// schedule sends held runs while the workers have free slots, users in turn.
func (q *Queue) schedule(ctx context.Context, s *schedState) error {
	if time.Since(s.capAt) > capacityEvery {
		c, err := q.capacity(ctx)
		if err != nil {
			return err
		}
		s.capacity, s.capAt = c, time.Now()
	}
	info, err := q.stream.Info(ctx)
	if err != nil {
		return err
	}
	free := s.capacity - int(info.State.Msgs)
	if free <= 0 {
		return nil
	}
	// Each user's oldest runs, as many as may go now: every user waiting is a candidate.
	held, err := q.st.HeldRuns(ctx, free, time.Now().Add(-servedMemory))
	if err != nil || len(held) == 0 {
		return err
	}
	waiting := map[string][]store.HeldRun{} // by user, oldest first
	last := map[string]time.Time{}          // when each user's last run was sent; absent: not lately
	for _, h := range held {
		waiting[h.UserID] = append(waiting[h.UserID], h)
		if !h.LastSent.IsZero() {
			last[h.UserID] = h.LastSent
		}
	}
	for free > 0 && len(waiting) > 0 {
		u := nextUser(waiting, last)
		h := waiting[u][0]
		if waiting[u] = waiting[u][1:]; len(waiting[u]) == 0 {
			delete(waiting, u)
		}
		now := time.Now()
		last[u] = now
		ok, err := q.st.MarkDispatched(ctx, h.ID, true, now)
		if err != nil {
			return err
		}
		if !ok {
			continue // cancelled meanwhile
		}
		if err := q.publish(ctx, h.ID, []byte(h.Message)); err != nil {
			if _, uerr := q.st.MarkDispatched(context.WithoutCancel(ctx), h.ID, false, now); uerr != nil {
				q.log.Error("a run could not be sent nor held again; the sweep will send it", "run", h.ID, "error", uerr)
			}
			if errors.Is(err, run.ErrBusy) {
				return nil // the stream is at its operator's MaxMsgs: a slot frees, then it goes
			}
			return err
		}
		free--
	}
	return nil
}

// nextUser is the user to serve next: the one whose last run was sent longest ago (one
// never served first), and among equals the one whose waiting run is oldest.
func nextUser(waiting map[string][]store.HeldRun, last map[string]time.Time) string {
	next := ""
	for u, list := range waiting {
		if next == "" {
			next = u
			continue
		}
		a, b := last[u], last[next]
		if a.Before(b) || (a.Equal(b) && (list[0].CreatedAt.Before(waiting[next][0].CreatedAt) ||
			(list[0].CreatedAt.Equal(waiting[next][0].CreatedAt) && list[0].ID < waiting[next][0].ID))) {
			next = u
		}
	}
	return next
}

// capacity is how many runs the live workers run at once: the sum of their heartbeats'
// concurrency.
func (q *Queue) capacity(ctx context.Context) (int, error) {
	kv, err := q.js.KeyValue(ctx, q.cfg.Names.Registry())
	if err != nil {
		return 0, err
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // gone since Keys
		}
		var hb protocol.Heartbeat
		if json.Unmarshal(e.Value(), &hb) == nil {
			n += hb.Concurrency
		}
	}
	return n, nil
}
