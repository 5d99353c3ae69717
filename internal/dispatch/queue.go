package dispatch

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blobcache"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// Config sizes the stream and says how long a worker may go silent.
type Config struct {
	Replicas int            // of the stream and the registry; 1 when 0
	Queue    int            // runs waiting or running in the cluster at once; past it, 503
	AckWait  time.Duration  // a worker silent this long loses its run to another
	Node     string         // this API node's id
	Names    protocol.Names // the installation's NATS names (SKRIP_NATS_PREFIX)
}

// errFull is JetStream's API error code for a message the stream could not store; with
// "maximum messages exceeded", the stream is at its MaxMsgs (DiscardNew).
const errFull = 10077

// Setup creates the stream, its consumer and the worker registry, or leaves existing
// ones as they are: they are the operator's once made. API nodes call it; workers only
// use what it made.
func Setup(ctx context.Context, js jetstream.JetStream, cfg Config, log *slog.Logger) (jetstream.Stream, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = 1
	}
	n := cfg.Names
	sc := jetstream.StreamConfig{Name: n.Stream(), Subjects: []string{n.JobSubjects()}, Retention: jetstream.WorkQueuePolicy,
		MaxMsgs: int64(cfg.Queue), Discard: jetstream.DiscardNew, Duplicates: 2 * time.Minute, Storage: jetstream.FileStorage,
		Replicas: cfg.Replicas, Description: "skrip: runs waiting for a worker (docs/cluster.md)"}
	stream, err := js.CreateStream(ctx, sc)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		stream, err = js.Stream(ctx, n.Stream())
		if err == nil && stream.CachedInfo().Config.Replicas != cfg.Replicas {
			log.Warn("the run queue's stream has another replica count than SKRIP_NATS_REPLICAS; it is left as it is",
				"stream", n.Stream(), "replicas", stream.CachedInfo().Config.Replicas, "setting", cfg.Replicas)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the run queue's stream %s: %w", n.Stream(), err)
	}
	if err := setupConsumer(ctx, stream, cfg); err != nil {
		return nil, fmt.Errorf("the run queue's consumer %s: %w", protocol.Consumer, err)
	}
	if err := setupRegistry(ctx, js, cfg); err != nil {
		return nil, fmt.Errorf("the worker registry %s: %w", n.Registry(), err)
	}
	if err := setupKeys(ctx, js, n.Keys(), cfg.Replicas); err != nil {
		return nil, fmt.Errorf("the sealing secret's bucket %s: %w", n.Keys(), err)
	}
	return stream, nil
}

// setupConsumer makes the consumer workers fetch runs from, or keeps the one there with
// the operator's edits (replicas, placement, metadata, a description), setting only what
// the protocol needs: explicit acks, protocol.MaxDeliver, and SKRIP_RUN_ACK_WAIT, which
// workers' heartbeats follow.
func setupConsumer(ctx context.Context, stream jetstream.Stream, cfg Config) error {
	cons, err := stream.Consumer(ctx, protocol.Consumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		_, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: protocol.Consumer, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: cfg.AckWait, MaxDeliver: protocol.MaxDeliver, MaxAckPending: -1,
			Description: "skrip: workers fetch runs here (docs/cluster.md)"})
		if errors.Is(err, jetstream.ErrConsumerExists) {
			return nil // another API node made it meanwhile
		}
		return err
	}
	if err != nil {
		return err
	}
	cc := cons.CachedInfo().Config
	if cc.AckPolicy == jetstream.AckExplicitPolicy && cc.AckWait == cfg.AckWait && cc.MaxDeliver == protocol.MaxDeliver {
		return nil
	}
	cc.AckPolicy, cc.AckWait, cc.MaxDeliver = jetstream.AckExplicitPolicy, cfg.AckWait, protocol.MaxDeliver
	_, err = stream.UpdateConsumer(ctx, cc)
	return err
}

// setupRegistry makes the KV bucket of worker heartbeats, or keeps the one there with the
// operator's edits, setting only its TTL, which SKRIP_RUN_ACK_WAIT decides.
func setupRegistry(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	ttl := 3 * protocol.HeartbeatEvery(cfg.AckWait)
	_, err := js.KeyValue(ctx, cfg.Names.Registry())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cfg.Names.Registry(), History: 1, TTL: ttl,
			Replicas: cfg.Replicas, Description: "skrip: worker heartbeats (docs/cluster.md)"})
		if errors.Is(err, jetstream.ErrBucketExists) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	s, err := js.Stream(ctx, "KV_"+cfg.Names.Registry())
	if err != nil {
		return err
	}
	sc := s.CachedInfo().Config
	if sc.MaxAge == ttl {
		return nil
	}
	sc.MaxAge = ttl
	sc.Duplicates = min(sc.Duplicates, ttl) // no longer than MaxAge, as the server has it
	_, err = js.UpdateStream(ctx, sc)
	return err
}

// Queue is the run.Executor of a cluster's API node: it puts runs' files in the work
// bucket and holds their messages in the database, and its Schedule sends them on the
// stream, users in turn, as workers have room.
type Queue struct {
	runs    *run.Service
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	st      *store.Store
	work    blob.Store
	known   *blobcache.Cache // files whose checksum is known without reading them; may be nil
	keys    *keyring         // seals runs' files in the work bucket
	cfg     Config
	metrics *metrics.Metrics
	log     *slog.Logger

	mu         sync.Mutex
	unfinished int       // the cluster's runs queued and running when last counted, and those Admit let in since
	countedAt  time.Time // when they were counted
}

// NewQueue returns the executor that queues runs of runs for stream (from Setup),
// holding them in st until Schedule sends them; runs.Use(q) makes it runs' executor. An
// input
// file that is a hard link of a file in known (the session files' cache, which checked
// its bytes against its name) is sent by that checksum without being read; known may
// be nil.
func NewQueue(runs *run.Service, nc *nats.Conn, js jetstream.JetStream, stream jetstream.Stream, st *store.Store, work blob.Store, known *blobcache.Cache,
	cfg Config, m *metrics.Metrics, log *slog.Logger) *Queue {
	return &Queue{runs: runs, nc: nc, js: js, stream: stream, st: st, work: work, known: known, keys: &keyring{js: js, bucket: cfg.Names.Keys()}, cfg: cfg, metrics: m, log: log}
}

var _ run.Executor = (*Queue)(nil)

func (q *Queue) busy() error {
	return errs.New(run.ErrBusy, map[string]any{"queue": q.cfg.Queue},
		"every worker is busy and %d runs are waiting or running; try again in a few seconds", q.cfg.Queue)
}

// Admit refuses a run when the cluster has cfg.Queue runs queued and running, before
// anything of it is made (its session's files are still as they were). It counts them in
// the database, not on the stream: a run waits there until the scheduler sends it, and
// the stream holds no more than the workers' slots. The count is read at most every
// admitEvery and counts the runs Admit let in since, so that a burst on one node is
// refused at once; a count that refuses is read again after admitRecount. The insert of the run counts again, exactly (store.AdmitRun, with
// Limit). Nothing is given back: the count is read again soon.
func (q *Queue) Admit(ctx context.Context) (release func(), err error) {
	if q.cfg.Queue <= 0 {
		return func() {}, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	since := time.Since(q.countedAt)
	// A count that would refuse is read again first unless it is very fresh: the runs
	// Admit let in since may have ended already (a client that submits a run, waits for
	// it and submits the next is never refused on a count of runs that are over).
	if since > admitEvery || q.unfinished >= q.cfg.Queue && since > admitRecount {
		n, err := q.st.UnfinishedRuns(ctx, "")
		if err != nil {
			return nil, err
		}
		q.unfinished, q.countedAt = n, time.Now()
	}
	if q.unfinished >= q.cfg.Queue {
		return nil, q.busy()
	}
	q.unfinished++
	return func() {}, nil
}

// Limit is the cluster's queue: its runs wait in the database, so they are counted
// there as a run is stored.
func (q *Queue) Limit() int { return q.cfg.Queue }

// Start dispatches run r and removes dir once its files are in the work bucket. A run
// that could not be queued is removed, as one refused at the door would have been.
func (q *Queue) Start(ctx context.Context, r store.Run, job run.Job, dir string) error {
	defer os.RemoveAll(dir) // in the work bucket once dispatched
	err := q.Dispatch(ctx, job, dir)
	if err == nil {
		return nil
	}
	// Never queued: the run goes. (Before has run: the session's files are the new
	// ones, as after any admitted run.)
	if _, derr := q.st.DeleteQueuedRun(context.WithoutCancel(ctx), r.ID); derr != nil {
		q.log.Error("removing a run that could not be queued", "run", r.ID, "error", derr)
	}
	if !errors.Is(err, run.ErrBusy) {
		// The queue did not answer (NATS unreachable, a leader not elected in time):
		// the client may try again, as after a full queue.
		q.log.Error("queueing a run", "run", r.ID, "error", err)
		err = errs.New(run.ErrBusy, nil, "the run queue did not answer; try again in a moment")
	}
	return err
}

// Cancel ends queued run id at once, and asks the worker of a running one to stop it
// (run.Service.RequestCancel).
func (q *Queue) Cancel(ctx context.Context, id string) (bool, error) {
	return q.runs.RequestCancel(ctx, id, q.stop)
}

// Recover leaves the cluster's unfinished runs as they are: the queue holds them, and
// the sweep ends those it lost (Handlers.Sweep).
func (q *Queue) Recover(context.Context) error { return nil }

// Shutdown has nothing to wait for: the runs are the workers'.
func (q *Queue) Shutdown(time.Duration) {}

// admitEvery is how long Admit trusts its count of the cluster's runs.
const admitEvery = 200 * time.Millisecond

// admitRecount is how long Admit trusts a count that refuses: a full queue costs the
// database at most one count in that time, however many clients knock.
const admitRecount = 10 * time.Millisecond

// Dispatch puts job's script and the files of dir in the work bucket (a file already
// there by its checksum is not sent again) and holds the job's message in the database,
// where the scheduler takes it from (Schedule): on the stream, one user's runs would
// wait ahead of everyone else's.
func (q *Queue) Dispatch(ctx context.Context, job run.Job, dir string) error {
	msg := protocol.Message{Job: job, Token: newToken()}
	msg.Job.Script = nil
	script, err := q.keep(ctx, job.Script)
	if err != nil {
		return err
	}
	msg.Script = protocol.Input{Name: "script.py", SHA256: script, Bytes: int64(len(job.Script))}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		in, err := q.keepFile(ctx, filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("sending input file %s to the work bucket: %w", e.Name(), err)
		}
		in.Name = e.Name()
		msg.Inputs = append(msg.Inputs, in)
	}
	sort.Slice(msg.Inputs, func(i, j int) bool { return msg.Inputs[i].Name < msg.Inputs[j].Name })
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := q.st.HoldRun(ctx, job.Run, string(data)); err != nil {
		return err
	}
	// (A run no longer queued was cancelled meanwhile: nothing is to be sent.)
	q.kick()
	return nil
}

// publish puts run id's message data on the stream. A full stream is an ErrBusy error.
func (q *Queue) publish(ctx context.Context, id string, data []byte) error {
	// The run id is the message id: a publish tried again (its answer was lost while
	// the stream changed leader, say) queues the run once.
	wait := 100 * time.Millisecond
	deadline := time.Now().Add(publishPatience)
	for {
		_, err := q.js.Publish(ctx, q.cfg.Names.JobSubject(id), data, jetstream.WithMsgID(id))
		var apiErr *jetstream.APIError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &apiErr) && apiErr.ErrorCode == errFull && strings.Contains(apiErr.Description, "maximum messages"):
			return q.busy()
		case ctx.Err() != nil || time.Now().After(deadline) || (apiErr != nil && apiErr.ErrorCode != errNoLeader):
			return fmt.Errorf("queueing run %s: %w", id, err)
		}
		q.log.Warn("queueing a run; trying again", "run", id, "error", err)
		if !sleepCtx(ctx, wait) {
			return fmt.Errorf("queueing run %s: %w", id, ctx.Err())
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// publishPatience is how long Dispatch tries to queue a run while the stream has no
// leader or does not answer (a NATS server of the cluster went down).
const publishPatience = 20 * time.Second

// errNoLeader is JetStream's API error code for a stream that is electing a leader.
const errNoLeader = 10008

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// newToken is a message's claim token (protocol.Message.Token).
func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// keep puts b in the work bucket by its checksum, unless it is there, and returns it.
func (q *Queue) keep(ctx context.Context, b []byte) (string, error) {
	sum := sha256.Sum256(b)
	sha := hex.EncodeToString(sum[:])
	return sha, q.put(ctx, sha, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// keepFile puts the file at path in the work bucket by its checksum, unless it is there.
// A session file linked from the cache is known by its checksum and not read: a run
// with large session files then costs the API node a Stat of the work bucket.
func (q *Queue) keepFile(ctx context.Context, path string) (protocol.Input, error) {
	if q.known != nil {
		if fi, err := os.Lstat(path); err == nil {
			if sha, ok := q.known.Checksum(fi); ok {
				return protocol.Input{SHA256: sha, Bytes: fi.Size()}, q.put(ctx, sha, func() (io.ReadCloser, error) { return os.Open(path) })
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return protocol.Input{}, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	f.Close()
	if err != nil {
		return protocol.Input{}, err
	}
	q.metrics.DispatchHashed.Inc()
	sha := hex.EncodeToString(h.Sum(nil))
	return protocol.Input{SHA256: sha, Bytes: n}, q.put(ctx, sha, func() (io.ReadCloser, error) { return os.Open(path) })
}

// The file is sealed with its key (keys.go): a worker reads it only with the key its
// claim of a run that holds the file gets.
func (q *Queue) put(ctx context.Context, sha string, open func() (io.ReadCloser, error)) error {
	seal, err := q.keys.key(ctx, sha)
	if err != nil {
		return err
	}
	key := protocol.SealedKey(seal)
	if info, err := q.work.Stat(ctx, key); err == nil && time.Since(info.ModTime) < casRefresh {
		return nil
	} else if err != nil && !errors.Is(err, blob.ErrNotFound) {
		// No answer (the bucket's leader changing, say): sent again, as if missing. A
		// Put rides out a leader change; a Stat gives up at its timeout.
		q.log.Warn("asking the work bucket for a run's file; sending it", "key", key, "error", err)
	}
	// Missing, or old enough that CollectWork may take it soon: (re)sent, so that it
	// outlives the run by a day.
	r, err := open()
	if err != nil {
		return err
	}
	defer r.Close()
	// A file that is not its checksum (it changed since it was hashed, or the checksum
	// came from a name) is refused before it replaces anything: the object under its
	// key may be another queued run's. Hashed from the handle that is then sent, it can
	// differ only when it is written in place while it is sent (checked below).
	if rs, ok := r.(io.ReadSeeker); ok {
		pre := sha256.New()
		if _, err := io.Copy(pre, rs); err != nil {
			return err
		}
		if got := hex.EncodeToString(pre.Sum(nil)); got != sha {
			return fmt.Errorf("the file changed before it was sent (sha256:%s, not sha256:%s)", got, sha)
		}
		if _, err := rs.Seek(0, io.SeekStart); err != nil {
			return err
		}
	}
	h := sha256.New()
	sealed, err := protocol.Seal(io.TeeReader(r, h), seal)
	if err != nil {
		return err
	}
	if _, err := q.work.Put(ctx, key, sealed, blob.PutOptions{ContentType: "application/octet-stream"}); err != nil {
		return err
	}
	q.metrics.DispatchSent.Inc()
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		q.work.Delete(context.WithoutCancel(ctx), key)
		return fmt.Errorf("the file changed while it was sent (sha256:%s, not sha256:%s)", got, sha)
	}
	return nil
}

// stop asks the worker holding run r to stop it; if the worker does not answer, its
// lease check stops it within a third of the ack wait. It reports false when no one
// answers the worker's subject: the worker is gone.
func (q *Queue) stop(ctx context.Context, r store.Run) bool {
	if r.Worker == "" {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := q.nc.RequestWithContext(ctx, q.cfg.Names.CancelSubject(r.Worker), []byte(r.ID))
	if errors.Is(err, nats.ErrNoResponders) {
		return false
	}
	if err != nil {
		q.log.Warn("asking a worker to cancel a run; its lease check will", "run", r.ID, "worker", r.Worker, "error", err)
	}
	return true
}

// Status tells the other API nodes that run id is now status.
func (q *Queue) Status(id, status string) {
	b, _ := json.Marshal(protocol.Status{Node: q.cfg.Node, Status: status})
	if err := q.nc.Publish(q.cfg.Names.StatusSubject(id), b); err != nil {
		q.log.Warn("publishing a run's status", "run", id, "error", err)
	}
}

// Watch passes run r's output lines from its worker to the run service until stop:
// the lines the worker kept from before (the backlog), then live ones, each once.
func (q *Queue) Watch(r store.Run, deliver func(run.Event)) (stop func()) {
	var mu sync.Mutex
	var early []protocol.Line // live lines that came before the backlog
	var earlyBytes int        // their data, bounded as the lines are
	last := int64(-1)         // the last line passed on; -1 until the backlog is in
	attempt := r.Attempts     // the attempt whose lines are passed on
	// From any worker: the run's next attempt may be another's. A line from a worker
	// that does not hold the run is dropped when the run's holder is known (lines are
	// for viewers only; what is recorded comes from the holder's report).
	sub, err := protocol.Subscribe(q.nc, q.cfg.Names.OutSubject("*", r.ID), "", false, func(m *nats.Msg) {
		var l protocol.Line
		// A worker's line names its attempt and counts from 1; JetStream's answers to a
		// request a worker sent with this subject as its reply (a PubAck) do neither.
		if json.Unmarshal(m.Data, &l) != nil || l.Type == "status" || l.Attempt < 1 || l.Seq < 1 {
			return
		}
		if from := strings.TrimSuffix(strings.TrimPrefix(m.Subject, q.cfg.Names.OutPrefix()), "."+r.ID); r.Worker != "" && l.Attempt <= r.Attempts && from != r.Worker {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case last < 0:
			if len(early) < 8192 && earlyBytes+len(l.Data) <= 4<<20 {
				early = append(early, l)
				earlyBytes += len(l.Data)
			}
		case l.Attempt > attempt:
			// The run's next attempt, on another worker: its lines count from 1 again.
			attempt, last = l.Attempt, l.Seq
			deliver(run.Event{Type: l.Type, Data: l.Data})
		case l.Attempt == attempt && l.Seq > last:
			last = l.Seq
			deliver(run.Event{Type: l.Type, Data: l.Data})
		}
	})
	if err != nil {
		q.log.Warn("watching a run's output", "run", r.ID, "error", err)
		return func() {}
	}
	// A reader this far behind loses lines, as a slow SSE client does: memory stays
	// bounded however fast the run prints.
	sub.SetPendingLimits(8192, 4<<20)
	// The backlog comes from the worker while live lines are held back, so that a slow
	// worker delays this run's lines, never the caller.
	go func() {
		var b protocol.Backlog
		if r.Status == store.StatusRunning && r.Worker != "" {
			if msg, err := q.nc.Request(q.cfg.Names.BacklogSubject(r.Worker), []byte(r.ID), 2*time.Second); err == nil {
				json.Unmarshal(msg.Data, &b)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		last = 0
		for _, l := range b.Lines {
			attempt = max(attempt, l.Attempt)
			deliver(run.Event{Type: l.Type, Data: l.Data})
			last = l.Seq
		}
		if b.Full {
			deliver(run.Event{Type: "notice", Data: "later lines printed before you connected are left out here: only the first ones are kept for late viewers"})
		}
		for _, l := range early {
			if l.Attempt > attempt {
				attempt, last = l.Attempt, 0
			}
			if l.Attempt == attempt && l.Seq > last {
				deliver(run.Event{Type: l.Type, Data: l.Data})
				last = l.Seq
			}
		}
		early, earlyBytes = nil, 0
	}()
	return func() { sub.Unsubscribe() }
}
