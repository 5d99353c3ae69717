package run

import "sync"

// fairQueue holds the runs waiting for a worker of this node's pool, one FIFO list per
// user, and gives them out in turn (SPEC §12): next is the user with the fewest runs
// executing, and among those the one served least recently. A user who filled the queue
// therefore waits behind another user's first run, not the other way round: with one
// worker, A's eight runs and then B's one start as A, B, A, A, ... Its size is bounded
// by the service's slots, not here.
type fairQueue struct {
	mu      sync.Mutex
	ready   *sync.Cond
	waiting map[string][]*job // by user, oldest first
	running map[string]int    // runs of a user taken from the queue and not yet done
	served  map[string]uint64 // when a user was last served (seq); kept while it has runs waiting or running
	seq     uint64
	closed  bool
}

func newFairQueue() *fairQueue {
	q := &fairQueue{waiting: map[string][]*job{}, running: map[string]int{}, served: map[string]uint64{}}
	q.ready = sync.NewCond(&q.mu)
	return q
}

// push adds j at the end of its user's list. It never blocks: the caller holds a slot.
func (q *fairQueue) push(j *job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	u := j.run.UserID
	q.waiting[u] = append(q.waiting[u], j)
	q.ready.Signal()
}

// pop takes the next job in turn, waiting for one; after close it gives what is left,
// then reports false.
func (q *fairQueue) pop() (*job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.waiting) == 0 {
		if q.closed {
			return nil, false
		}
		q.ready.Wait()
	}
	next, first := "", true
	for u := range q.waiting {
		if first || q.running[u] < q.running[next] || (q.running[u] == q.running[next] && q.served[u] < q.served[next]) ||
			(q.running[u] == q.running[next] && q.served[u] == q.served[next] && q.waiting[u][0].run.CreatedAt.Before(q.waiting[next][0].run.CreatedAt)) {
			next, first = u, false
		}
	}
	list := q.waiting[next]
	j := list[0]
	if len(list) == 1 {
		delete(q.waiting, next)
	} else {
		list[0] = nil
		q.waiting[next] = list[1:]
	}
	q.seq++
	q.served[next] = q.seq
	q.running[next]++
	return j, true
}

// done says a job pop gave out has ended.
func (q *fairQueue) done(j *job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	u := j.run.UserID
	if q.running[u]--; q.running[u] <= 0 {
		delete(q.running, u)
		if len(q.waiting[u]) == 0 {
			delete(q.served, u)
		}
	}
}

// close lets pop give out what is left and then report false.
func (q *fairQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.ready.Broadcast()
}

// userLocks serialise one user's admissions on this node, so that the count that
// refuses a user at the cap before anything of the run is made (admitUser) is exact
// here: seventy runs of one user at once make eight runs and seventy-less-eight 429s,
// not a race for the queue's slots that other users would lose too. Across nodes the
// insert's own count is exact (store.AdmitRun).
type userLocks struct {
	mu sync.Mutex
	m  map[string]*userLock
}

type userLock struct {
	sync.Mutex
	users int // holding or waiting
}

// lock takes user id's lock and returns its release.
func (l *userLocks) lock(id string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*userLock{}
	}
	ul := l.m[id]
	if ul == nil {
		ul = &userLock{}
		l.m[id] = ul
	}
	ul.users++
	l.mu.Unlock()
	ul.Lock()
	return func() {
		ul.Unlock()
		l.mu.Lock()
		if ul.users--; ul.users == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}
