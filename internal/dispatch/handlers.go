package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/store"
)

// Handlers answers workers on an API node: their claims, results and leases, and the
// stream's advisory that a run's last worker was lost. Every API node runs them, in one
// queue group: any node answers any worker, and the database decides.
type Handlers struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	st      *store.Store
	runs    *run.Service
	files   blob.Store // where recorded artifacts are kept
	work    blob.Store
	node    string
	log     *slog.Logger
	metrics *metrics.Metrics
	subs    []*nats.Subscription
	sem     chan struct{} // bounds the requests answered at once

	goneMu sync.Mutex
	gone   map[string]time.Time // running runs whose worker the sweep found gone, since when
}

// maxReportBytes bounds the report of one attempt read from the work bucket: its two
// logs and result.json, with room for the JSON around them.
func maxReportBytes(logBytes int64) int64 { return 4*logBytes + 8<<20 }

// Serve starts answering workers; Close stops it.
func Serve(nc *nats.Conn, stream jetstream.Stream, st *store.Store, runs *run.Service, files, work blob.Store, node string,
	m *metrics.Metrics, log *slog.Logger) (*Handlers, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	h := &Handlers{sem: make(chan struct{}, maxRequests), nc: nc, js: js, stream: stream, st: st, runs: runs, files: files, work: work, node: node, log: log, metrics: m}
	for _, s := range []struct {
		subject string
		queue   bool
		fn      nats.MsgHandler
	}{
		{protocol.ClaimSubject("*"), true, h.request(h.claim)},
		{protocol.RecordSubject("*"), true, h.request(h.record)},
		{protocol.LeaseSubject("*"), true, h.lease},
		{protocol.StatusSubject("*"), false, h.relay},
		{protocol.MaxDeliveries, true, h.exhausted},
	} {
		var sub *nats.Subscription
		var err error
		if s.queue {
			sub, err = nc.QueueSubscribe(s.subject, protocol.APIQueue, s.fn)
		} else {
			sub, err = nc.Subscribe(s.subject, s.fn)
		}
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("subscribing to %s: %w", s.subject, err)
		}
		h.subs = append(h.subs, sub)
	}
	return h, nc.Flush()
}

// Close stops answering.
func (h *Handlers) Close() {
	for _, s := range h.subs {
		s.Unsubscribe()
	}
}

// request answers a worker's request with what fn decides, or with an error to retry.
func (h *Handlers) request(fn func(ctx context.Context, worker string, data []byte) (string, error)) nats.MsgHandler {
	return func(m *nats.Msg) {
		// One at a time per subscription would make a worker wait behind another's
		// large artifacts, and ask again elsewhere; at most maxRequests at once.
		go func() {
			h.sem <- struct{}{}
			defer func() { <-h.sem }()
			ctx, cancel := context.WithTimeout(context.Background(), protocol.RequestTimeout)
			defer cancel()
			answer, err := fn(ctx, workerOf(m.Subject), m.Data)
			rep := protocol.Reply{Answer: answer}
			if err != nil {
				h.log.Error("answering a worker", "subject", m.Subject, "error", err)
				rep = protocol.Reply{Error: err.Error()}
			}
			b, _ := json.Marshal(rep)
			m.Respond(b)
		}()
	}
}

// maxRequests is how many workers' requests an API node answers at once.
const maxRequests = 64

// workerOf is the worker a request came from: the last token of its subject, which
// only that worker's NATS user may publish to.
func workerOf(subject string) string { return subject[strings.LastIndexByte(subject, '.')+1:] }

// claim gives the run to the worker as the attempt it asks for, when it may have it.
func (h *Handlers) claim(ctx context.Context, worker string, data []byte) (string, error) {
	var c protocol.Claim
	if err := json.Unmarshal(data, &c); err != nil || c.Run == "" || c.Attempt < 1 || c.Attempt > protocol.MaxDeliver {
		return "", fmt.Errorf("worker %s: a claim that is not one: %.200q", worker, data)
	}
	if held, err := h.heldElsewhere(ctx, c.Run, c.Attempt); err != nil {
		return "", err
	} else if held {
		h.metrics.DispatchClaims.WithLabelValues(protocol.Held).Inc()
		return protocol.Held, nil
	}
	ok, err := h.runs.Claim(ctx, c.Run, c.Attempt, worker)
	if err != nil {
		return "", err
	}
	if ok {
		h.metrics.DispatchClaims.WithLabelValues(protocol.Go).Inc()
		return protocol.Go, nil
	}
	answer, err := h.refusal(ctx, c.Run, c.Attempt)
	h.metrics.DispatchClaims.WithLabelValues(answer).Inc()
	return answer, err
}

// refusal is why attempt of run id may not go on: the run is over (or gone), or a
// later attempt holds it. A run a user cancelled ends here, cancelled.
func (h *Handlers) refusal(ctx context.Context, id string, attempt int64) (string, error) {
	r, err := h.st.GetRun(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return protocol.Final, nil
	case err != nil:
		return "", err
	case store.Terminal(r.Status):
		return protocol.Final, nil
	case r.CancelRequested && r.Attempts <= attempt:
		// Its worker was lost while the cancel was on its way: end it here.
		if _, err := h.runs.End(ctx, id, store.StatusCancelled, "cancelled"); err != nil {
			return "", err
		}
		return protocol.Final, nil
	}
	return protocol.Stale, nil
}

// record keeps an attempt's artifacts and records its report, when the attempt still
// holds the run. The artifacts are copied from the work bucket under the attempt's own
// keys, so a losing attempt's copies never touch the winner's.
func (h *Handlers) record(ctx context.Context, worker string, data []byte) (string, error) {
	var rec protocol.Record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Run == "" || rec.Attempt < 1 || rec.Attempt > protocol.MaxDeliver {
		return "", fmt.Errorf("worker %s: a record that is not one: %.200q", worker, data)
	}
	prefix := protocol.AttemptPrefix(rec.Run, rec.Attempt)
	if rec.ReportKey != prefix+"report.json" {
		return "", fmt.Errorf("run %s: a report at %q, not under %s", rec.Run, rec.ReportKey, prefix)
	}
	r, err := h.st.GetRun(ctx, rec.Run)
	switch {
	case errors.Is(err, store.ErrNotFound):
		h.cleanup(rec.Run, rec.Attempt)
		return protocol.Final, nil
	case err != nil:
		return "", err
	case r.Attempts != rec.Attempt || r.Worker != worker:
		// A later attempt holds the run, or recorded it: this result is late. Never
		// acknowledged, it cannot remove a message that is the later attempt's.
		h.metrics.LateResults.Inc()
		h.cleanup(rec.Run, rec.Attempt)
		return protocol.Stale, nil
	case store.Terminal(r.Status):
		// Recorded already (the worker's acknowledgement was lost), or ended while it ran.
		h.cleanup(rec.Run, rec.Attempt)
		return protocol.Final, nil
	}
	rep, err := h.report(ctx, rec.ReportKey, r)
	if err != nil {
		return "", err
	}
	q := h.runs.Quota(r)
	kept, err := h.keepArtifacts(ctx, rec, rep.Artifacts, q)
	if err != nil {
		h.drop(ctx, kept, q)
		return "", err
	}
	rep.Notices = append(rep.Notices, q.Notice()...)
	// What the attempt left in the work bucket, by key: listing the bucket would read
	// every key in it.
	left := []string{rec.ReportKey}
	for _, a := range rep.Artifacts {
		left = append(left, a.Key)
	}
	rep.Artifacts = kept
	ok, err := h.runs.Record(ctx, rec.Run, rec.Attempt, rep)
	if err != nil || !ok {
		h.drop(ctx, kept, q)
	}
	if err != nil {
		return "", err
	}
	h.forget(left)
	if ok {
		return protocol.Recorded, nil
	}
	answer, err := h.refusal(ctx, rec.Run, rec.Attempt)
	if answer == protocol.Stale {
		h.metrics.LateResults.Inc()
	}
	return answer, err
}

// report reads an attempt's report from the work bucket, bounded.
func (h *Handlers) report(ctx context.Context, key string, r store.Run) (run.Report, error) {
	rc, _, err := h.work.Get(ctx, key, 0, -1)
	if err != nil {
		return run.Report{}, fmt.Errorf("run %s: reading its report: %w", r.ID, err)
	}
	defer rc.Close()
	limit := maxReportBytes(16 << 20)
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return run.Report{}, fmt.Errorf("run %s: reading its report: %w", r.ID, err)
	}
	var rep run.Report
	if int64(len(b)) > limit {
		return run.Report{Failure: "the worker's report of the run was too large"}, nil
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return run.Report{Failure: "the worker's report of the run could not be read"}, nil
	}
	return rep, nil
}

// keepArtifacts copies an attempt's artifacts from the work bucket into the files
// store, checking each one's checksum and size, and returns them with their new keys.
// Their room is reserved in q (the run's user's quota) all at once, before any is
// copied: an artifact that does not fit is not copied, the run keeps what fits and q's
// notice names the rest; when the run is no longer this attempt's, none is.
func (h *Handlers) keepArtifacts(ctx context.Context, rec protocol.Record, arts []run.Artifact, q *run.Quota) ([]run.Artifact, error) {
	prefix := protocol.AttemptPrefix(rec.Run, rec.Attempt) + "out/"
	planned := make([]run.Planned, len(arts))
	for i, a := range arts {
		if i == run.MaxArtifacts || !strings.HasPrefix(a.Key, prefix) || !strings.HasPrefix(a.Path, "output/") {
			return nil, fmt.Errorf("run %s: the worker reported an artifact it may not: %q at %q", rec.Run, a.Path, a.Key)
		}
		planned[i] = run.Planned{Path: a.Path, Bytes: a.Bytes}
	}
	fits, err := q.Reserve(ctx, planned)
	if err != nil {
		return nil, fmt.Errorf("run %s: keeping its artifacts: %w", rec.Run, err)
	}
	call := nuid.Next()
	var kept []run.Artifact
	for i, a := range arts {
		if !fits[i] {
			continue
		}
		// Each record call copies under keys of its own: two calls for one attempt (a
		// worker asking again) never delete each other's copies.
		key := fmt.Sprintf("runs/%s/a%d-%s/output/%s", rec.Run, rec.Attempt, call, strings.TrimPrefix(a.Key, prefix))
		if err := h.copy(ctx, a.Key, key, a.SHA256, a.Bytes); err != nil {
			// What was reserved for this one and the ones not copied after it goes back;
			// the caller gives back the kept ones' as it drops them.
			var left int64
			for j := i; j < len(arts); j++ {
				if fits[j] {
					left += arts[j].Bytes
				}
			}
			q.Release(ctx, left)
			return kept, fmt.Errorf("run %s: keeping %s: %w", rec.Run, a.Path, err)
		}
		a.Key = key
		kept = append(kept, a)
	}
	return kept, nil
}

// copy copies object from of the work bucket to key to of the files store, when its
// bytes are size bytes with checksum sha: the quota reserved size, so no more is stored.
func (h *Handlers) copy(ctx context.Context, from, to, sha string, size int64) error {
	rc, _, err := h.work.Get(ctx, from, 0, -1)
	if err != nil {
		return err
	}
	defer rc.Close()
	info, err := h.files.Put(ctx, to, io.LimitReader(rc, size+1), blob.PutOptions{ContentType: runjob.ContentType(to)})
	if err != nil {
		return err
	}
	if info.Checksum != "sha256:"+sha || info.Size != size {
		h.files.Delete(context.WithoutCancel(ctx), to)
		return fmt.Errorf("its bytes have %s (%d bytes), not the sha256:%s (%d bytes) reported", info.Checksum, info.Size, sha, size)
	}
	return nil
}

// drop deletes artifacts copied for a result that was not recorded, and gives back
// what q reserved for them.
func (h *Handlers) drop(ctx context.Context, arts []run.Artifact, q *run.Quota) {
	for _, a := range arts {
		h.files.Delete(context.Background(), a.Key)
		q.Release(ctx, a.Bytes)
	}
}

// forget deletes keys of the work bucket, in the background.
func (h *Handlers) forget(keys []string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, k := range keys {
			h.work.Delete(ctx, k)
		}
	}()
}

// cleanup deletes what an attempt left in the work bucket, in the background: the
// attempt's report and artifacts, found by listing (an attempt refused before its
// report was read; CollectWork takes what this misses).
func (h *Handlers) cleanup(id string, attempt int64) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		infos, err := h.work.List(ctx, protocol.AttemptPrefix(id, attempt))
		if err != nil {
			return
		}
		for _, i := range infos {
			h.work.Delete(ctx, i.Key)
		}
	}()
}

// lease tells a worker which of the runs it holds to stop.
func (h *Handlers) lease(m *nats.Msg) {
	var l protocol.Lease
	if err := json.Unmarshal(m.Data, &l); err != nil {
		return
	}
	worker := workerOf(m.Subject)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rep protocol.LeaseReply
	for _, c := range l.Runs {
		r, err := h.st.GetRun(ctx, c.Run)
		switch {
		case errors.Is(err, store.ErrNotFound):
			rep.Stale = append(rep.Stale, c.Run)
		case err != nil:
			h.log.Error("checking a worker's lease", "run", c.Run, "error", err)
		case r.Attempts > c.Attempt || store.Terminal(r.Status) || (r.Attempts == c.Attempt && r.Worker != worker):
			rep.Stale = append(rep.Stale, c.Run)
		case r.Attempts < c.Attempt:
			// Its claim is on its way: nothing to say yet.
		case r.CancelRequested:
			rep.Cancel = append(rep.Cancel, c.Run)
		}
	}
	b, _ := json.Marshal(rep)
	m.Respond(b)
}

// relay passes another API node's status change of a run to this node's subscribers.
func (h *Handlers) relay(m *nats.Msg) {
	var s protocol.Status
	if json.Unmarshal(m.Data, &s) != nil || s.Node == h.node {
		return
	}
	h.runs.Publish(strings.TrimPrefix(m.Subject, protocol.StatusPrefix), run.Event{Type: "status", Data: s.Status})
}

// exhausted ends a run whose message was delivered MaxDeliver times and whose last
// worker went silent too: it failed with "worker lost", and its message goes.
func (h *Handlers) exhausted(m *nats.Msg) {
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg, err := h.stream.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		h.log.Warn("reading the message of a run whose worker was lost", "seq", adv.StreamSeq, "error", err)
		return
	}
	id := strings.TrimPrefix(msg.Subject, "skrip.jobs.")
	if r, err := h.st.GetRun(ctx, id); err == nil {
		if alive, err := h.holding(ctx, r); err == nil && alive {
			// Its last delivery's progress signals were lost (a leader election), not its
			// worker: the message stays for the holder to acknowledge once its result is
			// recorded, and the sweep fails the run should that worker go.
			h.log.Warn("a run's message was delivered its last time, but its worker is alive and still runs it; it is left to it",
				"run", id, "worker", r.Worker, "attempt", r.Attempts)
			return
		}
	}
	if err := h.lost(ctx, id); err != nil {
		// The message goes anyway, or it would hold a place in the queue for good; the
		// sweep fails a running run whose message is gone.
		h.log.Error("failing a run whose worker was lost", "run", id, "error", err)
	}
	if err := h.stream.DeleteMsg(ctx, adv.StreamSeq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		h.log.Warn("removing the message of a run whose worker was lost", "run", id, "error", err)
	}
}

// lost ends run id as failed because its workers were lost.
func (h *Handlers) lost(ctx context.Context, id string) error {
	ok, err := h.runs.End(ctx, id, store.StatusFailed, fmt.Sprintf("worker lost: the run was tried on %d workers, and each stopped answering", protocol.MaxDeliver))
	if ok {
		h.metrics.WorkerLost.Inc()
		h.log.Warn("run failed: its workers were lost", "run", id)
	}
	return err
}
