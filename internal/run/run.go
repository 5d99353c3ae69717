// Package run orchestrates tool runs: it admits a run into a bounded queue, hands it to
// its Executor (this server's worker pool, local.go, or a cluster's queue), keeps its
// artifacts in the blob store, turns the runner's result into the run's status and
// outputs, and publishes its events.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
)

// ErrBusy means the queue is full or the server is stopping (503 with Retry-After).
var ErrBusy = errors.New("at capacity")

// ErrUserRuns means the user has as many runs queued and running as one may
// (SKRIP_RUNS_PER_USER): 429 with Retry-After, for that user alone.
var ErrUserRuns = errors.New("too many runs of one user")

// userRunsRetry is how long a user at the cap is asked to wait: about as long as a
// short run takes, after which one of theirs has likely ended.
const userRunsRetry = 5 * time.Second

// Config sets the run service's limits and capacity.
type Config struct {
	Limits      runner.Limits // of a production run
	Concurrency int           // runs executing at once
	Queue       int           // runs waiting beyond those; in a cluster, queued and running in all
	WorkDir     string        // per-run input directories
	Policy      contract.Policy
	Uploads     upload.Limits // of a run's multipart upload (UploadLimits)
	Node        string        // this server's node id, recorded as the worker of the runs it claims
	// PerUser is how many runs one user may have queued and running at once, counted in
	// the database, so across a cluster's nodes (SKRIP_RUNS_PER_USER); 0 is no cap.
	PerUser int
	// LintsPerUser is how many lints one user may have running at once on this server
	// (SKRIP_LINTS_PER_USER); 0 is the default, the constant LintsPerUser.
	LintsPerUser int
	// UserQuotaBytes and MaxTotalBytes bound what runs keep (Quota), beside everything
	// else their users and everyone hold; 0 keeps everything.
	UserQuotaBytes int64
	MaxTotalBytes  int64
	// SessionWritten, when set, is told each session revision a recorded run wrote
	// (the session keeps editor sessions' steps from it).
	SessionWritten func(ctx context.Context, k store.SessionKey, rev int64)
}

// Service runs tools.
type Service struct {
	st      *store.Store
	blobs   blob.Store
	runner  runner.Runner
	cfg     Config
	metrics *metrics.Metrics
	log     *slog.Logger
	hub     *hub
	now     func() time.Time

	exec     Executor      // where the runs execute
	syntax   chan struct{} // the slots syntax checks take (CheckSyntax)
	lint     chan struct{} // lints at once: at most half the workers (Lint)
	admits   userLocks     // one user's admissions, one at a time
	stopping atomic.Bool
	mu       sync.Mutex
	watches  map[string]*watch // the runs whose lines this node receives from elsewhere

	lintUsers lintUsers // each user's lints running on this node (LintsPerUser)
}

// watch is this node's reception of a remote run's lines, shared by its subscribers.
type watch struct {
	subs int
	stop func()
}

// New starts the service with its own pool of cfg.Concurrency workers as its executor
// (Use replaces it). Call Shutdown to stop it.
func New(st *store.Store, blobs blob.Store, r runner.Runner, cfg Config, m *metrics.Metrics, log *slog.Logger) (*Service, error) {
	if err := os.RemoveAll(cfg.WorkDir); err != nil {
		return nil, fmt.Errorf("cleaning %s: %w", cfg.WorkDir, err)
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, err
	}
	if cfg.LintsPerUser <= 0 {
		cfg.LintsPerUser = LintsPerUser
	}
	s := &Service{st: st, blobs: blobs, runner: r, cfg: cfg, metrics: m, log: log, hub: newHub(), now: time.Now, watches: map[string]*watch{}}
	pool := newLocal(s)
	s.exec = pool
	// Syntax checks run on this node's runner whatever executes the runs: beside them,
	// in the pool's slots, while the pool executes them.
	s.syntax = pool.slots
	s.lint = make(chan struct{}, max(1, cfg.Concurrency/2))
	return s, nil
}

// Use makes e execute the service's runs instead of its own pool, which it stops (a
// cluster's API node: package dispatch). Call it before the first Submit.
func (s *Service) Use(e Executor) {
	old := s.exec
	s.exec = e
	old.Shutdown(0)
}

// Publish passes an event of run id that happened on another node (a status from the
// node that recorded it) to this node's subscribers.
func (s *Service) Publish(id string, e Event) { s.hub.publish(id, e) }

// status tells run id's subscribers here, and the other nodes, that it is now st.
func (s *Service) status(id, st string) {
	s.hub.publish(id, Event{Type: "status", Data: st})
	s.exec.Status(id, st)
}

// Recover ends the runs a crash left unfinished (the executor says which are this
// server's); call it once at start.
func (s *Service) Recover(ctx context.Context) error { return s.exec.Recover(ctx) }

// Runner returns the runner in use.
func (s *Service) Runner() runner.Runner { return s.runner }

// NewInputDir makes an empty directory for a run's input files. The service owns it once
// Submit admits the run; until then, and when Submit refuses it, the caller does
// (workflow, which removes it on a refusal).
func (s *Service) NewInputDir() (string, error) {
	return os.MkdirTemp(s.cfg.WorkDir, "in-")
}

// Request is a run to start.
type Request struct {
	Tool     store.Tool
	Version  store.ToolVersion
	User     store.User
	Context  string
	Kind     string // store.KindInitial or store.KindAction
	ActionID string
	// ActionLabel is the label the offered action had ("Konvertera till PDF"), kept on
	// the run so that lists name the step as the user saw it.
	ActionLabel string
	InputDir    string // files for /work/input, action.json included on action runs
	Inputs      map[string]any
	Action      *contract.Action
	// Memory is the run's /work/memory.json, {"settings": {...}} (docs/spec.md §5b); nil: "{}".
	Memory   []byte
	WallTime time.Duration // 0: the production limit
	// Before, when set, runs once the run is admitted and before it is created: a run
	// refused for capacity never calls it. An error refuses the run.
	Before func(ctx context.Context) error
	// ExpectedRev, on an action run, is the session revision it was submitted at. When
	// the run succeeds, the session moves from it to the next in the transaction that
	// records the run (or not at all, when another write won). An initial run that
	// succeeds and offers actions starts its session anew. A run that does not succeed
	// leaves the session as it was.
	ExpectedRev *int64
}

// Submit admits a run and returns it queued. A full queue gives ErrBusy and creates
// nothing. A run it refuses leaves req.InputDir to the caller.
func (s *Service) Submit(ctx context.Context, req Request) (store.Run, error) {
	if s.stopping.Load() {
		return store.Run{}, errs.New(ErrBusy, nil, "the server is shutting down; try again in a moment")
	}
	unlock := func() {}
	if s.cfg.PerUser > 0 {
		unlock = sync.OnceFunc(s.admits.lock(req.User.ID))
		defer unlock()
	}
	if err := s.admitUser(ctx, req.User.ID); err != nil {
		return store.Run{}, err
	}
	release, err := s.exec.Admit(ctx)
	if err != nil {
		return store.Run{}, err
	}
	started := false
	defer func() {
		if !started {
			release()
		}
	}()
	if req.Before != nil {
		if err := req.Before(ctx); err != nil {
			return store.Run{}, err
		}
	}
	r, exec, err := s.newRun(req)
	if err != nil {
		return store.Run{}, err
	}
	if err := s.create(ctx, r, s.exec.Limit()); err != nil {
		return store.Run{}, err
	}
	// The run is counted where admitUser counts: the user's next run may be admitted
	// while this one's files are sent.
	unlock()
	if err := s.exec.Start(ctx, r, exec, req.InputDir); err != nil {
		return store.Run{}, err
	}
	started = true
	return r, nil
}

// HoldCopy is for a run whose files the server copies itself (staged files named by
// key): a request of a few bytes that makes the server write up to the upload caps. It
// refuses the run when user id has as many runs as one may, and else holds the user's
// admissions on this node until release, so that one user has one such copy at a time
// here, however many requests they send at once. Release it before Submit.
func (s *Service) HoldCopy(ctx context.Context, id string) (release func(), err error) {
	unlock := s.admits.lock(id)
	if err := s.admitUser(ctx, id); err != nil {
		unlock()
		return nil, err
	}
	return unlock, nil
}

// admitUser refuses a run of user id when the user has as many runs queued and running
// as one may, before anything of the run is made (Before is not called). create counts
// again, exactly, as it inserts the run.
func (s *Service) admitUser(ctx context.Context, id string) error {
	if s.cfg.PerUser <= 0 {
		return nil
	}
	n, err := s.st.UnfinishedRuns(ctx, id)
	if err != nil {
		return err
	}
	if n >= s.cfg.PerUser {
		return s.userBusy()
	}
	return nil
}

func (s *Service) userBusy() error {
	return errs.New(ErrUserRuns, map[string]any{"limit": s.cfg.PerUser},
		"you have %d runs waiting or running, as many as one user may at once; wait for one to finish, then try again", s.cfg.PerUser).Retry(userRunsRetry)
}

// create stores queued run r, unless its user's runs or, with total above 0, all
// runs queued and running are at their cap.
func (s *Service) create(ctx context.Context, r store.Run, total int) error {
	err := s.st.AdmitRun(ctx, r, store.RunCaps{PerUser: s.cfg.PerUser, Total: total})
	switch {
	case errors.Is(err, store.ErrUserRuns):
		return s.userBusy()
	case errors.Is(err, store.ErrAllRuns):
		return errs.New(ErrBusy, map[string]any{"queue": total},
			"every worker is busy and %d runs are waiting or running; try again in a few seconds", total)
	}
	return err
}

// newRun is the queued run req asks for, and what executes it.
func (s *Service) newRun(req Request) (store.Run, Job, error) {
	manifest, err := contract.ListInputs(req.InputDir)
	if err != nil {
		return store.Run{}, Job{}, err
	}
	inputs := req.Inputs
	if inputs == nil && req.Action != nil {
		// An action run records the action's input (its tool reads it from action.json,
		// not from the inputs), so that the run can be tried again with it.
		inputs = req.Action.Input
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	r := store.Run{ID: ids.New("r"), ToolID: req.Tool.ID, VersionID: req.Version.ID, UserID: req.User.ID, Context: req.Context,
		Kind: req.Kind, ActionID: req.ActionID, ActionLabel: req.ActionLabel, Status: store.StatusQueued, Inputs: mustJSON(inputs), Outputs: "[]",
		NextActions: "[]", Artifacts: "[]", InputManifest: mustJSON(manifestOf(manifest)), ExpectedRev: req.ExpectedRev, CreatedAt: s.now()}
	exec, err := s.job(r, req)
	return r, exec, err
}

// job is what executes run r of req: the sandbox sees the files of its input directory,
// action.json included, and the manifest lists them without it.
func (s *Service) job(r store.Run, req Request) (Job, error) {
	files, err := contract.ListInputs(req.InputDir)
	if err != nil {
		return Job{}, err
	}
	lim := s.cfg.Limits
	if req.WallTime > 0 {
		lim.WallTime = req.WallTime
	}
	return Job{Run: r.ID, Tool: r.ToolID, Script: []byte(req.Version.Source), Env: contract.Env(files, req.Inputs, req.Action),
		Memory: req.Memory, Limits: lim}, nil
}

// outcome is how a run ended, before it is stored.
type outcome struct {
	status    string
	summary   string
	source    string // where a failure came from (store.Source…); "" when it did not fail
	reason    Reason // why skrip's side or the user's input failed it (reason.go)
	outputs   []contract.Output
	actions   []contract.NextAction
	session   *store.SessionEffect // what the run writes to its session, if it succeeded
	artifacts []Artifact
	discard   []Artifact     // stored, but not kept: deleted once the run is recorded
	result    *runner.Result // its logs; nil when it never ran
}

// SessionEffect is what run r, which ended with res, writes to its session: an action
// run that succeeded moves it on from the revision it was submitted at, and an initial
// run that succeeded and offers actions starts it anew. nil: nothing.
func SessionEffect(r store.Run, res contract.Result) *store.SessionEffect {
	if res.Status != store.StatusSucceeded {
		return nil
	}
	switch {
	case r.Kind == store.KindAction && r.ExpectedRev != nil:
		eff := &store.SessionEffect{Expected: *r.ExpectedRev}
		if res.State != nil {
			eff.State = store.NormalState(res.State)
		}
		return eff
	case r.Kind == store.KindInitial && len(res.NextActions) > 0:
		return &store.SessionEffect{Start: true, State: store.NormalState(res.State)}
	}
	return nil
}

func failed(summary, source string, why Reason) outcome {
	return outcome{status: store.StatusFailed, summary: summary, source: source, reason: why}
}

// Cancel stops a queued or running run. It reports false when the run was already over.
func (s *Service) Cancel(ctx context.Context, runID string) (bool, error) {
	return s.exec.Cancel(ctx, runID)
}

// RequestCancel is Cancel for an executor whose runs wait in the database and run
// elsewhere: it ends a queued run at once (its message is dropped by the worker that
// claims it), and asks stop to stop a running one: the run ends cancelled when its
// worker's report is recorded. stop reports false when the run's worker is known to be
// gone; the run then ends here.
func (s *Service) RequestCancel(ctx context.Context, runID string, stop func(context.Context, store.Run) bool) (bool, error) {
	r, now, err := s.st.RequestCancel(ctx, runID, "cancelled", s.now())
	switch {
	case err != nil:
		return false, err
	case now:
		s.metrics.Runs.WithLabelValues(store.StatusCancelled).Inc()
		s.status(runID, store.StatusCancelled)
		return true, nil
	case r.Status == store.StatusRunning:
		if !stop(ctx, r) {
			// Its worker is gone, and with no other worker free the run would stay
			// "running" until one comes: it ends here.
			if _, err := s.End(ctx, runID, store.StatusCancelled, "cancelled", Reason{}); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	return false, nil
}

// Subscribe returns the first lines a running run printed so far (as many as the
// backlog keeps) and a subscription to its events from then on; with lines false, only
// its status changes. Close the subscription when done.
func (s *Service) Subscribe(runID string, lines bool) ([]Event, *Subscription) {
	past, sub := s.hub.subscribe(runID, lines)
	if lines {
		// Which worker holds it, for the lines it printed before.
		r, _ := s.st.GetRun(context.Background(), runID)
		r.ID = runID
		s.mu.Lock()
		w := s.watches[runID]
		if w == nil {
			w = &watch{stop: s.exec.Watch(r, func(e Event) { s.hub.publishWatched(runID, e) })}
			s.watches[runID] = w
		}
		w.subs++
		s.mu.Unlock()
		sub.onClose = func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if w.subs--; w.subs == 0 {
				w.stop()
				delete(s.watches, runID)
				s.hub.forget(runID)
			}
		}
	}
	return past, sub
}

// Wait returns the run once it is final, or as it is when d passes or ctx ends.
func (s *Service) Wait(ctx context.Context, runID string, d time.Duration) (store.Run, error) {
	_, sub := s.hub.subscribe(runID, false)
	defer sub.Close()
	r, err := s.st.GetRun(ctx, runID)
	if err != nil || store.Terminal(r.Status) || d <= 0 {
		return r, err
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	// Status events from other nodes can be lost; the database cannot.
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	for {
		select {
		case <-poll.C:
			if r, err := s.st.GetRun(ctx, runID); err != nil || store.Terminal(r.Status) {
				return r, err
			}
		case <-sub.Ready():
			for _, e := range sub.Take() {
				if e.Type == "status" && store.Terminal(e.Data) {
					return s.st.GetRun(ctx, runID)
				}
			}
		case <-timer.C:
			return s.st.GetRun(ctx, runID)
		case <-ctx.Done():
			return s.st.GetRun(context.WithoutCancel(ctx), runID)
		}
	}
}

// Shutdown stops admitting runs, lets running and queued ones finish for up to grace,
// then cancels the rest (they end "cancelled") and waits for the workers.
func (s *Service) Shutdown(grace time.Duration) {
	if s.stopping.Swap(true) {
		return
	}
	s.exec.Shutdown(grace)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only values built here are marshalled
	}
	return string(b)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
