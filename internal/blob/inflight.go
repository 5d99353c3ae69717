package blob

import "sync"

// InFlight is the set of ids of the Puts a backend has under way, so that its sweep of a
// crash's leftovers never takes a Put's partial data for debris. The zero value is an
// empty set, safe for concurrent use.
type InFlight struct {
	mu  sync.Mutex
	ids map[string]bool
}

// Start marks id as under way.
func (f *InFlight) Start(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids == nil {
		f.ids = map[string]bool{}
	}
	f.ids[id] = true
}

// End marks id as over.
func (f *InFlight) End(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ids, id)
}

// Snapshot returns a copy of the ids under way now.
func (f *InFlight) Snapshot() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]bool, len(f.ids))
	for id := range f.ids {
		out[id] = true
	}
	return out
}
