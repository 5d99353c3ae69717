package run

import "sync"

// Event is something that happened to a run: a status change or a line of output.
type Event struct {
	Type string `json:"type"` // "status", "stdout" or "stderr"
	Data string `json:"data"`
}

// hub fans a run's events out to its subscribers. A subscriber that falls behind misses
// lines (never statuses block anyone): the run never waits for a reader.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan Event]struct{}
}

func newHub() *hub { return &hub{subs: map[string]map[chan Event]struct{}{}} }

// subscribe returns a channel of runID's events and a function that ends the subscription.
func (h *hub) subscribe(runID string) (<-chan Event, func()) {
	ch := make(chan Event, 256)
	h.mu.Lock()
	if h.subs[runID] == nil {
		h.subs[runID] = map[chan Event]struct{}{}
	}
	h.subs[runID][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
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
