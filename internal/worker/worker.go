// Package worker is `skrip worker`: it executes runs it pulls from the cluster's queue
// (docs/cluster.md), with NATS credentials only. It claims each run from an API node,
// fetches its files by checksum through its cache, runs it in its sandbox, leaves the
// artifacts and its report in its own bucket, and acknowledges the message once an
// API node has recorded the result.
package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blobcache"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/runner"
)

// Config is one worker's.
type Config struct {
	ID          string         // its name in the cluster
	Names       protocol.Names // its installation's NATS names (SKRIP_NATS_PREFIX)
	Host        string         // shown in the registry
	Concurrency int            // runs at once
	AckWait     time.Duration  // the stream consumer's: the worker keeps its runs alive well within it
	DataDir     string         // scratch input directories and the cache
	CacheBytes  int64
	Grace       time.Duration // on stop, how long running runs may go on
	Version     string
	// BoxBudget is the memory the workspaces of the agent sandboxes it keeps may take
	// together (boxes.go); 0 keeps none.
	BoxBudget int64
}

// Worker executes runs from the queue.
type Worker struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	work    blob.Store // the shared work bucket: runs' sealed files, read only
	ownMu   sync.Mutex
	own     blob.Store       // its own bucket (protocol.WorkerBucket), once open
	runner  runner.Engine    // runs, and the boxes of agents' sandboxes
	cache   *blobcache.Cache // the files of runs, by checksum, fetched from the work bucket
	cfg     Config
	log     *slog.Logger
	metrics *metrics.Metrics
	inputs  string // where runs' input directories go
	boxes   *boxServer
	started time.Time

	mu   sync.Mutex
	held map[string]*held // the runs it executes now, by id

	// hard ends when the worker stops for good (its grace period over): what records
	// a finished run gives up then, and the run goes back to the queue.
	hard     context.Context
	stopHard context.CancelFunc
}

// held is a run this worker holds.
type held struct {
	attempt   int64
	cancel    context.CancelFunc
	done      chan struct{} // closed (by release) once its sandbox has ended or never will start
	doneOnce  sync.Once
	claimed   bool // an API node gave it to this attempt: from then on the lease check asks about it
	cancelled bool // a user cancelled it: it ends cancelled and is recorded
	stale     bool // another attempt holds it now: it is dropped, never acknowledged

	// guarded by Worker.mu: its first lines, for nodes whose viewers come late
	seq     int64
	backlog protocol.Backlog
	bytes   int
}

// What a worker keeps of a running run's first lines, as an API node's hub does.
const (
	maxBacklogBytes = 256 << 10
	maxBacklogLines = 4096
)

// New prepares a worker. The connection is the caller's.
func New(nc *nats.Conn, work blob.Store, rn runner.Engine, cfg Config, m *metrics.Metrics, log *slog.Logger) (*Worker, error) {
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("a worker runs at least one run at a time, not %d", cfg.Concurrency)
	}
	if !validID(cfg.ID) {
		return nil, fmt.Errorf("a worker's id %q: it names its own bucket, so it may hold only letters, digits, \"-\" and \"_\"", cfg.ID)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	w := &Worker{nc: nc, js: js, work: work, runner: rn, cfg: cfg, log: log, metrics: m, held: map[string]*held{},
		inputs: filepath.Join(cfg.DataDir, "worker", "inputs"), started: time.Now()}
	w.hard, w.stopHard = context.WithCancel(context.Background())
	if err := os.RemoveAll(w.inputs); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(w.inputs, 0o755); err != nil {
		return nil, err
	}
	w.cache, err = blobcache.Open(blobcache.Config{Dir: filepath.Join(cfg.DataDir, "worker", "cache"), MaxBytes: cfg.CacheBytes,
		Hits: m.CacheHits, Misses: m.CacheMisses})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// Run pulls and executes runs until ctx ends; then it takes no more, lets the runs it
// has go on for the grace period, and stops the rest unrecorded and unacknowledged, so
// that the stream gives them to another worker.
func (w *Worker) Run(ctx context.Context) error {
	cons, err := w.consumer(ctx)
	if err != nil {
		return err
	}
	cancelSub, err := protocol.Subscribe(w.nc, w.cfg.Names.CancelSubject(w.cfg.ID), "", true, w.onCancel)
	if err != nil {
		return err
	}
	defer cancelSub.Unsubscribe()
	backlogSub, err := protocol.Subscribe(w.nc, w.cfg.Names.BacklogSubject(w.cfg.ID), "", true, w.onBacklog)
	if err != nil {
		return err
	}
	defer backlogSub.Unsubscribe()
	stopBoxes, err := w.serveBoxes(ctx)
	if err != nil {
		return err
	}
	defer stopBoxes()
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	go w.heartbeats(bg)
	go w.leases(bg)

	var slots sync.WaitGroup
	for range w.cfg.Concurrency {
		slots.Add(1)
		go func() {
			defer slots.Done()
			for ctx.Err() == nil {
				msg, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
				if err != nil {
					if !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
						w.log.Warn("fetching a run", "error", err)
						sleep(ctx, time.Second)
					}
					continue
				}
				w.handle(msg)
			}
		}()
	}
	<-ctx.Done()
	done := make(chan struct{})
	go func() { slots.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(w.cfg.Grace):
		w.stopHard()
		w.mu.Lock()
		for id, h := range w.held {
			w.log.Warn("stopping a run at the end of the grace period; another worker will run it", "run", id)
			h.cancel()
		}
		w.mu.Unlock()
		<-done
	}
	w.stopHard()
	return nil
}

// consumer waits for the run queue an API node makes.
func (w *Worker) consumer(ctx context.Context) (jetstream.Consumer, error) {
	for {
		cons, err := w.js.Consumer(ctx, w.cfg.Names.Stream(), protocol.Consumer)
		if err == nil {
			return cons, nil
		}
		w.log.Info("waiting for the run queue; an API node makes it", "error", err)
		if !sleep(ctx, 2*time.Second) {
			return nil, ctx.Err()
		}
	}
}

// validID reports whether id can name a worker's bucket (protocol.WorkerBucket).
func validID(id string) bool {
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return id != ""
}

// ownBucket opens this worker's own bucket, where it leaves its reports, artifacts and
// its sandboxes' files for API nodes: it may write nowhere else. An API node makes it
// before it hands this worker a run or a file; a worker may not make it.
func (w *Worker) ownBucket(ctx context.Context) (blob.Store, error) {
	w.ownMu.Lock()
	defer w.ownMu.Unlock()
	if w.own != nil {
		return w.own, nil
	}
	sib, ok := w.work.(interface {
		Bucket() string
		Sibling(ctx context.Context, bucket string, ttl time.Duration) (blob.Store, error)
	})
	if !ok {
		return nil, fmt.Errorf("the work store %T keeps no bucket per worker", w.work)
	}
	own, err := sib.Sibling(ctx, protocol.WorkerBucket(sib.Bucket(), w.cfg.ID), protocol.WorkerBucketTTL)
	if err != nil {
		return nil, fmt.Errorf("the worker's own bucket: %w", err)
	}
	w.own = own
	return own, nil
}

// release tells a later attempt of the run on this worker that h's sandbox is over.
func (h *held) release() { h.doneOnce.Do(func() { close(h.done) }) }

// handle executes the run of msg, as the attempt its delivery count says.
func (w *Worker) handle(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		w.log.Error("a run message without metadata", "error", err)
		return
	}
	attempt := int64(meta.NumDelivered)
	var m protocol.Message
	if err := json.Unmarshal(msg.Data(), &m); err != nil || m.Job.Run == "" {
		w.log.Error("a run message that is not one; it is dropped", "subject", msg.Subject(), "error", err)
		msg.Term()
		return
	}
	id := m.Job.Run
	log := w.log.With("run", id, "attempt", attempt)
	// The message stays this worker's while it says so, well within the ack wait. A
	// signal lost while NATS elects a leader is sent again at the next tick; a redelivery
	// it caused waits for this attempt (protocol.Held), and does not end it.
	alive, stopAlive := context.WithCancel(context.Background())
	defer stopAlive()
	go func() {
		t := time.NewTicker(max(w.cfg.AckWait/3, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-alive.Done():
				return
			case <-t.C:
				msg.InProgress()
			}
		}
	}()
	var claim protocol.Reply
	if attempt > 1 {
		// A redelivery: its earlier attempt may still run, on this worker or another.
		if claim = w.claim(id, attempt, m.Token, log); claim.Answer != protocol.Go {
			if claim.Answer == protocol.Final {
				w.ack(msg, log)
			} else if claim.Answer != "" {
				log.Info("not running a run another attempt holds", "answer", claim.Answer)
			}
			return
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &held{attempt: attempt, cancel: cancel, done: make(chan struct{})}
	w.mu.Lock()
	prev := w.held[id]
	w.mu.Unlock()
	if prev != nil {
		// An earlier attempt of this run still runs here (its acks were lost, and the run
		// came back to this worker): it has lost the run, and the two would share the
		// run's sandbox directory and cgroups. Its sandbox ends before this one starts.
		w.log.Warn("a later attempt of a run this worker still runs came back to it; the earlier one stops",
			"run", id, "attempt", attempt, "earlier_attempt", prev.attempt)
		w.mu.Lock()
		prev.stale = true // dropped, neither acknowledged nor refused: the message is this attempt's now
		w.mu.Unlock()
		prev.cancel()
		<-prev.done
	}
	w.mu.Lock()
	w.held[id] = h
	w.mu.Unlock()
	w.metrics.WorkerRuns.Inc()
	defer func() {
		w.mu.Lock()
		if w.held[id] == h {
			delete(w.held, id)
		}
		w.mu.Unlock()
		h.release()
		w.metrics.WorkerRuns.Dec()
	}()
	if claim.Answer == "" {
		// The message's token proves the delivery; the reply holds the keys of the run's files.
		claim = w.askReply(ctx, w.cfg.Names.ClaimSubject(w.cfg.ID), protocol.Claim{Run: id, Attempt: attempt, Worker: w.cfg.ID, Token: m.Token})
	}
	switch answer := claim.Answer; answer {
	case protocol.Go:
		w.mu.Lock()
		h.claimed = true
		w.mu.Unlock()
	case protocol.Final:
		w.ack(msg, log)
		return
	default:
		log.Info("not running a run another attempt holds", "answer", answer)
		return
	}
	own, err := w.ownBucket(ctx)
	if err != nil {
		// The API node made it before its Go: NATS is away, and the run goes to another
		// worker after the ack wait.
		log.Error("opening the worker's own bucket", "error", err)
		return
	}
	rep, ok := w.execute(ctx, m, keysOf(claim.Keys), own, attempt, h, log)
	if !ok {
		w.mu.Lock()
		stale := h.stale
		w.mu.Unlock()
		if !stale {
			// Stopped at the end of the grace period: its one retry starts now, on
			// another worker, rather than after the ack wait.
			msg.Nak()
		}
		return
	}
	// The run is over, cancelled or not: what follows records it, unless the worker
	// stops for good first.
	ctx = w.hard
	key := protocol.AttemptPrefix(id, attempt) + "report.json"
	b, _ := json.Marshal(rep)
	// A worker cut off from NATS keeps its result and tries again until it is back: the
	// run may still be its own (no other worker was free), or it learns it is not.
	for deadline := time.Now().Add(10 * time.Minute); ; {
		_, err := own.Put(ctx, key, bytes.NewReader(b), blob.PutOptions{ContentType: "application/json"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			log.Error("leaving the run's report in the worker's bucket; giving up, another worker will run it", "error", err)
			return
		}
		log.Warn("leaving the run's report in the worker's bucket; trying again", "error", err)
		sleep(ctx, 2*time.Second)
	}
	switch answer := w.ask(ctx, w.cfg.Names.RecordSubject(w.cfg.ID), protocol.Record{Run: id, Attempt: attempt, Worker: w.cfg.ID, ReportKey: key}); answer {
	case protocol.Recorded, protocol.Final:
		w.ack(msg, log)
	default:
		log.Warn("the run's result was not recorded: another attempt holds it", "answer", answer)
	}
}

// claim asks for run id as attempt, waiting while an earlier attempt still runs on a
// live worker (protocol.Held): that attempt is recorded (the answer is then Final), or
// its worker goes (Go). It gives up ("") when the worker stops for good.
func (w *Worker) claim(id string, attempt int64, token string, log *slog.Logger) protocol.Reply {
	waiting := false
	for {
		rep := w.askReply(w.hard, w.cfg.Names.ClaimSubject(w.cfg.ID), protocol.Claim{Run: id, Attempt: attempt, Worker: w.cfg.ID, Token: token})
		if rep.Answer != protocol.Held {
			return rep
		}
		if !waiting {
			waiting = true
			log.Info("the run came again while its earlier attempt still runs on a live worker; waiting for it")
		}
		if !sleep(w.hard, max(w.cfg.AckWait/3, 100*time.Millisecond)) {
			return protocol.Reply{}
		}
	}
}

// execute runs m's job as attempt; ok is false when the result is not to be recorded:
// the run was taken over, or the worker is stopping.
func (w *Worker) execute(ctx context.Context, m protocol.Message, keys map[string][]byte, own blob.Store, attempt int64, h *held, log *slog.Logger) (runjob.Report, bool) {
	defer h.release() // on every way out: what follows may take long, and needs no sandbox
	id := m.Job.Run
	dir, err := os.MkdirTemp(w.inputs, "in-")
	if err != nil {
		log.Error("making the run's input directory", "error", err)
		return runjob.Report{Limits: m.Job.Limits, Failure: "the worker could not prepare the run: see its log"}, true
	}
	defer os.RemoveAll(dir)
	job := m.Job
	if err := w.prepare(ctx, m, keys, dir, &job); err != nil {
		log.Error("fetching the run's files", "error", err)
		return runjob.Report{Limits: m.Job.Limits, Failure: "the worker could not fetch the run's files: see its log"}, true
	}
	prefix := protocol.AttemptPrefix(id, attempt) + "out/"
	collect := func(ctx context.Context, dir string) ([]runjob.Artifact, []contract.Output, error) {
		return runjob.Collect(ctx, own, prefix, dir, nil)
	}
	subject := w.cfg.Names.OutSubject(w.cfg.ID, id)
	onLine := func(stream string, line []byte) {
		w.mu.Lock()
		h.seq++
		l := protocol.Line{Attempt: h.attempt, Seq: h.seq, Type: stream, Data: string(line)}
		if h.bytes+len(line) <= maxBacklogBytes && len(h.backlog.Lines) < maxBacklogLines {
			h.backlog.Lines = append(h.backlog.Lines, l)
			h.bytes += len(line)
		} else {
			h.backlog.Full = true
		}
		w.mu.Unlock()
		b, _ := json.Marshal(l)
		w.nc.Publish(subject, b)
	}
	rep := runjob.Execute(ctx, w.runner, job, dir, collect, onLine)
	if rep.Failure != "" {
		log.Error("the run failed in the worker", "error", rep.Failure)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case h.stale:
		log.Warn("dropping a run another attempt holds now")
		return rep, false
	case h.cancelled:
		rep.Stopped = runjob.StopCancelled
	case ctx.Err() != nil:
		return rep, false // stopped at the end of the grace period
	}
	return rep, true
}

// prepare links the run's files into dir and reads its script, opening each with its
// key from the claim's reply.
func (w *Worker) prepare(ctx context.Context, m protocol.Message, keys map[string][]byte, dir string, job *runjob.Job) error {
	source := func(sha string) (blobcache.Source, error) {
		if m.Token == "" {
			return w.fromWork(protocol.CASKey(sha), nil), nil // queued by an API node from before sealing
		}
		key := keys[sha]
		if key == nil {
			return nil, errors.New("the claim's reply holds no key for it")
		}
		return w.fromWork(protocol.SealedKey(key), key), nil
	}
	for _, in := range m.Inputs {
		if in.Name == "" || filepath.Base(in.Name) != in.Name || in.Name == "." || in.Name == ".." {
			return fmt.Errorf("an input file named %q", in.Name)
		}
		src, err := source(in.SHA256)
		if err == nil {
			err = w.cache.Link(ctx, in.SHA256, in.Bytes, filepath.Join(dir, in.Name), src)
		}
		if err != nil {
			return fmt.Errorf("input file %s: %w", in.Name, err)
		}
	}
	src, err := source(m.Script.SHA256)
	if err != nil {
		return fmt.Errorf("the tool's script: %w", err)
	}
	script, err := w.cache.Read(ctx, m.Script.SHA256, m.Script.Bytes, src)
	if err != nil {
		return fmt.Errorf("the tool's script: %w", err)
	}
	job.Script = script
	return nil
}

// keysOf indexes a claim's keys by checksum.
func keysOf(keys []protocol.InputKey) map[string][]byte {
	m := make(map[string][]byte, len(keys))
	for _, k := range keys {
		m[k.SHA256] = k.Key
	}
	return m
}

// fromWork reads object name from the work bucket, where the API node that queued the
// run put it, opening it with key (nil: it is not sealed). The cache checks the bytes
// against their checksum.
func (w *Worker) fromWork(name string, key []byte) blobcache.Source {
	return func(ctx context.Context) (io.ReadCloser, error) {
		rc, _, err := w.work.Get(ctx, name, 0, -1)
		if err != nil {
			return nil, fmt.Errorf("from the work bucket: %w", err)
		}
		if key == nil {
			return rc, nil
		}
		r, err := protocol.Open(rc, key)
		if err != nil {
			rc.Close()
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{r, rc}, nil
	}
}

// ask sends a request to the API nodes until one answers, every 2 s, for up to 10
// minutes: the message stays alive meanwhile. An empty answer means it gave up.
func (w *Worker) ask(ctx context.Context, subject string, req any) string {
	return w.askReply(ctx, subject, req).Answer
}

// askReply is ask, with the whole reply.
func (w *Worker) askReply(ctx context.Context, subject string, req any) protocol.Reply {
	b, _ := json.Marshal(req)
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, protocol.RequestTimeout+30*time.Second)
		msg, err := w.nc.RequestWithContext(rctx, subject, b)
		cancel()
		if err == nil {
			var rep protocol.Reply
			if err = json.Unmarshal(msg.Data, &rep); err == nil && rep.Error == "" && rep.Answer != "" {
				return rep
			}
			if err == nil {
				err = errors.New(rep.Error)
			}
		}
		w.log.Warn("no answer from the API nodes; asking again", "subject", subject, "error", err)
		sleep(ctx, 2*time.Second)
	}
	return protocol.Reply{}
}

func (w *Worker) ack(msg jetstream.Msg, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := msg.DoubleAck(ctx); err != nil {
		// The message comes back to a worker, whose claim is answered "final".
		log.Warn("acknowledging a recorded run", "error", err)
	}
}

// onCancel stops a run a user cancelled.
func (w *Worker) onCancel(m *nats.Msg) {
	id := string(m.Data)
	w.mu.Lock()
	if h := w.held[id]; h != nil {
		h.cancelled = true
		h.cancel()
	}
	w.mu.Unlock()
	m.Respond([]byte("ok"))
}

// onBacklog answers an API node with the first lines of a run this worker holds.
func (w *Worker) onBacklog(m *nats.Msg) {
	w.mu.Lock()
	var b protocol.Backlog
	if h := w.held[string(m.Data)]; h != nil {
		b = protocol.Backlog{Lines: append([]protocol.Line(nil), h.backlog.Lines...), Full: h.backlog.Full}
		if h.claimed && !h.stale {
			b.Attempt = h.attempt // it is alive and runs the run (dispatch's holding asks)
		}
	}
	w.mu.Unlock()
	data, _ := json.Marshal(b)
	m.Respond(data)
}

// leases asks the API nodes, every third of the ack wait, which of its runs this worker
// is to stop: ones a later attempt holds (after this worker was cut off, say) and ones
// a user cancelled.
func (w *Worker) leases(ctx context.Context) {
	t := time.NewTicker(max(w.cfg.AckWait/3, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		l := protocol.Lease{Worker: w.cfg.ID}
		for id, h := range w.held {
			if h.claimed {
				l.Runs = append(l.Runs, protocol.Claim{Run: id, Attempt: h.attempt, Worker: w.cfg.ID})
			}
		}
		w.mu.Unlock()
		if len(l.Runs) == 0 {
			continue
		}
		b, _ := json.Marshal(l)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msg, err := w.nc.RequestWithContext(rctx, w.cfg.Names.LeaseSubject(w.cfg.ID), b)
		cancel()
		var rep protocol.LeaseReply
		if err != nil || json.Unmarshal(msg.Data, &rep) != nil {
			continue
		}
		w.mu.Lock()
		for _, id := range rep.Stale {
			if h := w.held[id]; h != nil {
				h.stale = true
				h.cancel()
			}
		}
		for _, id := range rep.Cancel {
			if h := w.held[id]; h != nil {
				h.cancelled = true
				h.cancel()
			}
		}
		w.mu.Unlock()
	}
}

// heartbeats puts this worker's heartbeat in the registry.
func (w *Worker) heartbeats(ctx context.Context) {
	every := protocol.HeartbeatEvery(w.cfg.AckWait)
	var kv jetstream.KeyValue
	for {
		if kv == nil {
			kv, _ = w.js.KeyValue(ctx, w.cfg.Names.Registry())
		}
		if kv != nil {
			boxes := w.boxes.ids()
			w.mu.Lock()
			hb := protocol.Heartbeat{Worker: w.cfg.ID, Host: w.cfg.Host, Runner: w.runner.Name(), Concurrency: w.cfg.Concurrency,
				Busy: len(w.held), Runs: []string{}, Sandboxes: boxes, BoxBudget: w.cfg.BoxBudget,
				Version: w.cfg.Version, Started: w.started, At: time.Now()}
			for id := range w.held {
				hb.Runs = append(hb.Runs, id)
			}
			w.mu.Unlock()
			b, _ := json.Marshal(hb)
			if _, err := kv.Put(ctx, w.cfg.ID, b); err != nil && ctx.Err() == nil {
				w.log.Warn("putting the worker's heartbeat", "error", err)
			}
		}
		if !sleep(ctx, every) {
			return
		}
	}
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
