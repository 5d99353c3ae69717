// Package sandbox owns persistent agent sandboxes (docs/spec.md §9): who may use which sandbox,
// the limits and idle timeout each one gets, exec, confined file reads and writes, and
// staging files in from and publishing them out to the file staging area. The boxes
// themselves are the runner's (runner.Sandboxes); their records are the store's.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinel errors, mapped to HTTP codes by the api package.
var (
	// ErrNotFound means no sandbox of the caller's has that id (404).
	ErrNotFound = errors.New("sandbox not found")
	// ErrInvalid means a request is malformed or asks past a limit (400).
	ErrInvalid = errors.New("invalid sandbox request")
	// ErrTooMany means the caller holds as many sandboxes as one user may (409).
	ErrTooMany = errors.New("too many sandboxes")
	// ErrElsewhere means the sandbox's box is held by another server (409). A cluster's
	// API nodes reach every box (UseCluster), so they never answer it.
	ErrElsewhere = errors.New("sandbox on another server")
	// ErrLost means the cluster worker holding the sandbox is gone, and the sandbox with
	// it (410); its record is removed.
	ErrLost = errors.New("sandbox lost with its worker")
	// ErrFull means this server holds as many sandboxes as it may, or a sandbox as many
	// uploads under way as it may (503, and worth retrying soon).
	ErrFull = errors.New("no room for another sandbox")
	// ErrBudget means a new sandbox's workspace does not fit in the server's memory
	// budget beside the others' (507).
	ErrBudget = errors.New("sandbox memory budget exceeded")
	// ErrShare means a new sandbox's workspace does not fit in its owner's share of the
	// memory budget beside the owner's other sandboxes (507): one user cannot reserve the
	// budget the others need.
	ErrShare = errors.New("sandbox share exceeded")
	// ErrUnavailable means this server's runner cannot keep sandboxes at all (503, and
	// no use retrying).
	ErrUnavailable = errors.New("agent sandboxes unavailable")
)

// Config holds the limits every sandbox gets at most (and by default).
type Config struct {
	// Limits: MemoryBytes, Pids, CPUs and TmpBytes of each box; LogBytes of stdout and of
	// stderr kept per exec.
	Limits         runner.Limits
	WorkspaceBytes int64
	IdleTimeout    time.Duration // the default, and a non-admin's at most MaxIdleTimeout
	// MaxIdleTimeout is the longest idle timeout a user who is not an admin may ask for
	// (SKRIP_SANDBOX_MAX_IDLE); AdminMaxIdleTimeout an admin's.
	MaxIdleTimeout      time.Duration
	AdminMaxIdleTimeout time.Duration
	ExecTimeout         time.Duration // the longest one exec may ask for
	MaxPerUser          int
	MaxTotal            int // on this server
	// MemoryBudget is the memory the workspaces of this server's sandboxes may reserve
	// together (see MemoryBudget).
	MemoryBudget int64
	// UserShare is the share of the budget one user's workspaces may reserve together
	// (SKRIP_SANDBOX_USER_SHARE, above 0 and at most 1; 0 is no limit): see shareOf.
	UserShare float64
	// SpoolDir holds uploads into sandboxes while their bodies arrive.
	SpoolDir string
	// Node names this server: a box lives on the server that made it.
	Node string
}

// DefaultExecTimeout is an exec's timeout when it names none (or less, when the server's
// longest is shorter).
const DefaultExecTimeout = 60 * time.Second

// Limits are one sandbox's limits, as stored with it and shown to its owner.
type Limits struct {
	MemoryBytes    int64   `json:"memory_bytes"`
	Pids           int     `json:"pids"`
	CPUs           float64 `json:"cpus"`
	WorkspaceBytes int64   `json:"workspace_bytes"`
	TmpBytes       int64   `json:"tmp_bytes"`
	LogBytes       int64   `json:"log_bytes"`
	ExecTimeout    float64 `json:"max_exec_timeout_s"`
}

// LimitsOf decodes a sandbox's stored limits.
func LimitsOf(b store.Sandbox) Limits {
	var l Limits
	json.Unmarshal([]byte(b.Limits), &l)
	return l
}

// Service keeps agent sandboxes.
type Service struct {
	st     *store.Store
	host   host   // where the boxes live: this server's runner, or a cluster's workers
	runner string // the runner of this server's boxes
	files  *staging.Service
	cfg    Config
	log    *slog.Logger
	now    func() time.Time

	mu     sync.Mutex
	active map[string]*entry

	createMu sync.Mutex // creates take turns checking the memory budget
}

// entry serialises the operations on one sandbox and lets destroying it stop the one
// under way.
type entry struct {
	sem   chan struct{} // holds a token while an operation runs
	users int           // operations holding or waiting for sem, and uploads
	// uploads under way (bodies arriving, not holding sem) and the bytes they spooled.
	uploads int
	pending int64
	ctx     context.Context
	cancel  context.CancelFunc
}

// lock waits for the sandbox's turn, or for ctx to end.
func (e *entry) lock(ctx context.Context) error {
	select {
	case e.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tryLock takes the sandbox's turn only when no operation holds it.
func (e *entry) tryLock() bool {
	select {
	case e.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (e *entry) unlock() { <-e.sem }

// New returns a Service keeping its sandboxes in boxes, runnerName's, on this server
// (UseCluster moves them to a cluster's workers).
func New(st *store.Store, boxes runner.Sandboxes, runnerName string, f *staging.Service, cfg Config, log *slog.Logger) *Service {
	s := &Service{st: st, runner: runnerName, files: f, cfg: cfg, log: log, now: time.Now, active: map[string]*entry{}}
	s.host = &localHost{s: s, run: boxes}
	return s
}

// Config returns the limits in force.
func (s *Service) Config() Config { return s.cfg }

// Runner names the runner holding the boxes.
func (s *Service) Runner() string { return s.runner }

// CreateRequest is what a caller may choose for a new sandbox; zero values take the
// server's defaults.
type CreateRequest struct {
	MemoryBytes    int64
	Pids           int
	CPUs           float64
	WorkspaceBytes int64
	IdleTimeout    time.Duration
}

// Create makes a sandbox for owner.
func (s *Service) Create(ctx context.Context, owner store.User, req CreateRequest) (store.Sandbox, error) {
	c := s.cfg
	l := Limits{MemoryBytes: c.Limits.MemoryBytes, Pids: c.Limits.Pids, CPUs: c.Limits.CPUs, WorkspaceBytes: c.WorkspaceBytes,
		TmpBytes: c.Limits.TmpBytes, LogBytes: c.Limits.LogBytes, ExecTimeout: c.ExecTimeout.Seconds()}
	var err error
	if l.MemoryBytes, err = lower("memory_bytes", req.MemoryBytes, l.MemoryBytes); err != nil {
		return store.Sandbox{}, err
	}
	if l.Pids, err = lower("pids", req.Pids, l.Pids); err != nil {
		return store.Sandbox{}, err
	}
	if l.CPUs, err = lower("cpus", req.CPUs, l.CPUs); err != nil {
		return store.Sandbox{}, err
	}
	if l.WorkspaceBytes, err = lower("workspace_bytes", req.WorkspaceBytes, l.WorkspaceBytes); err != nil {
		return store.Sandbox{}, err
	}
	idle, err := c.idleTimeout(owner, req.IdleTimeout)
	if err != nil {
		return store.Sandbox{}, err
	}
	limits, _ := json.Marshal(l)
	now := s.now()
	b := store.Sandbox{ID: ids.New("sb"), OwnerID: owner.ID, Runner: s.runner, Node: c.Node, Limits: string(limits),
		IdleTimeout: idle, CreatedAt: now, LastActiveAt: now}
	// Held while the box is made, so that the janitor never takes a sandbox being born
	// for an idle one.
	e := s.acquire(b.ID)
	defer s.release(b.ID, e)
	e.lock(context.Background())
	defer e.unlock()
	if err := s.createReserved(ctx, &b, owner, l.WorkspaceBytes); err != nil {
		switch {
		case errors.Is(err, store.ErrTooMany):
			return store.Sandbox{}, errs.New(ErrTooMany, map[string]any{"max": c.MaxPerUser},
				"you hold %d sandboxes, the most one user may; delete one first (skrip sandbox rm ID)", c.MaxPerUser)
		case errors.Is(err, store.ErrFull):
			return store.Sandbox{}, errs.New(ErrFull, map[string]any{"max": c.MaxTotal},
				"the server holds %d sandboxes, all it may; try again when one has been destroyed", c.MaxTotal)
		}
		return store.Sandbox{}, err
	}
	spec := runner.BoxSpec{ID: b.ID, OwnerID: owner.ID, WorkspaceBytes: l.WorkspaceBytes,
		Limits: runner.Limits{MemoryBytes: l.MemoryBytes, Pids: l.Pids, CPUs: l.CPUs, TmpBytes: l.TmpBytes, LogBytes: l.LogBytes}}
	if err := s.boxesOf(b).CreateBox(ctx, spec); err != nil {
		s.st.DeleteSandbox(context.WithoutCancel(ctx), b.ID)
		if errors.Is(err, runner.ErrNoSandboxes) {
			return store.Sandbox{}, errs.New(ErrUnavailable, map[string]any{"runner": b.Runner}, "%s", err.Error())
		}
		if errors.Is(err, ErrLost) || errors.Is(err, ErrBudget) {
			return store.Sandbox{}, err
		}
		return store.Sandbox{}, fmt.Errorf("creating sandbox %s on %s: %w", b.ID, b.Runner, err)
	}
	b.LastActiveAt = s.now()
	if err := s.st.TouchSandbox(ctx, b.ID, b.LastActiveAt); err != nil {
		return store.Sandbox{}, err
	}
	s.log.Info("sandbox created", "sandbox", b.ID, "owner", owner.ID, "runner", b.Runner, "node", b.Node)
	return b, nil
}

// MaxIdleSetting names the setting of a non-admin's longest idle timeout, for messages.
const MaxIdleSetting = "SKRIP_SANDBOX_MAX_IDLE"

// idleTimeout is the idle timeout of owner's new sandbox that asked for asked (0: the
// default). A sandbox idle for a day holds its workspace's memory for a day, so a user who
// is not an admin may ask for at most MaxIdleTimeout, and gets at most that by default;
// asking for more is refused with the cap, not quietly cut to it, so the caller knows when
// the sandbox will go.
func (c Config) idleTimeout(owner store.User, asked time.Duration) (time.Duration, error) {
	admin := owner.Role == store.RoleAdmin
	most := c.MaxIdleTimeout
	if admin {
		most = c.AdminMaxIdleTimeout
	}
	if asked == 0 {
		return min(c.IdleTimeout, most), nil
	}
	details := map[string]any{"field": "idle_timeout", "value": staging.FormatTTL(asked), "max": staging.FormatTTL(most)}
	switch {
	case asked > most && !admin:
		details["setting"] = MaxIdleSetting
		return 0, errs.New(ErrInvalid, details,
			"idle_timeout %s is more than the %s a sandbox of yours may wait unused on this server (%s: only an admin may ask for more); ask for %s or less",
			staging.FormatTTL(asked), staging.FormatTTL(most), MaxIdleSetting, staging.FormatTTL(most))
	case asked < time.Second || asked > most:
		return 0, errs.New(ErrInvalid, details,
			"idle_timeout %s is not allowed: it must be from 1s to %s", staging.FormatTTL(asked), staging.FormatTTL(most))
	}
	return asked, nil
}

// lower returns the limit a sandbox asked for in field, or max when it asked for none
// (0); asking for more than max, or below 0, is refused.
func lower[T int | int64 | float64](field string, asked, max T) (T, error) {
	switch {
	case asked == 0:
		return max, nil
	case asked < 0 || asked > max:
		return 0, errs.New(ErrInvalid, map[string]any{"field": "limits." + field, "value": fmt.Sprint(asked), "max": fmt.Sprint(max)},
			"limits.%s %v is not allowed: it must be above 0 and at most %v on this server", field, asked, max)
	}
	return asked, nil
}

// Get returns the sandbox id if caller may use it: its owner, or an admin. Anyone else,
// and everyone once it has been idle past its timeout, is answered as if it did not exist.
func (s *Service) Get(ctx context.Context, caller store.User, id string) (store.Sandbox, error) {
	notFound := errs.New(ErrNotFound, map[string]any{"sandbox_id": id}, "sandbox not found: %s", id)
	b, err := s.st.Sandbox(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Sandbox{}, notFound
	}
	if err != nil {
		return store.Sandbox{}, err
	}
	if b.OwnerID != caller.ID && caller.Role != store.RoleAdmin {
		return store.Sandbox{}, notFound
	}
	if err := s.checkLive(ctx, b); err != nil {
		return store.Sandbox{}, err
	}
	if !b.ExpiresAt().After(s.now()) {
		if !s.here(b) {
			// The server holding it destroys it; a record removed here would leave its
			// box running there.
			return store.Sandbox{}, errs.New(ErrNotFound, map[string]any{"sandbox_id": id},
				"sandbox %s was destroyed after %s without use", id, b.IdleTimeout)
		}
		destroyed, err := s.expireOne(ctx, b)
		if err != nil {
			return store.Sandbox{}, err
		}
		if destroyed {
			return store.Sandbox{}, errs.New(ErrNotFound, map[string]any{"sandbox_id": id},
				"sandbox %s was destroyed after %s without use", id, b.IdleTimeout)
		}
	}
	return b, nil
}

// List returns the caller's live sandboxes (every user's when all is set and the caller
// is an admin).
func (s *Service) List(ctx context.Context, caller store.User, all bool) ([]store.Sandbox, error) {
	owner := caller.ID
	if all && caller.Role == store.RoleAdmin {
		owner = ""
	}
	list, err := s.st.Sandboxes(ctx, owner)
	if err != nil {
		return nil, err
	}
	out := list[:0]
	now := s.now()
	live := map[string]bool{}
	for _, b := range list {
		if s.lost(ctx, b, live) {
			continue
		}
		if b.ExpiresAt().After(now) || s.busy(b.ID) {
			out = append(out, b)
		}
	}
	return out, nil
}

// Delete destroys the caller's sandbox id, stopping an exec under way.
func (s *Service) Delete(ctx context.Context, caller store.User, id string) error {
	b, err := s.Get(ctx, caller, id)
	if err != nil {
		return err
	}
	if !s.here(b) {
		return elsewhere(b)
	}
	return s.destroy(ctx, b, "deleted")
}

// elsewhere refuses a use of b, which another server holds.
func elsewhere(b store.Sandbox) error {
	return errs.New(ErrElsewhere, map[string]any{"sandbox_id": b.ID},
		"sandbox %s is held by another skrip server (%s runner); send the request there", b.ID, b.Runner)
}

// destroy stops what runs in b, removes its box and then its record.
func (s *Service) destroy(ctx context.Context, b store.Sandbox, reason string) error {
	e := s.acquire(b.ID)
	defer s.release(b.ID, e)
	e.cancel()
	// Once what runs in it has been stopped, the sandbox goes, even when the request
	// that asked for it ends meanwhile: a half-done delete would leave every later use
	// of it refused as deleted.
	e.lock(context.Background())
	defer e.unlock()
	return s.remove(ctx, b, reason)
}

// expireOne destroys b if it is still idle and nothing uses it, and reports whether it
// did: the record is read again once the sandbox is held, so a use that came after the
// list was made keeps it.
func (s *Service) expireOne(ctx context.Context, b store.Sandbox) (bool, error) {
	e := s.acquire(b.ID)
	defer s.release(b.ID, e)
	if s.uploading(e) || !e.tryLock() {
		return false, nil
	}
	defer e.unlock()
	cur, err := s.st.Sandbox(ctx, b.ID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if cur.ExpiresAt().After(s.now()) {
		return false, nil
	}
	return s.host.expire(ctx, e, cur)
}

// remove removes b's box (when this server reaches it) and its record; the caller holds
// b. A box lost with its worker is gone already.
func (s *Service) remove(ctx context.Context, b store.Sandbox, reason string) error {
	if s.here(b) {
		if err := s.boxesOf(b).RemoveBox(context.WithoutCancel(ctx), b.ID); err != nil && !errors.Is(err, ErrLost) {
			return err
		}
	}
	if _, err := s.st.DeleteSandbox(context.WithoutCancel(ctx), b.ID); err != nil {
		return err
	}
	s.log.Info("sandbox destroyed", "sandbox", b.ID, "reason", reason)
	return nil
}

// acquire registers an operation on sandbox id; the caller locks e (or not), unlocks it,
// then releases.
func (s *Service) acquire(id string) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.active[id]
	if e == nil {
		e = &entry{sem: make(chan struct{}, 1)}
		e.ctx, e.cancel = context.WithCancel(context.Background())
		s.active[id] = e
	}
	e.users++
	return e
}

func (s *Service) release(id string, e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.users--; e.users == 0 {
		e.cancel()
		delete(s.active, id)
	}
}

// busy reports whether an operation holds or waits for sandbox id.
func (s *Service) busy(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[id] != nil
}

// use runs fn on the caller's sandbox id, alone among that sandbox's operations, with a
// context that also ends when the sandbox is destroyed. The use counts as activity, at
// its start and at its end. When fn succeeds, the sandbox stays held until the caller
// calls the release func it returns (after closing a reader fn opened, say).
func (s *Service) use(ctx context.Context, caller store.User, id string, fn func(ctx context.Context, b store.Sandbox) error) (func(), error) {
	b, err := s.Get(ctx, caller, id)
	if err != nil {
		return nil, err
	}
	if !s.reachable(b) {
		return nil, elsewhere(b)
	}
	e := s.acquire(id)
	if err := e.lock(ctx); err != nil {
		s.release(id, e)
		return nil, err
	}
	done := func() {
		s.st.TouchSandbox(context.WithoutCancel(ctx), id, s.now())
		e.unlock()
		s.release(id, e)
	}
	if e.ctx.Err() != nil {
		done()
		return nil, errs.New(ErrNotFound, map[string]any{"sandbox_id": id}, "sandbox %s was deleted", id)
	}
	if err := s.st.TouchSandbox(ctx, id, s.now()); err != nil {
		done()
		return nil, err
	}
	octx, stop := context.WithCancel(ctx)
	unhook := context.AfterFunc(e.ctx, stop)
	release := func() {
		unhook()
		stop()
		done()
	}
	err = fn(octx, b)
	if e.ctx.Err() != nil {
		// Destroyed meanwhile: whatever fn made of being stopped, that is the answer.
		release()
		return nil, errs.New(ErrNotFound, map[string]any{"sandbox_id": id}, "sandbox %s was deleted while this request used it", id)
	}
	if err != nil {
		release()
		return nil, s.boxError(ctx, b, err)
	}
	return release, nil
}

// do runs fn on the caller's sandbox id as use does, and releases it when fn returns.
func (s *Service) do(ctx context.Context, caller store.User, id string, fn func(ctx context.Context, b store.Sandbox) error) error {
	release, err := s.use(ctx, caller, id, fn)
	if err != nil {
		return err
	}
	release()
	return nil
}

// boxError turns a box the runner lost, or a sandbox lost with its worker, into a
// sandbox that is gone: its record goes too.
func (s *Service) boxError(ctx context.Context, b store.Sandbox, err error) error {
	if errors.Is(err, ErrLost) {
		s.log.Warn("a sandbox was lost with its worker; removing its record", "sandbox", b.ID, "worker", b.Node, "error", err)
		s.st.DeleteSandbox(context.WithoutCancel(ctx), b.ID)
		return err
	}
	if !errors.Is(err, runner.ErrNoBox) {
		return err
	}
	s.log.Warn("a sandbox's box is gone; removing what is left of it and its record", "sandbox", b.ID, "error", err)
	if err := s.boxesOf(b).RemoveBox(context.WithoutCancel(ctx), b.ID); err != nil {
		s.log.Warn("removing a lost sandbox's box", "sandbox", b.ID, "error", err)
	}
	s.st.DeleteSandbox(context.WithoutCancel(ctx), b.ID)
	return errs.New(ErrNotFound, map[string]any{"sandbox_id": b.ID}, "sandbox %s is gone (its %s box was lost, e.g. in a restart); create a new one", b.ID, b.Runner)
}
