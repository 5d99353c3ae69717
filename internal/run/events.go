package run

import (
	"sync"

	"github.com/skrip-dev/skrip/internal/store"
)

// maxBacklogBytes caps the output lines a running run keeps for subscribers that come
// late (a page opened after the run started); later lines still reach subscribers live.
const maxBacklogBytes = 256 << 10

// Event is something that happened to a run: a status change or a line of output.
type Event struct {
	Type string `json:"type"` // "status", "stdout" or "stderr"
	Data string `json:"data"`
}

// hub fans a run's events out to its subscribers. A subscriber that falls behind misses
// lines (never statuses block anyone): the run never waits for a reader. While a run
// runs, the hub also keeps its lines so far (up to maxBacklogBytes), so a subscriber that
// comes late sees them too; they go when the run ends and its logs are stored.
type hub struct {
	mu      sync.Mutex
	subs    map[string]map[chan Event]struct{}
	backlog map[string]*backlog
}

type backlog struct {
	events []Event
	bytes  int
}

func newHub() *hub {
	return &hub{subs: map[string]map[chan Event]struct{}{}, backlog: map[string]*backlog{}}
}

// subscribe returns runID's lines so far, a channel of its events from then on, and a
// function that ends the subscription.
func (h *hub) subscribe(runID string) ([]Event, <-chan Event, func()) {
	ch := make(chan Event, 256)
	h.mu.Lock()
	var past []Event
	if b := h.backlog[runID]; b != nil {
		past = append(past, b.events...)
	}
	if h.subs[runID] == nil {
		h.subs[runID] = map[chan Event]struct{}{}
	}
	h.subs[runID][ch] = struct{}{}
	h.mu.Unlock()
	return past, ch, func() {
		h.mu.Lock()
		delete(h.subs[runID], ch)
		if len(h.subs[runID]) == 0 {
			delete(h.subs, runID)
		}
		h.mu.Unlock()
	}
}

func (h *hub) publish(runID string, e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case e.Type == "status" && store.Terminal(e.Data):
		delete(h.backlog, runID)
	case e.Type != "status":
		b := h.backlog[runID]
		if b == nil {
			b = &backlog{}
			h.backlog[runID] = b
		}
		if b.bytes+len(e.Data) <= maxBacklogBytes {
			b.events = append(b.events, e)
			b.bytes += len(e.Data)
		}
	}
	for ch := range h.subs[runID] {
		select {
		case ch <- e:
		default:
			if e.Type == "status" {
				// Make room: a status must arrive, a line may be lost.
				select {
				case <-ch:
				default:
				}
				select {
				case ch <- e:
				default:
				}
			}
		}
	}
}
