package sandbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// In a cluster (docs/cluster.md), sandboxes live on workers, not on API nodes. A
// sandbox's record names its worker (Node), and every API node reaches every box through
// the Cluster: none answers ErrElsewhere. A sandbox whose worker has left the registry
// is lost with it (ErrLost, 410), and its record goes.

// Worker is a live cluster worker that keeps sandboxes.
type Worker struct {
	ID     string
	Runner string // its runner's name
	Budget int64  // the memory its sandboxes' workspaces may reserve together
	Boxes  []string
}

// Cluster holds sandboxes on a cluster's workers (dispatch.Boxes).
type Cluster interface {
	// Workers lists the live workers that keep sandboxes.
	Workers(ctx context.Context) ([]Worker, error)
	// Live reports whether worker id is in the registry; a sandbox on one that is not is
	// lost. When that cannot be told (the registry does not answer), it is live.
	Live(ctx context.Context, id string) bool
	// On is the boxes of worker id. An operation on a box of a worker that is gone fails
	// with ErrLost.
	On(id string) runner.Sandboxes
	// RemoveIdle removes box id of worker node unless an operation is under way in it
	// (from any API node), and reports whether it did.
	RemoveIdle(ctx context.Context, node, id string) (bool, error)
}

// UseCluster makes the service keep its sandboxes on c's workers. It is called once,
// before the service is used.
func (s *Service) UseCluster(c Cluster) { s.host = &clusterHost{s: s, c: c} }

// clusterHost keeps the boxes on a cluster's workers: every API node reaches every box
// through the Cluster.
type clusterHost struct {
	s *Service
	c Cluster
}

var _ host = (*clusterHost)(nil)

func (h *clusterHost) here(store.Sandbox) bool { return true }

func (h *clusterHost) reachable(store.Sandbox) bool { return true }

func (h *clusterHost) boxes(b store.Sandbox) runner.Sandboxes { return h.c.On(b.Node) }

func (h *clusterHost) live(ctx context.Context, node string) bool { return h.c.Live(ctx, node) }

// recover has no boxes to match: an API node holds none.
func (h *clusterHost) recover(context.Context) error { return nil }

// Lost is the error of sandbox id, lost with its worker.
func Lost(id, worker string) error {
	return errs.New(ErrLost, map[string]any{"sandbox_id": id, "worker": worker},
		"sandbox %s: sandbox lost with its worker (%s), and its workspace with it; create a new one", id, worker)
}

// checkLive answers ErrLost for b, and removes its record, when its worker is gone.
func (s *Service) checkLive(ctx context.Context, b store.Sandbox) error {
	if s.host.live(ctx, b.Node) {
		return nil
	}
	s.log.Warn("a sandbox was lost with its worker; removing its record", "sandbox", b.ID, "worker", b.Node)
	s.st.DeleteSandbox(context.WithoutCancel(ctx), b.ID)
	return Lost(b.ID, b.Node)
}

// lost reports whether b's worker is gone, and then removes b's record. live keeps what
// the registry said of each worker, for one listing.
func (s *Service) lost(ctx context.Context, b store.Sandbox, live map[string]bool) bool {
	if s.busy(b.ID) {
		return false
	}
	ok, asked := live[b.Node]
	if !asked {
		ok = s.host.live(ctx, b.Node)
		live[b.Node] = ok
	}
	if ok {
		return false
	}
	s.log.Warn("a sandbox was lost with its worker; removing its record", "sandbox", b.ID, "worker", b.Node)
	s.st.DeleteSandbox(context.WithoutCancel(ctx), b.ID)
	return true
}

// expire destroys cur, idle past its timeout, unless its worker says an operation is
// under way in it; the caller holds cur.
func (h *clusterHost) expire(ctx context.Context, e *entry, cur store.Sandbox) (bool, error) {
	s := h.s
	removed, err := h.c.RemoveIdle(context.WithoutCancel(ctx), cur.Node, cur.ID)
	if errors.Is(err, ErrLost) {
		removed, err = true, nil
	}
	if err != nil || !removed {
		return false, err
	}
	e.cancel()
	if _, err := s.st.DeleteSandbox(context.WithoutCancel(ctx), cur.ID); err != nil {
		return true, err
	}
	s.log.Info("sandbox destroyed", "sandbox", cur.ID, "reason", "idle", "worker", cur.Node)
	return true, nil
}

// place chooses b's worker in a cluster and inserts its record there: a live worker
// with room for another sandbox whose budget holds b's workspace beside its other
// sandboxes', the one holding the fewest. The owner's share is of the cluster's budget,
// the live workers' budgets together, since the owner's sandboxes may be on any of them.
// The caller holds createMu.
func (h *clusterHost) place(ctx context.Context, b *store.Sandbox, owner store.User, quota int64) error {
	s := h.s
	workers, err := h.c.Workers(ctx)
	if err != nil {
		return err
	}
	if len(workers) == 0 {
		return errs.New(ErrUnavailable, nil, "no worker of the cluster keeps agent sandboxes now; start a skrip worker, or try again when one has joined")
	}
	list, err := s.st.Sandboxes(ctx, "")
	if err != nil {
		return err
	}
	count, reserved := map[string]int{}, map[string]int64{}
	for _, o := range list {
		count[o.Node]++
		reserved[o.Node] += footprint(LimitsOf(o).WorkspaceBytes)
	}
	if err := s.checkHeld(owner, list); err != nil {
		return err
	}
	need := footprint(quota)
	var best *Worker
	full, mostFree := true, int64(0)
	for i, w := range workers {
		if count[w.ID] >= s.cfg.MaxTotal {
			continue
		}
		full = false
		free := max(w.Budget-reserved[w.ID], 0)
		mostFree = max(mostFree, free)
		if need > free {
			continue
		}
		if best == nil || count[w.ID] < count[best.ID] {
			best = &workers[i]
		}
	}
	switch {
	case full:
		return fmt.Errorf("%w: every worker holds %d sandboxes", store.ErrFull, s.cfg.MaxTotal)
	case best == nil:
		fits := largestFitting(mostFree)
		hint := "delete a sandbox (skrip sandbox rm ID), or wait for an idle one to be destroyed"
		if fits > 0 {
			hint = fmt.Sprintf("ask for a workspace of at most %s (limits.workspace_bytes %d), or %s", runner.HumanBytes(fits), fits, hint)
		}
		return errs.New(ErrBudget, map[string]any{"setting": BudgetSetting, "workspace_bytes": quota, "needed_bytes": need,
			"available_bytes": mostFree, "largest_workspace_bytes": fits},
			"no worker of the cluster has room in its memory budget (%s) for a workspace of %s, which takes up to %s with its files' metadata; %s",
			BudgetSetting, runner.HumanBytes(quota), runner.HumanBytes(need), hint)
	}
	var total int64
	for _, w := range workers {
		total += w.Budget
	}
	if err := s.checkShare(owner, list, func(store.Sandbox) bool { return true }, total, quota); err != nil {
		return err
	}
	b.Node, b.Runner = best.ID, best.Runner
	return s.st.CreateSandbox(ctx, *b, s.cfg.MaxPerUser, s.cfg.MaxTotal)
}

// sweep removes the records of sandboxes lost with their workers, and the boxes
// live workers hold that no record knows: one whose create was given up on, or whose
// record went while its worker was cut off. A record is made before its box and removed
// after it, so a box listed in a heartbeat, read before the records, without a record is
// no one's.
func (h *clusterHost) sweep(ctx context.Context) error {
	s := h.s
	workers, err := h.c.Workers(ctx)
	if err != nil {
		return err
	}
	records, err := s.st.Sandboxes(ctx, "")
	if err != nil {
		return err
	}
	known, live := map[string]bool{}, map[string]bool{}
	for _, b := range records {
		known[b.ID] = true
		// A record whose worker is gone would count against its owner's sandboxes
		// until someone used or listed it.
		s.lost(ctx, b, live)
	}
	var failed []error
	for _, w := range workers {
		for _, id := range w.Boxes {
			if known[id] {
				continue
			}
			s.log.Info("removing a sandbox box without a record", "sandbox", id, "worker", w.ID)
			if err := h.c.On(w.ID).RemoveBox(ctx, id); err != nil && !errors.Is(err, ErrLost) {
				failed = append(failed, err)
			}
		}
	}
	return errors.Join(failed...)
}
