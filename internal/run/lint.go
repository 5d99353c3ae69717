package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
)

// Lint limits: a lint runs on every pause in the author's typing, so it is held to less
// time than a syntax check. pyflakes reads even the largest source a version may hold
// (catalog.MaxSourceBytes) in well under LintWall. Its memory is a run's (up to
// LintMemory): a lint may be served by an interpreter parked ahead of runs, which holds
// what it imported already, and a lower limit killed such lints in CI (exit 137).
const (
	LintWall       = 10 * time.Second
	LintMemory     = 1 << 30
	MaxLintSource  = 512 << 10 // bytes of source; the same bound as a version's source
	MaxDiagnostics = 200       // a source with more gets the first ones
)

// ErrLintUnavailable means the runtime has no linter: the runner's root filesystem
// predates pyflakes (rebuild it: skrip runner-image build), or the bwrap runner uses the
// host's /usr, which has no python3-pyflakes.
var ErrLintUnavailable = errors.New("no linter in the runtime")

// ErrLintTooLarge means a source to lint is over MaxLintSource.
var ErrLintTooLarge = errors.New("source to lint too large")

// Diagnostic is one finding of the linter: Line and Column count from 1 (Column 0: not
// known), Severity is "error" (the code fails when it gets there: an undefined name, a
// syntax error) or "warning" (an unused import or variable, a redefinition).
type Diagnostic struct {
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
}

// linter is the tool the lint runs in the sandbox: pyflakes over input/source.py, never
// running it. Its state is {"diagnostics": [...]} or {"unavailable": "why"}.
const linter = `import os

WARNINGS = {"UnusedImport", "UnusedVariable", "UnusedAnnotation", "RedefinedWhileUnused",
            "ImportShadowedByLoopVar", "ImportStarUsed", "ImportStarUsage", "UnusedIndirectAssignment"}
LIMIT = %d


class Collect:
    def __init__(self):
        self.found = []

    def add(self, line, column, message, severity):
        if len(self.found) < LIMIT:
            self.found.append({"line": int(line or 0), "column": int(column or 0),
                               "message": str(message), "severity": severity})

    def unexpectedError(self, filename, msg):
        self.add(0, 0, msg, "error")

    def syntaxError(self, filename, msg, lineno, offset, text):
        self.add(lineno, offset, msg, "error")

    def flake(self, m):
        kind = type(m).__name__
        self.add(m.lineno, (m.col or 0) + 1, m.message %% m.message_args,
                 "warning" if kind in WARNINGS else "error")


def run_tool(input_dir, output_dir):
    try:
        from pyflakes import api
    except ImportError as e:
        return {"state": {"unavailable": str(e)}}
    with open(os.path.join(input_dir, "source.py"), "rb") as f:
        source = f.read().decode("utf-8", "replace")
    out = Collect()
    try:
        api.check(source, "script.py", out)
    except (ValueError, RecursionError, MemoryError) as e:
        out.add(0, 0, "%%s: %%s" %% (type(e).__name__, e), "error")
    out.found.sort(key=lambda d: (d["line"], d["column"]))
    return {"state": {"diagnostics": out.found}}
`

// ErrUserLints means the user has as many lints running on this server as one may
// (LintsPerUser): 429 with Retry-After, for that user alone.
var ErrUserLints = errors.New("too many lints of one user")

// LintsPerUser is how many lints one user may have running at once on one server, unless
// SKRIP_LINTS_PER_USER (Config.LintsPerUser) says otherwise. The
// editor sends one at a time and aborts it when the text changes, so one may still be
// ending while the next arrives; a third is another tab or a script, and without a
// bound one author could take every lint slot (half the workers) from the others.
const LintsPerUser = 2

// lintRetry is how long a user at LintsPerUser is asked to wait: a lint's wall time
// is a few seconds at most.
const lintRetry = 2 * time.Second

// lintUsers counts each user's lints running on this server.
type lintUsers struct {
	mu sync.Mutex
	m  map[string]int
}

// take counts one more lint of user id, unless id has limit already; it reports whether
// it did.
func (l *lintUsers) take(id string, limit int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m[id] >= limit {
		return false
	}
	if l.m == nil {
		l.m = map[string]int{}
	}
	l.m[id]++
	return true
}

// give counts one lint of user id less.
func (l *lintUsers) give(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m[id]--; l.m[id] <= 0 {
		delete(l.m, id)
	}
}

// admitLint takes a lint's turn for user id: one of its LintsPerUser, then one of the
// server's lint slots, then a run slot, answering at once when one is not free
// (ErrUserLints for the first, ErrBusy for the others). The release gives them back.
func (s *Service) admitLint(userID string) (func(), error) {
	limit := s.cfg.LintsPerUser
	if !s.lintUsers.take(userID, limit) {
		return nil, errs.New(ErrUserLints, map[string]any{"limit": limit},
			"you have %d lints running, as many as one user may at once; the lint did not run", limit).Retry(lintRetry)
	}
	select {
	case s.lint <- struct{}{}:
	default:
		s.lintUsers.give(userID)
		return nil, errs.New(ErrBusy, map[string]any{"queue": s.cfg.Queue}, "as many lints run as the server allows; the lint did not run")
	}
	select {
	case s.syntax <- struct{}{}:
	default:
		<-s.lint
		s.lintUsers.give(userID)
		return nil, errs.New(ErrBusy, map[string]any{"queue": s.cfg.Queue}, "every worker is busy; the lint did not run")
	}
	return func() {
		<-s.syntax
		<-s.lint
		s.lintUsers.give(userID)
	}, nil
}

// Lint runs pyflakes over src for user userID in a sandbox (like a syntax check: it
// parses what an author sent, so it runs under a run's limits, held lower: LintWall,
// LintMemory) and returns what it found, sorted by line; none is an empty list. Lints
// take the run slots syntax checks take, at most half of the workers (lintSlots), so
// authors typing never hold every worker, and at most LintsPerUser of one user's, so
// one author never holds every lint slot: a lint that finds no turn answers at once
// (admitLint). ErrLintUnavailable: the runtime has no pyflakes.
func (s *Service) Lint(ctx context.Context, userID, src string) ([]Diagnostic, error) {
	if len(src) > MaxLintSource {
		return nil, errs.New(ErrLintTooLarge, map[string]any{"field": "source", "limit_bytes": MaxLintSource},
			"source is %d bytes; the limit is %d", len(src), MaxLintSource)
	}
	release, err := s.admitLint(userID)
	if err != nil {
		return nil, err
	}
	defer release()
	lim := s.cfg.Limits
	lim.WallTime = min(lim.WallTime, LintWall)
	if lim.MemoryBytes <= 0 || lim.MemoryBytes > LintMemory {
		lim.MemoryBytes = LintMemory
	}
	var state struct {
		Diagnostics []Diagnostic `json:"diagnostics"`
		Unavailable *string      `json:"unavailable"`
	}
	if err := s.runChecker(ctx, "lint", "lint", fmt.Sprintf(linter, MaxDiagnostics), src, lim, &state); err != nil {
		return nil, err
	}
	if why := state.Unavailable; why != nil {
		return nil, errs.New(ErrLintUnavailable, nil, "the runtime has no Python linter (%s); an operator rebuilds the runner image with `skrip runner-image build`", *why)
	}
	d := state.Diagnostics
	if d == nil {
		d = []Diagnostic{}
	}
	if len(d) > MaxDiagnostics {
		d = d[:MaxDiagnostics]
	}
	for i := range d {
		d[i].Message = strings.TrimSpace(d[i].Message)
		if d[i].Severity != "warning" {
			d[i].Severity = "error"
		}
	}
	return d, nil
}
