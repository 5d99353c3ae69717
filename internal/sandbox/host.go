package sandbox

import (
	"context"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// host is where a Service's boxes live: this server's runner (localHost, the one New
// makes), or a cluster's workers (clusterHost, over a Cluster: dispatch.Boxes). The
// service decides who may use a sandbox, with what limits and for how long; the host
// says which boxes it reaches, places new ones and removes idle ones
// (docs/architecture.md, "Where work runs").
type host interface {
	// here reports whether this server may act on b's box.
	here(b store.Sandbox) bool
	// reachable reports whether this server can use b's box: here, and by the runner
	// that made it.
	reachable(b store.Sandbox) bool
	// boxes is what holds b's box.
	boxes(b store.Sandbox) runner.Sandboxes
	// live reports whether the machine holding a box of node is there; a sandbox on one
	// that is not is lost. When that cannot be told, it is.
	live(ctx context.Context, node string) bool
	// place checks new sandbox b's workspace of quota bytes against the memory budget
	// and its owner's share, chooses where it lives, and inserts its record. The caller
	// holds createMu.
	place(ctx context.Context, b *store.Sandbox, owner store.User, quota int64) error
	// expire destroys cur, idle past its timeout, unless an operation is under way in
	// it, and reports whether it did; the caller holds cur (e).
	expire(ctx context.Context, e *entry, cur store.Sandbox) (bool, error)
	// sweep removes what Expire leaves behind that no record leads to.
	sweep(ctx context.Context) error
	// recover matches the boxes that outlived a restart with their records, at start.
	recover(ctx context.Context) error
}

// localHost keeps the boxes on this server's runner: a sandbox is held by the server
// that made it (its record's Node), and another server's answers ErrElsewhere.
type localHost struct {
	s   *Service
	run runner.Sandboxes // this server's runner
}

var _ host = (*localHost)(nil)

func (h *localHost) here(b store.Sandbox) bool { return b.Node == h.s.cfg.Node }

func (h *localHost) reachable(b store.Sandbox) bool { return h.here(b) && b.Runner == h.s.runner }

func (h *localHost) boxes(store.Sandbox) runner.Sandboxes { return h.run }

// live: this server is there.
func (h *localHost) live(context.Context, string) bool { return true }

func (h *localHost) expire(ctx context.Context, e *entry, cur store.Sandbox) (bool, error) {
	e.cancel()
	return true, h.s.remove(ctx, cur, "idle")
}

// sweep has nothing to do: Recover matched the boxes and the records at start, and
// every box since has its record.
func (h *localHost) sweep(context.Context) error { return nil }

// here reports whether this server may act on b's box.
func (s *Service) here(b store.Sandbox) bool { return s.host.here(b) }

// reachable reports whether this server can use b's box.
func (s *Service) reachable(b store.Sandbox) bool { return s.host.reachable(b) }

// boxesOf is what holds b's box.
func (s *Service) boxesOf(b store.Sandbox) runner.Sandboxes { return s.host.boxes(b) }
