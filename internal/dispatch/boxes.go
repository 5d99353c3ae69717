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
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
)

// Agent sandboxes in a cluster live on workers. An API node reaches a box with a request
// on its worker's subject, BoxSubject(worker, op), and waits for the answer with a
// deadline while it watches the registry: a worker that leaves it (its heartbeat older
// than the registry's TTL) takes its boxes with it, and the call ends with
// sandbox.ErrLost within about the TTL, never at the deadline. File bodies go through
// the worker's own bucket (XferKey, protocol.WorkerBucket), which no other worker may
// read, streamed both ways.

// boxErr is the error worker reported, as the API node's services see it: one of the
// runner's sandbox errors, sandbox.ErrBudget, or an error for the log.
func boxErr(e *protocol.BoxError, worker string) error {
	kind := e.Sentinel()
	if kind == protocol.ErrBudget {
		kind = sandbox.ErrBudget
	}
	if kind != nil {
		return errs.New(kind, e.Details, "%s", e.Message)
	}
	return fmt.Errorf("worker %s: %s", worker, e.Message)
}

// Deadlines of the operations on a box, past the registry's watch.
const (
	boxDeadline  = time.Minute
	execGrace    = 5 * time.Second  // past an exec's own timeout
	xferDeadline = 10 * time.Minute // a file body moved between the worker's bucket and a box
	watchEvery   = 2 * time.Second  // how often a call waiting for a worker checks the registry
)

// Boxes is the sandbox.Cluster of an API node: it places sandboxes on the workers of
// the registry and reaches their boxes there.
type Boxes struct {
	nc    *nats.Conn
	names protocol.Names
	kv    jetstream.KeyValue
	own   *workerBuckets // file bodies go through the box's worker's own bucket
	ttl   time.Duration  // a worker whose heartbeat is older is gone
	watch time.Duration
	log   *slog.Logger
}

var _ sandbox.Cluster = (*Boxes)(nil)

// NewBoxes returns the boxes of the workers in the registry Setup made.
func NewBoxes(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, work blob.Store, cfg Config, log *slog.Logger) (*Boxes, error) {
	kv, err := js.KeyValue(ctx, cfg.Names.Registry())
	if err != nil {
		return nil, fmt.Errorf("the worker registry %s: %w", cfg.Names.Registry(), err)
	}
	return &Boxes{nc: nc, names: cfg.Names, kv: kv, own: newWorkerBuckets(work), ttl: protocol.RegistryTTL(cfg.AckWait), watch: min(watchEvery, protocol.RegistryTTL(cfg.AckWait)), log: log}, nil
}

// Workers lists the live workers that keep sandboxes (their budget is above 0).
func (b *Boxes) Workers(ctx context.Context) ([]sandbox.Worker, error) {
	keys, err := b.kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the worker registry: %w", err)
	}
	var out []sandbox.Worker
	for _, k := range keys {
		hb, ok, err := b.heartbeat(ctx, k)
		if err != nil {
			return nil, err
		}
		if ok && hb.BoxBudget > 0 {
			out = append(out, sandbox.Worker{ID: hb.Worker, Runner: hb.Runner, Budget: hb.BoxBudget, Boxes: hb.Sandboxes})
		}
	}
	return out, nil
}

// heartbeat reads worker id's heartbeat; ok is false when it is gone: not in the
// registry, or older than its TTL.
func (b *Boxes) heartbeat(ctx context.Context, id string) (protocol.Heartbeat, bool, error) {
	e, err := b.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return protocol.Heartbeat{}, false, nil
	}
	if err != nil {
		return protocol.Heartbeat{}, false, fmt.Errorf("reading worker %s in the registry: %w", id, err)
	}
	var hb protocol.Heartbeat
	if err := json.Unmarshal(e.Value(), &hb); err != nil || hb.Worker != id {
		return protocol.Heartbeat{}, false, nil
	}
	return hb, time.Since(e.Created()) <= b.ttl, nil
}

// Live reports whether worker id is in the registry; when the registry does not
// answer, it cannot be told, and the worker counts as live.
func (b *Boxes) Live(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, ok, err := b.heartbeat(ctx, id)
	return ok || err != nil
}

// On returns the boxes of worker id.
func (b *Boxes) On(id string) runner.Sandboxes { return &workerBoxes{b: b, worker: id} }

// RemoveIdle removes box id of worker node unless an operation is under way in it.
func (b *Boxes) RemoveIdle(ctx context.Context, node, id string) (bool, error) {
	rep, err := b.call(ctx, node, protocol.OpRemove, protocol.BoxRequest{Box: id, IfIdle: true}, boxDeadline, nil)
	return err == nil && !rep.Busy, err
}

// lost is the error of box id, lost with worker.
func lost(id, worker string) error { return sandbox.Lost(id, worker) }

// call sends op on box req.Box to worker and waits for its answer: until deadline, or
// until the worker leaves the registry (sandbox.ErrLost), or until ctx ends (then the
// worker is told to stop). onLine, when set, gets the Line replies that come first.
func (b *Boxes) call(ctx context.Context, worker, op string, req protocol.BoxRequest, deadline time.Duration, onLine func(protocol.Line)) (protocol.BoxReply, error) {
	req.Call = nuid.Next()
	data, err := json.Marshal(req)
	if err != nil {
		return protocol.BoxReply{}, err
	}
	// Lines and the answer come on one subject, in order. Lines are passed on by a
	// goroutine of their own, and dropped when it falls far behind, so that a slow reader
	// never holds the answer back.
	inbox := b.nc.NewInbox()
	final := make(chan *nats.Msg, 1)
	lines := make(chan protocol.Line, 1024)
	linesDone := make(chan struct{})
	go func() {
		defer close(linesDone)
		for l := range lines {
			onLine(l)
		}
	}()
	var mu sync.Mutex
	over := false // no more lines are passed on
	end := func() {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			over = true
			close(lines)
		}
	}
	// The call's own inbox, not a handler's subject (unguarded: protocol.Subscribe would
	// drop the no-responders status below): only the worker the request went to knows it.
	sub, err := b.nc.Subscribe(inbox, func(m *nats.Msg) {
		if onLine != nil && len(m.Header) == 0 {
			var rep protocol.BoxReply
			if json.Unmarshal(m.Data, &rep) == nil && rep.Line != nil {
				mu.Lock()
				if !over {
					select {
					case lines <- *rep.Line:
					default:
					}
				}
				mu.Unlock()
				return
			}
		}
		select {
		case final <- m:
		default:
		}
	})
	if err != nil {
		end()
		return protocol.BoxReply{}, err
	}
	defer func() {
		sub.Unsubscribe()
		end()
		<-linesDone
	}()
	sub.SetPendingLimits(-1, 64<<20)
	publish := func() error {
		if err := b.nc.PublishRequest(b.names.BoxSubject(worker, op), inbox, data); err != nil {
			return fmt.Errorf("asking worker %s: %w", worker, err)
		}
		return nil
	}
	if err := publish(); err != nil {
		return protocol.BoxReply{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	tick := time.NewTicker(b.watch)
	defer tick.Stop()
	var retry <-chan time.Time
	for {
		select {
		case m := <-final:
			if m.Header.Get("Status") == "503" {
				// No one serves the worker's subject: it is gone, or between connections.
				// No one got the request, so it is sent again until the registry tells.
				if b.gone(ctx, worker) {
					return protocol.BoxReply{}, lost(req.Box, worker)
				}
				retry = time.After(b.watch / 4)
				continue
			}
			var rep protocol.BoxReply
			if err := json.Unmarshal(m.Data, &rep); err != nil {
				return protocol.BoxReply{}, fmt.Errorf("worker %s answered %q: %w", worker, m.Data, err)
			}
			// The lines that came before the answer are passed on before call returns.
			if rep.Error != nil {
				return rep, boxErr(rep.Error, worker)
			}
			return rep, nil
		case <-retry:
			retry = nil
			if err := publish(); err != nil {
				return protocol.BoxReply{}, err
			}
		case <-tick.C:
			if b.gone(ctx, worker) {
				b.cancel(worker, req.Call)
				return protocol.BoxReply{}, lost(req.Box, worker)
			}
		case <-cctx.Done():
			b.cancel(worker, req.Call)
			if ctx.Err() != nil {
				return protocol.BoxReply{}, ctx.Err()
			}
			if b.gone(ctx, worker) {
				return protocol.BoxReply{}, lost(req.Box, worker)
			}
			if retry != nil {
				return protocol.BoxReply{}, fmt.Errorf("worker %s is in the registry but has not served its sandboxes for %s", worker, deadline)
			}
			return protocol.BoxReply{}, fmt.Errorf("worker %s did not answer %s on sandbox %s within %s", worker, op, req.Box, deadline)
		}
	}
}

// gone reports whether worker has left the registry. When the registry does not answer
// that cannot be told, and it is not gone.
func (b *Boxes) gone(ctx context.Context, worker string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, ok, err := b.heartbeat(ctx, worker)
	return err == nil && !ok
}

// cancel tells worker to stop call, best effort.
func (b *Boxes) cancel(worker, call string) {
	data, _ := json.Marshal(protocol.BoxRequest{Call: call})
	b.nc.Publish(b.names.BoxSubject(worker, protocol.OpCancel), data)
}

// workerBoxes are the boxes of one worker, as runner.Sandboxes.
type workerBoxes struct {
	b      *Boxes
	worker string
}

func (w *workerBoxes) CreateBox(ctx context.Context, spec runner.BoxSpec) error {
	_, err := w.b.call(ctx, w.worker, protocol.OpCreate, protocol.BoxRequest{Box: spec.ID, Spec: &spec}, boxDeadline, nil)
	return err
}

func (w *workerBoxes) Exec(ctx context.Context, id string, spec runner.ExecSpec) (runner.ExecResult, error) {
	req := protocol.BoxRequest{Box: id, Exec: &protocol.BoxExec{Cmd: spec.Cmd, Stdin: spec.Stdin, Timeout: spec.Timeout, LogBytes: spec.LogBytes, Lines: spec.OnLine != nil}}
	var onLine func(protocol.Line)
	if spec.OnLine != nil {
		onLine = func(l protocol.Line) { spec.OnLine(l.Type, []byte(l.Data)) }
	}
	rep, err := w.b.call(ctx, w.worker, protocol.OpExec, req, spec.Timeout+execGrace, onLine)
	if err != nil {
		return runner.ExecResult{}, err
	}
	if rep.Result == nil {
		return runner.ExecResult{}, fmt.Errorf("worker %s answered an exec without its result", w.worker)
	}
	return *rep.Result, nil
}

// WriteFile puts r in the worker's own bucket, which no other worker may read, and
// the worker moves it into the box.
func (w *workerBoxes) WriteFile(ctx context.Context, id, p string, r io.Reader) (int64, error) {
	own, err := w.b.own.of(ctx, w.worker)
	if err != nil {
		return 0, fmt.Errorf("sending a file to sandbox %s: %w", id, err)
	}
	key := protocol.XferKey(nuid.Next())
	if _, err := own.Put(ctx, key, r, blob.PutOptions{ContentType: "application/octet-stream"}); err != nil {
		return 0, fmt.Errorf("sending a file to sandbox %s: %w", id, err)
	}
	rep, err := w.b.call(ctx, w.worker, protocol.OpWrite, protocol.BoxRequest{Box: id, Path: p, Xfer: key}, xferDeadline, nil)
	if err != nil {
		// The worker deletes it once read; it may never have.
		own.Delete(context.WithoutCancel(ctx), key)
		return 0, err
	}
	return rep.Size, nil
}

// ReadFile asks the worker to put the file in its own bucket, and streams it from
// there; the object goes when the reader is closed.
func (w *workerBoxes) ReadFile(ctx context.Context, id, p string) (io.ReadCloser, int64, error) {
	own, err := w.b.own.of(ctx, w.worker)
	if err != nil {
		return nil, 0, fmt.Errorf("reading a file of sandbox %s: %w", id, err)
	}
	rep, err := w.b.call(ctx, w.worker, protocol.OpRead, protocol.BoxRequest{Box: id, Path: p}, xferDeadline, nil)
	if err != nil {
		return nil, 0, err
	}
	if !strings.HasPrefix(rep.Xfer, protocol.XferKey("")) {
		return nil, 0, fmt.Errorf("reading a file of sandbox %s: worker %s answered with %q, not a transfer", id, w.worker, rep.Xfer)
	}
	rc, _, err := own.Get(ctx, rep.Xfer, 0, -1)
	if err != nil {
		own.Delete(context.WithoutCancel(ctx), rep.Xfer)
		return nil, 0, fmt.Errorf("reading a file of sandbox %s: %w", id, err)
	}
	return &xferReader{ReadCloser: runner.Exactly(rc, rep.Size, p), work: own, key: rep.Xfer}, rep.Size, nil
}

func (w *workerBoxes) RemoveBox(ctx context.Context, id string) error {
	_, err := w.b.call(ctx, w.worker, protocol.OpRemove, protocol.BoxRequest{Box: id}, boxDeadline, nil)
	return err
}

func (w *workerBoxes) Boxes(ctx context.Context) ([]string, error) {
	rep, err := w.b.call(ctx, w.worker, protocol.OpBoxes, protocol.BoxRequest{}, boxDeadline, nil)
	return rep.Boxes, err
}

// BoxEnforcement is the worker's to say; an API node does not know it.
func (w *workerBoxes) BoxEnforcement(runner.Limits, int64) []runner.Enforced { return nil }

func (w *workerBoxes) Memory(context.Context) (runner.Memory, error) {
	return runner.Memory{}, fmt.Errorf("the memory of worker %s is in its heartbeat", w.worker)
}

// xferReader deletes its object of the worker's bucket when closed.
type xferReader struct {
	io.ReadCloser
	work blob.Store
	key  string
	once sync.Once
}

func (x *xferReader) Close() error {
	err := x.ReadCloser.Close()
	x.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		x.work.Delete(ctx, x.key)
	})
	return err
}
