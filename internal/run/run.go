// Package run orchestrates tool runs: it admits a run into a bounded queue, executes it
// on the runner with a worker pool, keeps its artifacts in the blob store, turns the
// runner's result into the run's status and outputs, and publishes its events.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// Config sets the run service's limits and capacity.
type Config struct {
	Limits      runner.Limits // of a production run
	Concurrency int           // runs executing at once
	Queue       int           // runs waiting beyond those
	WorkDir     string        // per-run input directories
	Policy      contract.Policy
	Uploads     upload.Limits // of a run's multipart upload (ReadUpload)
	Node        string        // this server's node id, recorded as the worker of the runs it claims
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

	slots    chan struct{} // one per admitted run, queued or running
	jobs     chan *job
	stopping atomic.Bool
	mu       sync.Mutex
	active   map[string]*job
	workers  sync.WaitGroup
}

type job struct {
	req      Request
	run      store.Run
	ctx      context.Context
	cancel   context.CancelFunc
	canceled atomic.Bool // by a user, not by shutdown
	retired  sync.Once
	attempt  int64 // the run's attempt this job claimed; its result is recorded only as that
}

// New starts the worker pool. Call Shutdown to stop it.
func New(st *store.Store, blobs blob.Store, r runner.Runner, cfg Config, m *metrics.Metrics, log *slog.Logger) (*Service, error) {
	if err := os.RemoveAll(cfg.WorkDir); err != nil {
		return nil, fmt.Errorf("cleaning %s: %w", cfg.WorkDir, err)
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, err
	}
	s := &Service{st: st, blobs: blobs, runner: r, cfg: cfg, metrics: m, log: log, hub: newHub(), now: time.Now,
		slots: make(chan struct{}, cfg.Concurrency+cfg.Queue), jobs: make(chan *job, cfg.Concurrency+cfg.Queue),
		active: map[string]*job{}}
	for range cfg.Concurrency {
		s.workers.Add(1)
		go s.worker()
	}
	return s, nil
}

// Recover marks runs a crash left queued or running as failed; call it once at start.
func (s *Service) Recover(ctx context.Context) error {
	n, err := s.st.FailUnfinishedRuns(ctx, "interrupted by server restart", s.now())
	if n > 0 {
		s.log.Warn("marked runs interrupted by a restart as failed", "runs", n)
	}
	return err
}

// Runner returns the runner in use.
func (s *Service) Runner() runner.Runner { return s.runner }

// NewInputDir makes an empty directory for a run's input files. The service owns it from
// Submit on; a caller that does not submit removes it.
func (s *Service) NewInputDir() (string, error) {
	return os.MkdirTemp(s.cfg.WorkDir, "in-")
}

// Request is a run to start.
type Request struct {
	Tool     store.Tool
	Version  store.ToolVersion
	User     store.User
	Context  string
	Kind     string // "initial" or "action"
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
	// AfterSuccess, when set, is called when the run succeeded, before it is recorded;
	// the revision it returns (nil: none) becomes the run's state_rev. A run that did
	// not succeed never calls it, so it leaves the session as it was.
	AfterSuccess func(ctx context.Context, runID string, res contract.Result) (*int64, error)
}

// Submit admits a run and returns it queued. A full queue gives ErrBusy and creates
// nothing.
func (s *Service) Submit(ctx context.Context, req Request) (store.Run, error) {
	busy := errs.New(ErrBusy, map[string]any{"queue": s.cfg.Queue}, "every worker is busy and %d runs are waiting; try again in a few seconds", s.cfg.Queue)
	if s.stopping.Load() {
		return store.Run{}, errs.New(ErrBusy, nil, "the server is shutting down; try again in a moment")
	}
	select {
	case s.slots <- struct{}{}:
	default:
		return store.Run{}, busy
	}
	admitted := false
	defer func() {
		if !admitted {
			<-s.slots
		}
	}()
	if req.Before != nil {
		if err := req.Before(ctx); err != nil {
			return store.Run{}, err
		}
	}
	manifest, err := listInputs(req.InputDir, false)
	if err != nil {
		return store.Run{}, err
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
		NextActions: "[]", Artifacts: "[]", InputManifest: mustJSON(manifestOf(manifest)), CreatedAt: s.now()}
	if err := s.st.CreateRun(ctx, r); err != nil {
		return store.Run{}, err
	}
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	j := &job{req: req, run: r, ctx: jctx, cancel: cancel}
	s.mu.Lock()
	if s.stopping.Load() {
		s.mu.Unlock()
		cancel()
		s.st.CancelQueuedRun(ctx, r.ID, "cancelled: the server shut down", s.now())
		return store.Run{}, errs.New(ErrBusy, nil, "the server is shutting down; try again in a moment")
	}
	s.active[r.ID] = j
	s.jobs <- j // never blocks: a slot was reserved
	s.mu.Unlock()
	admitted = true
	s.metrics.QueueDepth.Inc()
	return r, nil
}

func (s *Service) worker() {
	defer s.workers.Done()
	for j := range s.jobs {
		s.metrics.QueueDepth.Dec()
		s.execute(j)
		s.retire(j)
	}
}

// retire gives back what job j holds: its input directory and its slot. finish calls it
// before the run is recorded as over, so that a caller who saw it end finds the slot
// free; it runs once.
func (s *Service) retire(j *job) {
	j.retired.Do(func() {
		s.mu.Lock()
		delete(s.active, j.run.ID)
		s.mu.Unlock()
		j.cancel()
		os.RemoveAll(j.req.InputDir)
		<-s.slots
	})
}

// execute runs one job to its end and records it.
func (s *Service) execute(j *job) {
	ctx := context.WithoutCancel(j.ctx)
	r := j.run
	started := s.now()
	// The local pool runs each run once: its only claim is attempt 1.
	j.attempt = 1
	if ok, err := s.st.ClaimRun(ctx, r.ID, j.attempt, s.cfg.Node, started); err != nil || !ok {
		if err != nil {
			s.log.Error("claiming run", "run", r.ID, "error", err)
		}
		return // cancelled while queued
	}
	if j.canceled.Load() {
		// Cancel came as this worker took the run: the run was still queued when Cancel
		// flagged it, but running by the time Cancel tried to end it as queued, so it is
		// for the worker to end.
		s.finish(ctx, j, started, outcome{status: store.StatusCancelled, summary: "cancelled"}, nil, nil)
		return
	}
	s.hub.publish(r.ID, Event{Type: "status", Data: store.StatusRunning})

	manifest, err := listInputs(j.req.InputDir, true)
	if err != nil {
		s.finish(ctx, j, started, failed("could not read the run's input files"), nil, err)
		return
	}
	lim := s.cfg.Limits
	if j.req.WallTime > 0 {
		lim.WallTime = j.req.WallTime
	}
	var arts []Artifact
	var artNotices []contract.Output
	spec := runner.Spec{
		ID: r.ID, ToolID: r.ToolID, Script: []byte(j.req.Version.Source), InputDir: j.req.InputDir,
		Env: contract.Env(manifest, j.req.Inputs, j.req.Action), Memory: j.req.Memory, Limits: lim,
		OnLine: func(stream string, line []byte) { s.hub.publish(r.ID, Event{Type: stream, Data: string(line)}) },
		Collect: func(dir string) error {
			var err error
			arts, artNotices, err = s.collect(ctx, r.ID, dir)
			return err
		},
	}
	res, err := s.runner.Run(j.ctx, spec)
	if err != nil {
		s.finish(ctx, j, started, failed("the sandbox failed: see the server log"), &res, err)
		return
	}
	out := outcome{status: store.StatusFailed}
	switch {
	case j.canceled.Load():
		out = outcome{status: store.StatusCancelled, summary: "cancelled"}
	case j.ctx.Err() != nil:
		out = outcome{status: store.StatusCancelled, summary: "cancelled: the server shut down"}
	case res.TimedOut:
		out = outcome{status: store.StatusTimedOut, summary: runner.TimedOut(lim.WallTime)}
	case res.OOMKilled:
		out.summary = runner.MemoryExceeded(lim.MemoryBytes)
	case res.ResultJSON == nil:
		out.summary = fmt.Sprintf("The tool ended without a result (exit code %d); see stderr.", res.ExitCode)
	default:
		parsed, perr := contract.ParseResult(res.ResultJSON, s.cfg.Policy)
		if perr != nil {
			out.summary = perr.Error()
			break
		}
		out = outcome{status: parsed.Status, summary: parsed.ErrorSummary, outputs: parsed.Outputs, actions: parsed.NextActions, state: parsed.State}
		if parsed.Status == store.StatusSucceeded && j.req.AfterSuccess != nil {
			rev, err := j.req.AfterSuccess(ctx, r.ID, parsed)
			if err != nil {
				s.finish(ctx, j, started, failed("the tool succeeded but its session could not be saved; see the server log"), &res, err)
				return
			}
			out.stateRev = rev
		}
	}
	out.outputs = append(out.outputs, artNotices...)
	if res.LeftOut.Count > 0 {
		out.outputs = append(out.outputs, leftOutNotice(lim.OutputBytes, res.LeftOut))
	}
	out.artifacts = arts
	s.finish(ctx, j, started, out, &res, nil)
}

// outcome is how a run ended, before it is stored.
type outcome struct {
	status    string
	summary   string
	outputs   []contract.Output
	actions   []contract.NextAction
	state     json.RawMessage
	stateRev  *int64
	artifacts []Artifact
}

func failed(summary string) outcome { return outcome{status: store.StatusFailed, summary: summary} }

func (s *Service) finish(ctx context.Context, j *job, started time.Time, out outcome, res *runner.Result, cause error) {
	s.retire(j)
	r := j.run
	if cause != nil {
		s.log.Error("run failed in the server", "run", r.ID, "error", cause)
	}
	fin := s.now()
	r.Status, r.ErrorSummary, r.FinishedAt = out.status, out.summary, &fin
	r.Outputs = mustJSON(nonNil(out.outputs))
	r.NextActions = mustJSON(nonNil(out.actions))
	r.Artifacts = mustJSON(nonNil(out.artifacts))
	r.StateRev = out.stateRev
	if res != nil {
		r.Stdout, r.StdoutTruncated, r.Stderr, r.StderrTruncated = res.Stdout, res.StdoutTruncated, res.Stderr, res.StderrTruncated
	}
	ok, err := s.st.FinishRun(ctx, r, j.attempt)
	if err != nil {
		s.log.Error("recording a finished run", "run", r.ID, "error", err)
	}
	if !ok {
		return
	}
	s.metrics.Runs.WithLabelValues(r.Status).Inc()
	s.metrics.RunDuration.Observe(fin.Sub(started).Seconds())
	s.hub.publish(r.ID, Event{Type: "status", Data: r.Status})
}

// Cancel stops a queued or running run. It reports false when the run was already over.
func (s *Service) Cancel(ctx context.Context, runID string) (bool, error) {
	s.mu.Lock()
	j := s.active[runID]
	s.mu.Unlock()
	if j == nil {
		return false, nil
	}
	j.canceled.Store(true)
	j.cancel()
	// A run still queued never reaches the runner: end it here. A running one is ended by
	// its worker, which keeps what it printed and wrote so far.
	ok, err := s.st.CancelQueuedRun(ctx, runID, "cancelled", s.now())
	if err != nil {
		return false, err
	}
	if ok {
		s.metrics.Runs.WithLabelValues(store.StatusCancelled).Inc()
		s.hub.publish(runID, Event{Type: "status", Data: store.StatusCancelled})
	}
	return true, nil
}

// Subscribe returns the first lines a running run printed so far (as many as the
// backlog keeps) and a subscription to its events from then on; with lines false, only
// its status changes. Close the subscription when done.
func (s *Service) Subscribe(runID string, lines bool) ([]Event, *Subscription) {
	return s.hub.subscribe(runID, lines)
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
	for {
		select {
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
	s.mu.Lock()
	if s.stopping.Swap(true) {
		s.mu.Unlock()
		return
	}
	close(s.jobs)
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.workers.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(grace):
	}
	s.mu.Lock()
	for _, j := range s.active {
		j.cancel()
	}
	s.mu.Unlock()
	<-done
}

// listInputs lists the files of an input directory as the manifest the sandbox sees;
// withAction keeps action.json, which the audit manifest leaves out.
func listInputs(dir string, withAction bool) (contract.Manifest, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return contract.Manifest{}, err
	}
	m := contract.Manifest{Files: []contract.ManifestFile{}}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if !withAction && strings.EqualFold(e.Name(), "action.json") {
			continue
		}
		m.Files = append(m.Files, contract.ManifestFile{Name: e.Name(), Path: "/work/input/" + e.Name(), Bytes: info.Size()})
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Name < m.Files[j].Name })
	return m, nil
}

func contentType(name string) string {
	if t := mime.TypeByExtension(filepath.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
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
