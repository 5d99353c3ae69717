package run

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/runner"
)

// SyntaxWall is the wall time of a syntax check: compiling even the largest source takes
// well under a second, so a check that runs longer is stuck.
const SyntaxWall = 10 * time.Second

// SyntaxError is where Python's compiler stopped in a source: Line and Column count from
// 1 (0: not known).
type SyntaxError struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// syntaxChecker is the tool the check runs in the sandbox: it compiles input/source.py,
// never runs it, and returns where compiling stopped as its state.
const syntaxChecker = `import os


def run_tool(input_dir, output_dir):
    with open(os.path.join(input_dir, "source.py"), "rb") as f:
        source = f.read()
    try:
        compile(source, "script.py", "exec", dont_inherit=True)
    except SyntaxError as e:
        return {"state": {"error": {"line": e.lineno or 0, "column": e.offset or 0, "message": e.msg or "invalid syntax"}}}
    except (ValueError, RecursionError, MemoryError) as e:
        return {"state": {"error": {"line": 0, "column": 0, "message": "%s: %s" % (type(e).__name__, e)}}}
    return {"state": {"error": None}}
`

// CheckSyntax compiles src with the sandbox's Python, in a sandbox like any run (the
// compiler parses what an author sent, so it runs under the same limits), with
// SyntaxWall as its wall time. It returns nil when src compiles, where it does not
// otherwise, and an error when the check could not run: the queue is full (ErrBusy), or
// the sandbox failed. A check takes one of the run slots while it runs, so checks never
// run beside more runs than the server admits.
func (s *Service) CheckSyntax(ctx context.Context, src string) (*SyntaxError, error) {
	select {
	case s.syntax <- struct{}{}:
	default:
		return nil, errs.New(ErrBusy, map[string]any{"queue": s.cfg.Queue}, "every worker is busy; the syntax check did not run")
	}
	defer func() { <-s.syntax }()
	lim := s.cfg.Limits
	lim.WallTime = min(lim.WallTime, SyntaxWall)
	var state struct {
		Error *SyntaxError `json:"error"`
	}
	if err := s.runChecker(ctx, "syntax check", "syntax-check", syntaxChecker, src, lim, &state); err != nil {
		return nil, err
	}
	if e := state.Error; e != nil {
		e.Message = strings.TrimSpace(e.Message)
		return e, nil
	}
	return nil, nil
}

// runChecker runs script, a checker of an author's source (the syntax check, the lint),
// in a sandbox under lim with src as /work/input/source.py, in a slot the caller holds,
// and reads the state of its result into state. what names the check in errors.
func (s *Service) runChecker(ctx context.Context, what, toolID, script, src string, lim runner.Limits, state any) error {
	dir, err := s.NewInputDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "source.py"), []byte(src), 0o644); err != nil {
		return err
	}
	res, err := s.runner.Run(ctx, runner.Spec{ID: ids.New("chk"), ToolID: toolID, Script: []byte(script), InputDir: dir, Limits: lim})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	out := struct {
		Status string `json:"status"`
		State  any    `json:"state"`
	}{State: state}
	if res.TimedOut || res.ResultJSON == nil || json.Unmarshal(res.ResultJSON, &out) != nil || out.Status != "succeeded" {
		return fmt.Errorf("%s ended without an answer (exit code %d, timed out %v): %s", what, res.ExitCode, res.TimedOut,
			strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}
