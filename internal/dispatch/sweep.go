package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// SweepLease is the name of the lease under which one API node of a cluster sweeps.
const SweepLease = "dispatch-sweep"

// Sweep ends the runs the queue lost track of, which the max-deliveries advisory does
// not reach. Advisories are plain NATS messages and can be missed, and JetStream sends
// one only when a worker asks for work: with every worker gone, a run would stay
// "running" forever. So Sweep fails:
//   - a running run whose message has left the stream without its result (its last
//     worker was lost and the advisory's handler did not end it);
//   - a running run on its last attempt whose worker has been gone from the registry for
//     longer than the registry's TTL;
//   - a running run whose worker is gone and that no other worker took over within
//     workerWait (SKRIP_RUN_WORKER_WAIT): with every worker gone, nothing else would end
//     it;
//   - a queued run older than grace whose message never reached the database (its API
//     node stopped between making it and holding it).
//
// And it sends again a queued run the scheduler marked sent whose message is not on the
// stream (the scheduler's node stopped between marking and publishing it).
//
// One node of the cluster runs it at a time (SweepLease); any may, since every change is
// conditional.
func (h *Handlers) Sweep(ctx context.Context, grace, workerWait time.Duration) (int, error) {
	kv, err := h.js.KeyValue(ctx, h.names.Registry())
	if err != nil {
		return 0, err
	}
	running := map[string]bool{}
	defer h.forgetGone(running)
	ended := 0
	for _, status := range []string{store.StatusRunning, store.StatusQueued} {
		runs, err := h.st.ListRuns(ctx, store.RunFilter{Status: status, Limit: 1000})
		if err != nil {
			return ended, err
		}
		for _, r := range runs {
			if r.Status == store.StatusRunning {
				running[r.ID] = true
			}
			if time.Since(r.CreatedAt) < grace {
				continue
			}
			why, seq, err := h.orphaned(ctx, kv, r, workerWait)
			if err != nil {
				return ended, err
			}
			if why == "" {
				continue
			}
			// A queued run fails only when it never reached the queue (unsent); a
			// running one, when its workers were lost.
			reason := run.WorkerLost
			if r.Status == store.StatusQueued {
				reason = run.NotQueued
			}
			ok, err := h.runs.End(ctx, r.ID, store.StatusFailed, why, reason)
			if err != nil {
				return ended, err
			}
			if ok {
				ended++
				h.log.Warn("run failed: the queue lost it", "run", r.ID, "why", why)
				if r.Status == store.StatusRunning {
					h.metrics.WorkerLost.Inc()
				}
			}
			if seq > 0 {
				// Past its last delivery it would stay in the stream, and count against
				// the queue's size, for good.
				if err := h.stream.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
					return ended, err
				}
			}
		}
	}
	return ended, nil
}

// orphaned says why run r is to fail, or "" when it is in the queue's hands, and the
// stream sequence of its message (0: none).
func (h *Handlers) orphaned(ctx context.Context, kv jetstream.KeyValue, r store.Run, workerWait time.Duration) (string, uint64, error) {
	msg, err := h.stream.GetLastMsgForSubject(ctx, h.names.JobSubject(r.ID))
	gone := errors.Is(err, jetstream.ErrMsgNotFound)
	if err != nil && !gone {
		return "", 0, err
	}
	var seq uint64
	if msg != nil {
		seq = msg.Sequence
	}
	switch {
	case r.Status == store.StatusQueued && gone:
		return h.unsent(ctx, r)
	case r.Status == store.StatusQueued:
		return "", 0, nil
	case gone:
		return "worker lost: the run's worker stopped answering, and it could not be tried again", 0, nil
	case r.Attempts >= protocol.MaxDeliver:
		live, err := h.live(ctx, kv, r.Worker)
		if err != nil {
			return "", 0, err
		}
		if !live {
			return "worker lost: the run was tried on 2 workers, and each stopped answering", seq, nil
		}
	default:
		live, err := h.live(ctx, kv, r.Worker)
		if err != nil {
			return "", 0, err
		}
		if since := h.goneSince(r.ID, live); !live && time.Since(since) > workerWait {
			return fmt.Sprintf("worker lost: the run's worker stopped answering, and no other worker took the run over within %s", workerWait), seq, nil
		}
	}
	return "", 0, nil
}

// goneSince notes whether running run id's worker is live, and returns since when the
// sweep has found it gone (now when it is live). It is this node's memory: a node that
// takes the sweep over starts counting anew, which only waits longer.
func (h *Handlers) goneSince(id string, live bool) time.Time {
	h.goneMu.Lock()
	defer h.goneMu.Unlock()
	if live {
		delete(h.gone, id)
		return time.Now()
	}
	if h.gone == nil {
		h.gone = map[string]time.Time{}
	}
	since, ok := h.gone[id]
	if !ok {
		since = time.Now()
		h.gone[id] = since
	}
	return since
}

// forgetGone drops what goneSince noted of runs no longer running.
func (h *Handlers) forgetGone(running map[string]bool) {
	h.goneMu.Lock()
	defer h.goneMu.Unlock()
	for id := range h.gone {
		if !running[id] {
			delete(h.gone, id)
		}
	}
}

// unsent says why queued run r, which has no message on the stream, is to fail, or ""
// when it waits in the database for the scheduler; one the scheduler marked sent long
// enough ago that its publish cannot still be on its way is held again, to be sent
// anew.
func (h *Handlers) unsent(ctx context.Context, r store.Run) (string, uint64, error) {
	qs, err := h.st.RunQueueState(ctx, r.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", 0, nil
	case err != nil:
		return "", 0, err
	case !qs.Held && time.Since(r.CreatedAt) > queuedGrace:
		return "not queued: the server that took it stopped before it reached the queue; run it again", 0, nil
	case qs.Held && qs.DispatchedAt != nil && time.Since(*qs.DispatchedAt) > resendGrace:
		if ok, err := h.st.MarkDispatched(ctx, r.ID, false, time.Now()); err != nil || !ok {
			return "", 0, err
		}
		h.log.Warn("a run marked sent never reached the queue; it is sent again", "run", r.ID)
	}
	return "", 0, nil
}

// resendGrace is how long after the scheduler marked a run sent its message may still
// be missing from the stream: its publish tries for publishPatience.
const resendGrace = 3 * publishPatience

// queuedGrace is how long a run may be queued with no message on the stream: its API
// node may still be sending its files and publishing it (a minute and more for large
// files while NATS elects a leader).
const queuedGrace = 10 * time.Minute

// live reports whether worker id has a heartbeat in the registry. Only a heartbeat
// known to be gone says no: a registry that does not answer is an error, never a death.
func (h *Handlers) live(ctx context.Context, kv jetstream.KeyValue, id string) (bool, error) {
	_, err := kv.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		return false, nil
	}
	return false, err
}

// How long the work bucket keeps what it holds: a run's files by checksum for a day
// after they were last queued (Dispatch sends again a file whose copy is older than
// casRefresh), an attempt's artifacts and report for an hour after they were left.
const (
	casKeep     = 24 * time.Hour
	casRefresh  = time.Hour
	attemptKeep = time.Hour
)

// CollectWork deletes what the work bucket holds past its time at now: files no run
// queued for a day, and what attempts left there (their API node deletes it when it
// records them; this is for the ones that never were).
func CollectWork(ctx context.Context, work blob.Store, now time.Time) (int, error) {
	n := 0
	for _, c := range []struct {
		prefix string
		keep   time.Duration
	}{{"work/sealed/", casKeep}, {"work/cas/", casKeep}, {"work/runs/", attemptKeep}, {"work/xfer/", attemptKeep}} {
		infos, err := work.List(ctx, c.prefix)
		if err != nil {
			return n, err
		}
		for _, i := range infos {
			if now.Sub(i.ModTime) > c.keep && work.Delete(ctx, i.Key) == nil {
				n++
			}
		}
	}
	return n, nil
}
