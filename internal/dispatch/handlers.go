package dispatch

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
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
	own     *workerBuckets // each worker's own bucket, where it leaves its reports and artifacts
	keys    *keyring       // the keys of runs' files, handed over with a claim
	node    string
	names   protocol.Names
	log     *slog.Logger
	metrics *metrics.Metrics
	subs    []*nats.Subscription
	sem     chan struct{} // bounds the requests answered at once

	goneMu sync.Mutex
	gone   map[string]time.Time // running runs whose worker the sweep found gone, since when
}

// maxReportBytes bounds the report of one attempt read from its worker's bucket: its two
// logs and result.json, with room for the JSON around them.
func maxReportBytes(logBytes int64) int64 { return 4*logBytes + 8<<20 }

// Serve starts answering workers; Close stops it.
func Serve(nc *nats.Conn, stream jetstream.Stream, st *store.Store, runs *run.Service, files, work blob.Store, cfg Config,
	m *metrics.Metrics, log *slog.Logger) (*Handlers, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	h := &Handlers{sem: make(chan struct{}, maxRequests), nc: nc, js: js, stream: stream, st: st, runs: runs, files: files, work: work, node: cfg.Node, names: cfg.Names,
		log: log, metrics: m, own: newWorkerBuckets(work), keys: &keyring{js: js, bucket: cfg.Names.Keys()}}
	n := cfg.Names
	for _, s := range []struct {
		subject string
		queue   string
		request bool // answered: its sender waits for the reply
		fn      nats.MsgHandler
	}{
		{n.ClaimSubject("*"), protocol.APIQueue, true, h.request(h.claim)},
		{n.RecordSubject("*"), protocol.APIQueue, true, h.request(answerOnly(h.record))},
		{n.LeaseSubject("*"), protocol.APIQueue, true, h.lease},
		{n.StatusSubject("*"), "", false, h.relay},
		{n.MaxDeliveries(), protocol.APIQueue, false, h.exhausted},
	} {
		sub, err := protocol.Subscribe(nc, s.subject, s.queue, s.request, s.fn)
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

// answerOnly is fn for request, when its reply is an answer alone.
func answerOnly(fn func(ctx context.Context, worker string, data []byte) (string, error)) func(context.Context, string, []byte) (protocol.Reply, error) {
	return func(ctx context.Context, worker string, data []byte) (protocol.Reply, error) {
		answer, err := fn(ctx, worker, data)
		return protocol.Reply{Answer: answer}, err
	}
}

// request answers a worker's request with what fn decides, or with an error to retry.
func (h *Handlers) request(fn func(ctx context.Context, worker string, data []byte) (protocol.Reply, error)) nats.MsgHandler {
	return func(m *nats.Msg) {
		// One at a time per subscription would make a worker wait behind another's
		// large artifacts, and ask again elsewhere; at most maxRequests at once.
		go func() {
			h.sem <- struct{}{}
			defer func() { <-h.sem }()
			ctx, cancel := context.WithTimeout(context.Background(), protocol.RequestTimeout)
			defer cancel()
			rep, err := fn(ctx, workerOf(m.Subject), m.Data)
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

// claim gives the run to the worker as the attempt it asks for, when it may have it,
// with the keys of the run's files. The claim must carry the token of the run's
// message on the stream, which only a worker the stream delivered it to knows: a
// worker cannot claim a run it merely names (from another worker's heartbeat, say).
func (h *Handlers) claim(ctx context.Context, worker string, data []byte) (protocol.Reply, error) {
	var c protocol.Claim
	if err := json.Unmarshal(data, &c); err != nil || c.Run == "" || c.Attempt < 1 || c.Attempt > protocol.MaxDeliver {
		return protocol.Reply{}, fmt.Errorf("worker %s: a claim that is not one: %.200q", worker, data)
	}
	// An earlier attempt still running on a live worker keeps the run (a redelivery a
	// NATS election caused): this one waits, and gets no keys. Asked first: it needs the
	// database and the holder, not the stream, which may have no leader yet.
	if held, err := h.heldElsewhere(ctx, c.Run, c.Attempt); err != nil {
		return protocol.Reply{}, err
	} else if held {
		h.metrics.DispatchClaims.WithLabelValues(protocol.Held).Inc()
		return protocol.Reply{Answer: protocol.Held}, nil
	}
	msg, err := h.delivered(ctx, c)
	var refused errNotDelivered
	if errors.As(err, &refused) {
		h.log.Warn("a claim without its delivery is refused", "worker", worker, "run", c.Run, "attempt", c.Attempt, "why", err)
		answer := protocol.Stale
		if refused.gone {
			// No message, no run to hand over: it is over, or another attempt's.
			if answer, err = h.refusal(ctx, c.Run, c.Attempt); err != nil {
				return protocol.Reply{}, err
			}
		}
		h.metrics.DispatchClaims.WithLabelValues(answer).Inc()
		return protocol.Reply{Answer: answer}, nil
	}
	if err != nil {
		return protocol.Reply{}, err
	}
	rep := protocol.Reply{Answer: protocol.Go}
	if msg.Token != "" {
		if rep.Keys, err = h.runKeys(ctx, msg); err != nil {
			return protocol.Reply{}, err
		}
	}
	// The worker leaves its report and artifacts in its own bucket, which it may not make.
	if _, err := h.own.of(ctx, worker); err != nil {
		return protocol.Reply{}, err
	}
	ok, err := h.runs.Claim(ctx, c.Run, c.Attempt, worker)
	if err != nil {
		return protocol.Reply{}, err
	}
	if ok {
		h.metrics.DispatchClaims.WithLabelValues(protocol.Go).Inc()
		return rep, nil
	}
	answer, err := h.refusal(ctx, c.Run, c.Attempt)
	h.metrics.DispatchClaims.WithLabelValues(answer).Inc()
	return protocol.Reply{Answer: answer}, err
}

// errNotDelivered is a claim no delivery proves; gone says the run's message is not on
// the stream at all.
type errNotDelivered struct {
	why  string
	gone bool
}

func (e errNotDelivered) Error() string { return e.why }

// delivered reads the message of the run c claims from the stream, where it stays
// until its run is recorded, and checks c's token against it. A message of an API node
// from before tokens has none, and proves nothing either way (a rolling upgrade).
func (h *Handlers) delivered(ctx context.Context, c protocol.Claim) (protocol.Message, error) {
	var msg protocol.Message
	raw, err := h.stream.GetLastMsgForSubject(ctx, h.names.JobSubject(c.Run))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return msg, errNotDelivered{why: "the run's message is not on the stream", gone: true}
	}
	if err != nil {
		return msg, fmt.Errorf("reading run %s's message on the stream: %w", c.Run, err)
	}
	if err := json.Unmarshal(raw.Data, &msg); err != nil || msg.Job.Run != c.Run {
		return msg, errNotDelivered{why: "the run's message on the stream is not one"}
	}
	if msg.Token != "" && subtle.ConstantTimeCompare([]byte(msg.Token), []byte(c.Token)) != 1 {
		return msg, errNotDelivered{why: "the claim's token is not that of the run's message"}
	}
	return msg, nil
}

// runKeys are the keys of msg's script and input files, each once.
func (h *Handlers) runKeys(ctx context.Context, msg protocol.Message) ([]protocol.InputKey, error) {
	seen := map[string]bool{}
	var keys []protocol.InputKey
	for _, in := range append([]protocol.Input{msg.Script}, msg.Inputs...) {
		if seen[in.SHA256] {
			continue
		}
		seen[in.SHA256] = true
		k, err := h.keys.key(ctx, in.SHA256)
		if err != nil {
			return nil, err
		}
		keys = append(keys, protocol.InputKey{SHA256: in.SHA256, Key: k})
	}
	return keys, nil
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
		if _, err := h.runs.End(ctx, id, store.StatusCancelled, "cancelled", run.Reason{}); err != nil {
			return "", err
		}
		return protocol.Final, nil
	}
	return protocol.Stale, nil
}

// record keeps an attempt's artifacts and records its report, when the attempt still
// holds the run and asks it. The artifacts are copied from that worker's bucket under
// the attempt's own keys, so a losing attempt's copies never touch the winner's.
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
		h.cleanup(h.own.opened(worker), rec.Run, rec.Attempt)
		return protocol.Final, nil
	case err != nil:
		return "", err
	case r.Attempts != rec.Attempt || r.Worker != worker:
		// A later attempt holds the run, or recorded it: this result is late. Never
		// acknowledged, it cannot remove a message that is the later attempt's.
		h.metrics.LateResults.Inc()
		h.cleanup(h.own.opened(worker), rec.Run, rec.Attempt)
		return protocol.Stale, nil
	}
	// Only what the asking worker left in its own bucket is read, and only when it holds
	// the run (its claim made the bucket): a record in any other name never makes one.
	own, err := h.own.of(ctx, worker)
	if err != nil {
		return "", err
	}
	if store.Terminal(r.Status) {
		// Recorded already (the worker's acknowledgement was lost), or ended while it ran.
		h.cleanup(own, rec.Run, rec.Attempt)
		return protocol.Final, nil
	}
	rep, err := h.report(ctx, own, rec.ReportKey, r)
	if err != nil {
		return "", err
	}
	q := h.runs.Quota(r)
	kept, err := h.keepArtifacts(ctx, own, rec, rep.Artifacts, q)
	var bad errBadArtifact
	switch {
	case errors.As(err, &bad):
		// The worker's artifacts are not what its report says, or are not there: the run
		// fails with none of them, and nothing of its report is trusted.
		h.drop(ctx, kept, q)
		h.log.Warn("a worker's artifacts are not what it reported; the run fails", "run", rec.Run, "worker", worker, "error", err)
		arts := rep.Artifacts
		rep = run.Report{Limits: rep.Limits, Artifacts: arts, Failure: err.Error()}
		kept = nil
	case err != nil:
		h.drop(ctx, kept, q)
		return "", err
	}
	rep.Notices = append(rep.Notices, q.Notice()...)
	// What the attempt left in the worker's bucket, by key: listing the bucket would read
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
	h.forget(own, left)
	if ok {
		return protocol.Recorded, nil
	}
	answer, err := h.refusal(ctx, rec.Run, rec.Attempt)
	if answer == protocol.Stale {
		h.metrics.LateResults.Inc()
	}
	return answer, err
}

// report reads an attempt's report from its worker's bucket own, bounded.
func (h *Handlers) report(ctx context.Context, own blob.Store, key string, r store.Run) (run.Report, error) {
	rc, err := getPatiently(ctx, own, key)
	if errors.Is(err, blob.ErrNotFound) {
		return run.Report{Failure: "the worker's report of the run is missing"}, nil
	}
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

// keepArtifacts copies an attempt's artifacts from the worker's own bucket into the
// files store, and returns them with their new keys and the checksums this node
// computed as it copied them: an artifact whose bytes are not the size and checksum the
// report says, or that is missing, is an errBadArtifact.
// Their room is reserved in q (the run's user's quota) all at once, before any is
// copied: an artifact that does not fit is not copied, the run keeps what fits and q's
// notice names the rest; when the run is no longer this attempt's, none is.
func (h *Handlers) keepArtifacts(ctx context.Context, own blob.Store, rec protocol.Record, arts []run.Artifact, q *run.Quota) ([]run.Artifact, error) {
	prefix := protocol.AttemptPrefix(rec.Run, rec.Attempt) + "out/"
	planned := make([]run.Planned, len(arts))
	for i, a := range arts {
		if i == run.MaxArtifacts || !strings.HasPrefix(a.Key, prefix) || !strings.HasPrefix(a.Path, "output/") {
			return nil, errBadArtifact(fmt.Sprintf("the worker reported an artifact it may not: %q at %q", a.Path, a.Key))
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
		sha, err := h.copy(ctx, own, a.Key, key, a.SHA256, a.Bytes)
		if err != nil {
			// What was reserved for this one and the ones not copied after it goes back;
			// the caller gives back the kept ones' as it drops them.
			var left int64
			for j := i; j < len(arts); j++ {
				if fits[j] {
					left += arts[j].Bytes
				}
			}
			q.Release(ctx, left)
			var bad errBadArtifact
			if errors.As(err, &bad) {
				return kept, errBadArtifact(fmt.Sprintf("the worker's artifact %s %s", a.Path, bad))
			}
			return kept, fmt.Errorf("run %s: keeping %s: %w", rec.Run, a.Path, err)
		}
		a.Key, a.SHA256 = key, sha
		kept = append(kept, a)
	}
	return kept, nil
}

// copy copies object from of the worker's bucket own to key to of the files store,
// hashing the bytes as they pass, and returns their checksum when they are size bytes
// with checksum sha, as the report says: the quota reserved size, so no more is
// stored. Bytes that are not, or a missing object, are an errBadArtifact, and nothing
// of them stays.
func (h *Handlers) copy(ctx context.Context, own blob.Store, from, to, sha string, size int64) (string, error) {
	rc, err := getPatiently(ctx, own, from)
	if errors.Is(err, blob.ErrNotFound) {
		return "", errBadArtifact("is missing from the worker's bucket")
	}
	if err != nil {
		return "", err
	}
	defer rc.Close()
	hash := sha256.New()
	n, err := h.files.Put(ctx, to, io.TeeReader(io.LimitReader(rc, size+1), hash), blob.PutOptions{ContentType: runjob.ContentType(to)})
	if err != nil {
		h.files.Delete(context.WithoutCancel(ctx), to)
		return "", err
	}
	got := hex.EncodeToString(hash.Sum(nil))
	if got != sha || n.Size != size {
		h.files.Delete(context.WithoutCancel(ctx), to)
		return "", errBadArtifact(fmt.Sprintf("has sha256:%s (%d bytes), not the sha256:%s (%d bytes) its report says", got, n.Size, sha, size))
	}
	return got, nil
}

// getPatiently opens key of a worker's bucket. The worker asked after it put the
// object, so a missing one is asked for again for a few seconds before it counts as
// missing (and the run fails): a replica that has not applied the write yet, with the
// stream's leader being elected, says it is missing.
func getPatiently(ctx context.Context, own blob.Store, key string) (io.ReadCloser, error) {
	wait := 500 * time.Millisecond
	for {
		rc, _, err := own.Get(ctx, key, 0, -1)
		if !errors.Is(err, blob.ErrNotFound) || wait > 4*time.Second || !sleepCtx(ctx, wait) {
			return rc, err
		}
		wait *= 2
	}
}

// errBadArtifact is an artifact whose bytes are not what its worker reported: the
// run fails (a runner error), and none of its artifacts is kept.
type errBadArtifact string

func (e errBadArtifact) Error() string { return string(e) }

// drop deletes artifacts copied for a result that was not recorded, and gives back
// what q reserved for them.
func (h *Handlers) drop(ctx context.Context, arts []run.Artifact, q *run.Quota) {
	for _, a := range arts {
		h.files.Delete(context.Background(), a.Key)
		q.Release(ctx, a.Bytes)
	}
}

// forget deletes keys of a worker's bucket own, in the background.
func (h *Handlers) forget(own blob.Store, keys []string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, k := range keys {
			own.Delete(ctx, k)
		}
	}()
}

// cleanup deletes what an attempt left in its worker's bucket own, in the background: the
// attempt's report and artifacts, found by listing (an attempt refused before its
// report was read; CollectWork takes what this misses).
func (h *Handlers) cleanup(own blob.Store, id string, attempt int64) {
	if own == nil {
		return // not open here: the bucket's TTL takes what is left
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		infos, err := own.List(ctx, protocol.AttemptPrefix(id, attempt))
		if err != nil {
			return
		}
		for _, i := range infos {
			own.Delete(ctx, i.Key)
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
	if json.Unmarshal(m.Data, &s) != nil || s.Node == "" || s.Status == "" || s.Node == h.node {
		return
	}
	h.runs.Publish(strings.TrimPrefix(m.Subject, h.names.StatusPrefix()), run.Event{Type: "status", Data: s.Status})
}

// exhausted ends a run whose message was delivered MaxDeliver times and whose last
// worker went silent too: it failed with "worker lost", and its message goes.
func (h *Handlers) exhausted(m *nats.Msg) {
	var adv struct {
		Type       string `json:"type"`
		Stream     string `json:"stream"`
		Consumer   string `json:"consumer"`
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries uint64 `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 || adv.Type != maxDeliverAdvisory ||
		adv.Stream != h.names.Stream() || adv.Consumer != protocol.Consumer {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg, err := h.stream.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		h.log.Warn("reading the message of a run whose worker was lost", "seq", adv.StreamSeq, "error", err)
		return
	}
	id := h.names.JobOf(msg.Subject)
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

// maxDeliverAdvisory is the type of the advisory exhausted takes.
const maxDeliverAdvisory = "io.nats.jetstream.advisory.v1.max_deliver"

// lost ends run id as failed because its workers were lost.
func (h *Handlers) lost(ctx context.Context, id string) error {
	ok, err := h.runs.End(ctx, id, store.StatusFailed, fmt.Sprintf("worker lost: the run was tried on %d workers, and each stopped answering", protocol.MaxDeliver), run.WorkerLost)
	if ok {
		h.metrics.WorkerLost.Inc()
		h.log.Warn("run failed: its workers were lost", "run", id)
	}
	return err
}
