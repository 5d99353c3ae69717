package sandbox

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// The operations inside a sandbox: exec, and reading and writing its workspace's files.

// ExecRequest is one command to run.
type ExecRequest struct {
	Cmd     []string
	Timeout time.Duration // 0: DefaultExecTimeout
	Stdin   []byte        // nil: none
	// OnLine, when set, receives output lines as they come.
	OnLine func(stream string, line []byte)
}

// maxCmdBytes caps the command line of one exec.
const maxCmdBytes = 128 << 10

// Exec runs req in the caller's sandbox id and returns how it ended.
func (s *Service) Exec(ctx context.Context, caller store.User, id string, req ExecRequest) (runner.ExecResult, error) {
	if len(req.Cmd) == 0 || req.Cmd[0] == "" {
		return runner.ExecResult{}, errs.New(ErrInvalid, map[string]any{"field": "cmd"}, `cmd must be a non-empty array of strings, such as ["python3", "transform.py"]`)
	}
	total := 0
	for i, a := range req.Cmd {
		if strings.ContainsRune(a, 0) {
			return runner.ExecResult{}, errs.New(ErrInvalid, map[string]any{"field": "cmd", "index": i}, "cmd[%d] holds a NUL byte", i)
		}
		total += len(a) + 1
	}
	if total > maxCmdBytes {
		return runner.ExecResult{}, errs.New(ErrInvalid, map[string]any{"field": "cmd", "max_bytes": maxCmdBytes},
			"cmd is %d bytes long; the most is %d: put long input in a file or in stdin", total, maxCmdBytes)
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = min(DefaultExecTimeout, s.cfg.ExecTimeout)
	}
	if timeout < 0 || timeout > s.cfg.ExecTimeout {
		return runner.ExecResult{}, errs.New(ErrInvalid, map[string]any{"field": "timeout_s", "max": s.cfg.ExecTimeout.Seconds()},
			"timeout_s %g is not allowed: it must be above 0 and at most %g", timeout.Seconds(), s.cfg.ExecTimeout.Seconds())
	}
	var res runner.ExecResult
	err := s.do(ctx, caller, id, func(ctx context.Context, b store.Sandbox) error {
		var err error
		res, err = s.boxesOf(b).Exec(ctx, id, runner.ExecSpec{Cmd: req.Cmd, Stdin: req.Stdin, Timeout: timeout, LogBytes: LimitsOf(b).LogBytes, OnLine: req.OnLine})
		return err
	})
	return res, err
}

// ReadFile opens the file at path p of the caller's sandbox id. The sandbox stays busy
// (no exec runs in it) until the reader is closed.
func (s *Service) ReadFile(ctx context.Context, caller store.User, id, p string) (io.ReadCloser, int64, error) {
	clean, err := runner.CleanPath(p)
	if err != nil {
		return nil, 0, err
	}
	var rc io.ReadCloser
	var size int64
	release, err := s.use(ctx, caller, id, func(ctx context.Context, b store.Sandbox) error {
		var err error
		if rc, size, err = s.boxesOf(b).ReadFile(ctx, id, clean); err != nil {
			return err
		}
		// A reader left hanging (a stalled client) must not hold the sandbox once the
		// request ends or the sandbox is destroyed.
		context.AfterFunc(ctx, func() { rc.Close() })
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return &releasing{ReadCloser: rc, release: release}, size, nil
}

// releasing releases its sandbox once, when it is closed.
type releasing struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (r *releasing) Close() error {
	err := r.ReadCloser.Close()
	r.once.Do(r.release)
	return err
}
