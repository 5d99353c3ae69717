package account

import (
	"container/list"
	"context"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/metrics"
)

// Limits bound what checking passwords may cost the server (docs/operating.md "Limits per
// user"). A zero field takes its default.
type Limits struct {
	// Checks is how many password hashes run at once (default: the number of CPUs).
	// Each argon2id hash takes 64 MiB, so their memory is at most Checks × 64 MiB.
	Checks int
	// Wait is how long a hash waits for its turn before the answer is ErrBusy (2s).
	Wait time.Duration
	// FailuresPerName and FailuresPerAddress are the failed sign-ins a user name and a
	// client address may have before each further one must wait (5 and 20).
	FailuresPerName, FailuresPerAddress int
	// MaxDelay is the longest wait between failed sign-ins (1 minute).
	MaxDelay time.Duration
	// Entries is how many names and addresses the throttle remembers (10000).
	Entries int
	// Metrics counts hashes and throttled sign-ins; nil keeps the counts to itself.
	Metrics *metrics.Metrics
	// TokenMaxLifetime is the longest expiry a new token may ask for (0: no maximum, and
	// a token may have none).
	TokenMaxLifetime time.Duration
	// WebSessionIdle ends a browser sign-in unused this long (8h); WebSessionMax ends it
	// this long after it began, used or not (30 days).
	WebSessionIdle, WebSessionMax time.Duration
	// CLILogins cap the pending `skrip login`s (clilogin.go).
	CLILogins CLILoginLimits
	// TokensPerUser is the most tokens one user may hold (MaxTokensPerUser).
	TokensPerUser int
	// AdminPasswordsOnly lets only admins sign in with a password (SKRIP_PASSWORDS=admin):
	// everyone else signs on through the OpenID provider.
	AdminPasswordsOnly bool
}

func (l Limits) withDefaults() Limits {
	if l.Checks <= 0 {
		l.Checks = runtime.NumCPU()
	}
	if l.Wait <= 0 {
		l.Wait = 2 * time.Second
	}
	if l.FailuresPerName <= 0 {
		l.FailuresPerName = 5
	}
	if l.FailuresPerAddress <= 0 {
		l.FailuresPerAddress = 20
	}
	if l.MaxDelay <= 0 {
		l.MaxDelay = time.Minute
	}
	if l.TokensPerUser <= 0 {
		l.TokensPerUser = MaxTokensPerUser
	}
	if l.Entries <= 0 {
		l.Entries = 10000
	}
	if l.Metrics == nil {
		l.Metrics = metrics.New()
	}
	if l.WebSessionIdle <= 0 {
		l.WebSessionIdle = 8 * time.Hour
	}
	if l.WebSessionMax <= 0 {
		l.WebSessionMax = 30 * 24 * time.Hour
	}
	l.CLILogins = l.CLILogins.withDefaults()
	return l
}

// gate lets at most cap(slots) password hashes run at once. argon2id's cost is its
// memory (64 MiB a hash), so without it 300 sign-ins at once took the server past 6 GB.
type gate struct {
	slots chan struct{}
	wait  time.Duration
	m     *metrics.Metrics

	mu            sync.Mutex
	running, peak int
}

func newGate(n int, wait time.Duration, m *metrics.Metrics) *gate {
	return &gate{slots: make(chan struct{}, n), wait: wait, m: m}
}

// do runs fn, a password hash, when a slot is free. It waits for one up to g.wait, then
// gives up with ErrBusy (a 503 with Retry-After), or when ctx ends. admit, when not nil,
// runs once the slot is taken and before the hash: an error from it gives the slot back
// unused and is do's answer.
func (g *gate) do(ctx context.Context, admit func() error, fn func()) error {
	select {
	case g.slots <- struct{}{}:
	default:
		t := time.NewTimer(g.wait)
		defer t.Stop()
		select {
		case g.slots <- struct{}{}:
		case <-t.C:
			g.m.PasswordHashesRefused.Inc()
			return errs.New(ErrBusy, map[string]any{"checks": cap(g.slots)},
				"the server is checking as many passwords as it can at once (%d); try again in a moment", cap(g.slots)).Retry(time.Second)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-g.slots }()
	if admit != nil {
		if err := admit(); err != nil {
			return err
		}
	}
	g.enter()
	defer g.leave()
	fn()
	return nil
}

func (g *gate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running++
	g.peak = max(g.peak, g.running)
	g.m.PasswordHashes.Set(float64(g.running))
	g.m.PasswordHashesPeak.Set(float64(g.peak))
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	g.m.PasswordHashes.Set(float64(g.running))
}

// throttle slows down failed sign-ins per key (a client address, a user name) with
// growing delays. Each key has a token bucket from golang.org/x/time/rate holding its
// free failures, which come back one a minute: a failure takes a token, and one that
// leaves none makes the key wait before its next attempt. The wait grows, 2s, 4s, 8s, …
// up to maxDelay, with each failure after a wait while the bucket stays empty: the
// limiter has no notion of growth, so these few lines add it. Once the bucket is full
// again (the failures stopped) the wait starts over, and a sign-in that succeeds forgets
// the key at once.
//
// Attempts count, not only failures: a check in flight may fail, so it holds one of the
// key's free failures until it ends (begin, end). A burst that arrives together gets as
// many checks as the key has free failures left, and past them one at a time, each after
// the wait, not every request that came before the first of them failed.
//
// Keys live in a least-recently-used list of at most max entries, so a flood of addresses
// or names cannot grow it without bound: past it the oldest are forgotten.
type throttle struct {
	maxDelay time.Duration
	max      int

	mu      sync.Mutex
	entries map[string]*list.Element // of *record
	lru     *list.List               // front: used most recently
}

type record struct {
	key      string
	free     int
	lim      *rate.Limiter
	level    int       // waits given since the bucket was last full
	until    time.Time // no attempt before this
	inflight int       // checks begun and not yet ended
}

// freeFailureBack is how often a used free failure comes back.
const freeFailureBack = time.Minute

func newThrottle(entries int, maxDelay time.Duration) *throttle {
	return &throttle{maxDelay: maxDelay, max: entries, entries: map[string]*list.Element{}, lru: list.New()}
}

// key is one thing failures are counted for: by names it for the metric and the message.
type key struct {
	by, id string
	free   int
}

// attempt is a check begun by begin, to be given to end.
type attempt struct {
	keys    []key
	records []*record
}

// outcome is how an attempt ended.
type outcome int

const (
	checkFailed outcome = iota // the password was wrong: a failure
	checkPassed                // the password was right: the keys are forgotten
)

// wait is how long the longest-throttled of keys must still wait before its next
// attempt, and which it is; 0 when none is. It takes nothing: begin decides.
func (t *throttle) wait(now time.Time, keys []key) (time.Duration, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waitLocked(now, keys, false)
}

// begin starts a password check for keys: when none must wait and each has a free
// failure not held by a check in flight (or, with none left, no check in flight), it
// holds one on each and returns the attempt; otherwise it returns how long to wait and
// for which key, and holds nothing.
func (t *throttle) begin(now time.Time, keys []key) (*attempt, time.Duration, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d, by := t.waitLocked(now, keys, true); d > 0 {
		return nil, d, by
	}
	a := &attempt{keys: keys}
	for _, k := range keys {
		r := t.record(k)
		r.inflight++
		a.records = append(a.records, r)
	}
	return a, 0, ""
}

// end ends attempt a: a failure counts against its keys, a success forgets them.
func (t *throttle) end(now time.Time, a *attempt, o outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range a.records {
		r.inflight-- // a record forgotten meanwhile is no longer in the map: harmless
	}
	if o == checkPassed {
		t.resetLocked(a.keys)
		return
	}
	t.failLocked(now, a.keys)
}

// waitLocked is wait; with inFlight it also counts the checks in flight.
func (t *throttle) waitLocked(now time.Time, keys []key, inFlight bool) (time.Duration, string) {
	var longest time.Duration
	by := ""
	for _, k := range keys {
		el, ok := t.entries[k.id]
		if !ok {
			continue
		}
		r := el.Value.(*record)
		tokens := r.lim.TokensAt(now)
		if tokens >= float64(r.free) && r.inflight == 0 {
			t.forget(el) // quiet long enough: nothing to remember
			continue
		}
		d := r.until.Sub(now)
		if inFlight && d <= 0 && r.inflight > 0 && tokens-float64(r.inflight) < 1 {
			// Every free failure left is held by a check in flight, or none is left and
			// one is in flight: if they fail, the wait is at least the next one.
			d = t.delay(r.level + 1)
		}
		if d > longest {
			longest, by = d, k.by
		}
	}
	return longest, by
}

// record is k's record, made when k has none, and now the most recently used.
func (t *throttle) record(k key) *record {
	if el, ok := t.entries[k.id]; ok {
		t.lru.MoveToFront(el)
		return el.Value.(*record)
	}
	r := &record{key: k.id, free: k.free, lim: rate.NewLimiter(rate.Every(freeFailureBack), k.free)}
	t.entries[k.id] = t.lru.PushFront(r)
	for t.lru.Len() > t.max {
		t.forget(t.lru.Back())
	}
	return r
}

// fail counts a failed sign-in against each of keys.
func (t *throttle) fail(now time.Time, keys []key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failLocked(now, keys)
}

func (t *throttle) failLocked(now time.Time, keys []key) {
	for _, k := range keys {
		r := t.record(k)
		if r.lim.TokensAt(now) >= float64(r.free) {
			r.level = 0 // the bucket refilled: start over
		}
		r.lim.AllowN(now, 1)
		// The wait grows with each failure after a wait, not with each of several checks
		// that were in flight together when the bucket ran out.
		if r.lim.TokensAt(now) < 1 && !now.Before(r.until) {
			r.level++
			r.until = now.Add(t.delay(r.level))
		}
	}
}

// delay is the wait after the level-th failure that found no free one: 2s doubling, at
// most maxDelay.
func (t *throttle) delay(level int) time.Duration {
	if level >= 30 {
		return t.maxDelay
	}
	return min(time.Second<<level, t.maxDelay)
}

// reset forgets keys' failures: a sign-in succeeded.
func (t *throttle) reset(keys []key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resetLocked(keys)
}

func (t *throttle) resetLocked(keys []key) {
	for _, k := range keys {
		if el, ok := t.entries[k.id]; ok {
			t.forget(el)
		}
	}
}

func (t *throttle) forget(el *list.Element) {
	delete(t.entries, el.Value.(*record).key)
	t.lru.Remove(el)
}

// signInKeys are what a sign-in's failures count against: the client address (an IPv6
// address by its /64, which one subscriber usually holds whole) and the user name (its
// first 64 bytes, the longest a name can be).
func (s *Service) signInKeys(client, name string) []key {
	if a, err := netip.ParseAddr(client); err == nil {
		a = a.Unmap()
		if a.Is6() {
			p, _ := a.Prefix(64)
			client = p.String()
		} else {
			client = a.String()
		}
	}
	if len(name) > 64 {
		name = name[:64]
	}
	return []key{{by: "address", id: "a " + client, free: s.limits.FailuresPerAddress}, {by: "name", id: "n " + name, free: s.limits.FailuresPerName}}
}
