package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runner"
)

// boxServer answers the sandbox operations API nodes send to this worker
// (protocol.BoxSubject), on its runner's boxes. Each request is served in a goroutine
// of its own: an exec may take minutes. API nodes take turns on a box; the worker keeps
// track of the calls under way in each, so that an idle box is never removed in the
// middle of one, and removing a box stops them.
type boxServer struct {
	nc    *nats.Conn
	own   func(context.Context) (blob.Store, error) // the worker's own bucket, where file bodies come and go
	boxes runner.Sandboxes
	log   *slog.Logger

	budget int64 // the memory the workspaces of its boxes may take together

	mu    sync.Mutex
	calls map[string]*boxCall // under way, by call id
	// held are the boxes it holds: those the runner kept from before this process, and
	// those made since. reserved is what each box made by this process reserves of the
	// budget: API nodes check the budget when they place a box, each on its own; this is
	// the check that holds when two of them place one here at once.
	held     map[string]bool
	reserved map[string]int64
}

// budgetSetting is sandbox.BudgetSetting, named here for the worker's messages: the
// worker does not link sandbox, which holds the store (TestWorkerLinksNoSQL).
const budgetSetting = "SKRIP_SANDBOX_MEMORY_BUDGET"

type boxCall struct {
	box    string
	cancel context.CancelFunc
}

// serveBoxes subscribes to this worker's sandbox subjects; stop unsubscribes and stops
// the operations under way (the boxes stay). It sets w.boxes.
func (w *Worker) serveBoxes(ctx context.Context) (stop func(), err error) {
	s := &boxServer{nc: w.nc, own: w.ownBucket, boxes: w.runner, log: w.log.With("component", "sandboxes"), budget: w.cfg.BoxBudget,
		calls: map[string]*boxCall{}, held: map[string]bool{}, reserved: map[string]int64{}}
	// Asked once, before any box is being made: the runner's list removes what it takes
	// for a box that did not survive, which a box half-made would look like.
	kept, err := w.runner.Boxes(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the sandboxes the runner kept: %w", err)
	}
	for _, id := range kept {
		s.held[id] = true
	}
	w.boxes = s
	prefix := w.cfg.Names.BoxSubject(w.cfg.ID, "")
	// An API node cancels a call without waiting (no reply); every other operation is a
	// request, and one without a reply is not an API node's.
	sub, err := protocol.Subscribe(w.nc, w.cfg.Names.BoxSubject(w.cfg.ID, ">"), "", false, func(m *nats.Msg) {
		op := strings.TrimPrefix(m.Subject, prefix)
		var req protocol.BoxRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			s.log.Warn("a sandbox request that is not one", "subject", m.Subject, "error", err)
			return
		}
		if op == protocol.OpCancel {
			s.stop(req.Call)
			return
		}
		if m.Reply == "" {
			s.log.Warn("a sandbox request without a reply is dropped", "subject", m.Subject)
			return
		}
		go s.serve(op, req, m)
	})
	if err != nil {
		return nil, err
	}
	return func() {
		sub.Unsubscribe()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.calls {
			c.cancel()
		}
	}, nil
}

// serve runs one operation and answers it.
func (s *boxServer) serve(op string, req protocol.BoxRequest, m *nats.Msg) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rep protocol.BoxReply
	var err error
	if op == protocol.OpRemove {
		rep, err = s.remove(ctx, req)
	} else {
		s.start(req, cancel)
		defer s.end(req.Call)
		rep, err = s.do(ctx, op, req, m)
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Info("a sandbox operation failed", "op", op, "sandbox", req.Box, "error", err)
		}
		rep = protocol.BoxReply{Error: protocol.BoxErrorOf(err)}
	}
	b, _ := json.Marshal(rep)
	m.Respond(b)
}

func (s *boxServer) do(ctx context.Context, op string, req protocol.BoxRequest, m *nats.Msg) (protocol.BoxReply, error) {
	switch op {
	case protocol.OpCreate:
		if req.Spec == nil || req.Spec.ID != req.Box {
			return protocol.BoxReply{}, errors.New("a create without its box")
		}
		return protocol.BoxReply{}, s.create(ctx, *req.Spec)
	case protocol.OpExec:
		return s.exec(ctx, req, m)
	case protocol.OpWrite:
		return s.write(ctx, req)
	case protocol.OpRead:
		return s.read(ctx, req)
	case protocol.OpBoxes:
		return protocol.BoxReply{Boxes: s.ids()}, nil
	}
	return protocol.BoxReply{}, fmt.Errorf("no sandbox operation %q", op)
}

func (s *boxServer) exec(ctx context.Context, req protocol.BoxRequest, m *nats.Msg) (protocol.BoxReply, error) {
	x := req.Exec
	if x == nil {
		return protocol.BoxReply{}, errors.New("an exec without its command")
	}
	spec := runner.ExecSpec{Cmd: x.Cmd, Stdin: x.Stdin, Timeout: x.Timeout, LogBytes: x.LogBytes}
	if x.Lines {
		// On the answer's subject, before the answer: the API node gets them in order.
		spec.OnLine = func(stream string, line []byte) {
			b, _ := json.Marshal(protocol.BoxReply{Line: &protocol.Line{Type: stream, Data: string(line)}})
			s.nc.Publish(m.Reply, b)
		}
	}
	res, err := s.boxes.Exec(ctx, req.Box, spec)
	if err != nil {
		return protocol.BoxReply{}, err
	}
	return protocol.BoxReply{Result: &res}, nil
}

// create makes a box when its workspace fits in the budget beside the others'.
func (s *boxServer) create(ctx context.Context, spec runner.BoxSpec) error {
	need := runner.WorkspaceMemory(spec.WorkspaceBytes)
	s.mu.Lock()
	var reserved int64
	for _, n := range s.reserved {
		reserved += n
	}
	if reserved+need > s.budget {
		s.mu.Unlock()
		return errs.New(protocol.ErrBudget, map[string]any{"setting": budgetSetting, "budget_bytes": s.budget, "reserved_bytes": reserved,
			"needed_bytes": need}, "the worker's sandboxes already take %s of its %s memory budget (%s), and a workspace of %s does not fit; try again, or ask for a smaller one",
			runner.HumanBytes(reserved), runner.HumanBytes(s.budget), budgetSetting, runner.HumanBytes(spec.WorkspaceBytes))
	}
	s.reserved[spec.ID] = need
	s.mu.Unlock()
	err := s.boxes.CreateBox(ctx, spec)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		delete(s.reserved, spec.ID)
		return err
	}
	s.held[spec.ID] = true
	return nil
}

// ids lists the boxes it holds, for its heartbeat.
func (s *boxServer) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.held))
	for id := range s.held {
		out = append(out, id)
	}
	return out
}

// write moves the body an API node left in the worker's own bucket into the box, and
// deletes it. No other worker may read that bucket.
func (s *boxServer) write(ctx context.Context, req protocol.BoxRequest) (protocol.BoxReply, error) {
	if !strings.HasPrefix(req.Xfer, protocol.XferKey("")) {
		return protocol.BoxReply{}, fmt.Errorf("a write from %q, not a transfer", req.Xfer)
	}
	own, err := s.own(ctx)
	if err != nil {
		return protocol.BoxReply{}, err
	}
	defer own.Delete(context.WithoutCancel(ctx), req.Xfer)
	rc, info, err := own.Get(ctx, req.Xfer, 0, -1)
	if err != nil {
		return protocol.BoxReply{}, fmt.Errorf("reading the body of a write: %w", err)
	}
	defer rc.Close()
	n, err := s.boxes.WriteFile(ctx, req.Box, req.Path, runner.Exactly(rc, info.Size, req.Path))
	if err != nil {
		return protocol.BoxReply{}, err
	}
	return protocol.BoxReply{Size: n}, nil
}

// read puts the box's file in the worker's own bucket for the API node, which deletes
// it. No other worker may read that bucket.
func (s *boxServer) read(ctx context.Context, req protocol.BoxRequest) (protocol.BoxReply, error) {
	own, err := s.own(ctx)
	if err != nil {
		return protocol.BoxReply{}, err
	}
	rc, size, err := s.boxes.ReadFile(ctx, req.Box, req.Path)
	if err != nil {
		return protocol.BoxReply{}, err
	}
	defer rc.Close()
	key := protocol.XferKey(nuid.Next())
	info, err := own.Put(ctx, key, rc, blob.PutOptions{ContentType: "application/octet-stream"})
	if err != nil {
		return protocol.BoxReply{}, fmt.Errorf("sending %s to the worker's bucket: %w", req.Path, err)
	}
	if info.Size != size {
		own.Delete(context.WithoutCancel(ctx), key)
		return protocol.BoxReply{}, fmt.Errorf("%s: %d of its %d bytes were sent", req.Path, info.Size, size)
	}
	return protocol.BoxReply{Xfer: key, Size: size}, nil
}

// remove removes a box, stopping the calls under way in it; when the API node removes
// it as idle, a call under way keeps it (Busy).
func (s *boxServer) remove(ctx context.Context, req protocol.BoxRequest) (protocol.BoxReply, error) {
	s.mu.Lock()
	var stop []context.CancelFunc
	for _, c := range s.calls {
		if c.box == req.Box {
			stop = append(stop, c.cancel)
		}
	}
	if req.IfIdle && len(stop) > 0 {
		s.mu.Unlock()
		return protocol.BoxReply{Busy: true}, nil
	}
	s.mu.Unlock()
	for _, c := range stop {
		c()
	}
	if err := s.boxes.RemoveBox(ctx, req.Box); err != nil {
		return protocol.BoxReply{}, err
	}
	s.mu.Lock()
	delete(s.reserved, req.Box)
	delete(s.held, req.Box)
	s.mu.Unlock()
	return protocol.BoxReply{}, nil
}

func (s *boxServer) start(req protocol.BoxRequest, cancel context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[req.Call] = &boxCall{box: req.Box, cancel: cancel}
}

func (s *boxServer) end(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.calls, call)
}

// stop cancels call, when it is under way.
func (s *boxServer) stop(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.calls[call]; c != nil {
		c.cancel()
	}
}
