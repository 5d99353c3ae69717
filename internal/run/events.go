package run

import (
	"fmt"
	"sync"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// What the hub holds of a run's output, each event counting its data plus
// runner.LineOverhead (its SSE framing and bookkeeping), so that empty lines count too.
const (
	// maxBacklogBytes and maxBacklogEvents cap the lines a running run keeps for
	// subscribers that come late (a page opened after the run started).
	maxBacklogBytes  = 256 << 10
	maxBacklogEvents = 4096
	// maxQueueBytes and maxQueueEvents cap what waits for one subscriber that reads
	// slower than the run prints; lines past them are left out for that subscriber, with
	// a notice. They hold the live bursts of both streams (runner.LiveBurst each).
	maxQueueBytes  = 1 << 20
	maxQueueEvents = 8192
	// maxQueuedBytes caps what waits for all subscribers of all runs together, so that
	// many stalled connections cannot add up.
	maxQueuedBytes = 32 << 20
)

// Event is something that happened to a run: a status change, a line of output, or a
// notice from skrip about the output (lines left out of the live view, a cut line).
type Event struct {
	Type string `json:"type"` // "status", "stdout", "stderr" or "notice"
	Data string `json:"data"`
}

func (e Event) size() int { return len(e.Data) + runner.LineOverhead }

// hub fans a run's events out to its subscribers. A subscriber that falls behind misses
// lines, and is told how many (never statuses: they make room): the run never waits for
// a reader. While a run runs, the hub also keeps its first lines (up to the backlog's
// cap), so a subscriber that comes late sees them too; they go when the run ends and its
// logs are stored.
type hub struct {
	mu      sync.Mutex
	subs    map[string]map[*Subscription]struct{}
	backlog map[string]*backlog
	queued  int // bytes waiting in every subscription's queue
}

type backlog struct {
	events []Event
	bytes  int
	full   bool // lines came after the backlog was full
	// watched: the lines came from a watch of a run printing elsewhere (Executor.Watch),
	// which keeps its own backlog; forget drops them when no one here watches any more.
	watched bool
}

func newHub() *hub {
	return &hub{subs: map[string]map[*Subscription]struct{}{}, backlog: map[string]*backlog{}}
}

// Subscription is one reader of a run's events: a bounded queue the hub fills and the
// reader drains with Take when Ready says there is something.
type Subscription struct {
	h     *hub
	runID string
	lines bool          // output lines and notices too, not only statuses
	ready chan struct{} // holds a token while the queue is not empty

	// guarded by h.mu
	queue   []Event
	bytes   int
	dropped int // lines left out since the last Take

	onClose func() // set before the subscription is handed out; called once by Close
	closed  sync.Once
}

// Ready has a value when events wait to be taken.
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Take returns the events that wait, oldest first, with a notice after them when lines
// were left out because this subscriber fell behind.
func (s *Subscription) Take() []Event {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	out := s.queue
	if s.dropped > 0 {
		out = append(out, Event{Type: "notice", Data: fmt.Sprintf("%d lines left out here: this connection fell behind the run", s.dropped)})
	}
	h.queued -= s.bytes
	s.queue, s.bytes, s.dropped = nil, 0, 0
	return out
}

// Close ends the subscription.
func (s *Subscription) Close() {
	if s.onClose != nil {
		s.closed.Do(s.onClose)
	}
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if subs := h.subs[s.runID]; subs != nil {
		if _, ok := subs[s]; ok {
			delete(subs, s)
			h.queued -= s.bytes
			s.queue, s.bytes = nil, 0
		}
		if len(subs) == 0 {
			delete(h.subs, s.runID)
		}
	}
}

// push queues e for s; the caller holds h.mu. A line that does not fit is left out and
// counted; a status always gets in, in place of the oldest lines if it must.
func (s *Subscription) push(e Event) {
	h := s.h
	if e.Type != "status" {
		if !s.lines {
			return
		}
		if len(s.queue) >= maxQueueEvents || s.bytes+e.size() > maxQueueBytes || h.queued+e.size() > maxQueuedBytes {
			s.dropped++
			return
		}
	}
	for e.Type == "status" && len(s.queue) > 0 && (len(s.queue) >= maxQueueEvents || s.bytes+e.size() > maxQueueBytes) {
		old := s.queue[0]
		s.queue = s.queue[1:]
		s.bytes -= old.size()
		h.queued -= old.size()
		if old.Type != "status" {
			s.dropped++
		}
	}
	s.queue = append(s.queue, e)
	s.bytes += e.size()
	h.queued += e.size()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// subscribe returns runID's lines so far (with lines) and a subscription to its events
// from then on: statuses, and output lines and notices with lines.
func (h *hub) subscribe(runID string, lines bool) ([]Event, *Subscription) {
	s := &Subscription{h: h, runID: runID, lines: lines, ready: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	var past []Event
	if b := h.backlog[runID]; b != nil && lines {
		past = append(past, b.events...)
		if b.full {
			past = append(past, Event{Type: "notice", Data: "later lines printed before you connected are left out here: only the first ones are kept for late viewers"})
		}
	}
	if h.subs[runID] == nil {
		h.subs[runID] = map[*Subscription]struct{}{}
	}
	h.subs[runID][s] = struct{}{}
	return past, s
}

// forget drops what the hub keeps of runID's lines from a watch: no one here watches it
// any more. The lines of a run printing in this process stay until it ends.
func (h *hub) forget(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.backlog[runID]; b != nil && b.watched {
		delete(h.backlog, runID)
	}
}

func (h *hub) publish(runID string, e Event) { h.publishFrom(runID, e, false) }

// publishWatched publishes e, which a watch of a run printing elsewhere passed on.
func (h *hub) publishWatched(runID string, e Event) { h.publishFrom(runID, e, true) }

func (h *hub) publishFrom(runID string, e Event, watched bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case e.Type == "status" && store.Terminal(e.Data):
		delete(h.backlog, runID)
	case e.Type != "status":
		b := h.backlog[runID]
		if b == nil {
			b = &backlog{watched: watched}
			h.backlog[runID] = b
		}
		if !b.full && len(b.events) < maxBacklogEvents && b.bytes+e.size() <= maxBacklogBytes {
			b.events = append(b.events, e)
			b.bytes += e.size()
		} else {
			b.full = true
		}
	}
	for s := range h.subs[runID] {
		s.push(e)
	}
}
