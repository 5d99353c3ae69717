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
	dir, err := s.NewInputDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "source.py"), []byte(src), 0o644); err != nil {
		return nil, err
	}
	lim := s.cfg.Limits
	lim.WallTime = min(lim.WallTime, SyntaxWall)
	res, err := s.runner.Run(ctx, runner.Spec{ID: ids.New("chk"), ToolID: "syntax-check", Script: []byte(syntaxChecker), InputDir: dir, Limits: lim})
	if err != nil {
		return nil, fmt.Errorf("syntax check: %w", err)
	}
	var out struct {
		Status string `json:"status"`
		State  struct {
			Error *SyntaxError `json:"error"`
		} `json:"state"`
	}
	if res.TimedOut || res.ResultJSON == nil || json.Unmarshal(res.ResultJSON, &out) != nil || out.Status != "succeeded" {
		return nil, fmt.Errorf("syntax check ended without an answer (exit code %d, timed out %v): %s", res.ExitCode, res.TimedOut,
			strings.TrimSpace(string(res.Stderr)))
	}
	if e := out.State.Error; e != nil {
		e.Message = strings.TrimSpace(e.Message)
		return e, nil
	}
	return nil, nil
}
