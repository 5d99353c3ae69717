package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
)

// Errors of persistent sandboxes, wrapped with %w (and usually an errs.Error message).
var (
	// ErrPath means a workspace path is empty, absolute, holds NUL or "..", or resolves
	// (through a symlink) outside /workspace, or names a directory where a file is needed.
	ErrPath = errors.New("invalid workspace path")
	// ErrNoFile means no regular file is at a workspace path.
	ErrNoFile = errors.New("no such file in the workspace")
	// ErrNoSpace means the workspace's quota is full.
	ErrNoSpace = errors.New("workspace quota exceeded")
	// ErrNoBox means the runner holds no sandbox of that id (it was removed, or lost
	// when the machine restarted).
	ErrNoBox = errors.New("sandbox not held by the runner")
	// ErrNoSandboxes means this runner cannot keep persistent sandboxes on this machine
	// with every limit enforced; the message says what to change.
	ErrNoSandboxes = errors.New("agent sandboxes unavailable")
)

// Refuse is a workspace refusal of kind (ErrPath, ErrNoFile, ErrNoSpace) that a client
// may be shown: "<kind>: <format and args>". It names paths inside the workspace only,
// never the host's.
func Refuse(kind error, format string, args ...any) error {
	return errs.New(kind, nil, "%v: %s", kind, fmt.Sprintf(format, args...))
}

// Workspace is where a sandbox's files live, as its processes see it.
const Workspace = "/workspace"

// A workspace is a tmpfs, so its files are memory. Its size caps their bytes; what the
// kernel keeps for each file and directory (inode, name, extended attributes: about
// 1-1.5 KiB, measured) is outside that size, so a workspace also caps how many it holds:
// one per 16 KiB of its quota, at least 1024. Without that cap a sandbox could pin
// gigabytes in empty files.
const (
	workspaceBytesPerInode = 16 << 10
	workspaceMinInodes     = 1024
	inodeMemory            = 2 << 10 // kept per file or directory, at most, with room to spare
	pageSize               = 4096
)

// WorkspaceSize is the size of the tmpfs of a workspace of quota bytes: at least a page,
// in whole pages (as the kernel rounds it).
func WorkspaceSize(quota int64) int64 {
	return (max(quota, pageSize) + pageSize - 1) / pageSize * pageSize
}

// WorkspaceInodes is how many files and directories a workspace of quota bytes holds.
func WorkspaceInodes(quota int64) int64 {
	return max(quota/workspaceBytesPerInode, workspaceMinInodes)
}

// WorkspaceMemory is the most memory a workspace of quota bytes takes, files and their
// metadata.
func WorkspaceMemory(quota int64) int64 {
	return WorkspaceSize(quota) + WorkspaceInodes(quota)*inodeMemory
}

// BoxSpec is one persistent sandbox to create: a /workspace of WorkspaceBytes, with the
// memory, pids, CPU, /tmp and log limits of Limits (WallTime and OutputBytes are per exec
// and unused here).
type BoxSpec struct {
	ID             string
	OwnerID        string
	Limits         Limits
	WorkspaceBytes int64
}

// ExecSpec is one command to run in a sandbox.
type ExecSpec struct {
	Cmd     []string
	Stdin   []byte
	Timeout time.Duration
	// LogBytes of stdout and of stderr are kept.
	LogBytes int64
	// OnLine, when set, receives output lines as they come, like Spec.OnLine; stdout's
	// and stderr's lines may arrive from two goroutines at once.
	OnLine func(stream string, line []byte)
}

// ExecArgv is the argv that runs cmd in a sandbox exec, on every runner: a shell looks
// cmd[0] up as execvp(3) would and execs it in its own place, so the command is the same
// process it would have been. What the runners would say when it cannot (bwrap's
// "execvp", timeout(1)'s "failed to run command") is never reached: a command that is
// not there ends as a shell ends it, "<cmd>: command not found" on stderr and exit 127,
// and one that is there but cannot be run with "<cmd>: Permission denied" (or "Is a
// directory") and 126.
func ExecArgv(cmd []string) []string {
	return append([]string{"/bin/sh", "-c", execScript, "sh"}, cmd...)
}

// execScript is ExecArgv's shell: it tries what execvp would try, in that order, and
// execs the first it may run (exec does its own PATH search, which finds the same).
const execScript = `c=$1 why=
case $c in
'') ;;
*/*)
  if [ -d "$c" ]; then why='Is a directory'
  elif [ -f "$c" ] && [ -x "$c" ]; then exec "$@"
  elif [ -e "$c" ]; then why='Permission denied'
  fi ;;
*)
  set -f; IFS=:
  for d in $PATH; do
    p=${d:-.}/$c
    if [ -f "$p" ] && [ -x "$p" ]; then exec "$@"; fi
    [ -e "$p" ] && [ ! -d "$p" ] && why='Permission denied'
  done ;;
esac
if [ -n "$why" ]; then printf '%s: %s\n' "$c" "$why" >&2; exit 126; fi
printf '%s: command not found\n' "$c" >&2
exit 127`

// Sandboxes keeps persistent sandboxes for agents: a /workspace that outlives each
// command, a fresh process tree per exec under the box's limits, and file reads and
// writes confined to the workspace. Every method is safe for concurrent use; callers
// run one operation per box at a time.
type Sandboxes interface {
	// CreateBox makes the sandbox spec.ID with an empty workspace.
	CreateBox(ctx context.Context, spec BoxSpec) error
	// Exec runs one command in box id and waits for it; at its end (or timeout) nothing
	// it started is left running.
	Exec(ctx context.Context, id string, spec ExecSpec) (ExecResult, error)
	// WriteFile streams r into the workspace path p (see CleanPath), creating parent
	// directories. The file appears whole or not at all: a failed write (a reader error,
	// a full quota: ErrNoSpace) leaves what was at p as it was.
	WriteFile(ctx context.Context, id, p string, r io.Reader) (int64, error)
	// ReadFile opens the regular file at the workspace path p and returns it with its
	// size. Reading past what the file held when opened, or a read that ends short, is an
	// error, never a silent truncation.
	ReadFile(ctx context.Context, id, p string) (io.ReadCloser, int64, error)
	// RemoveBox destroys box id and its workspace; removing a missing box is no error.
	RemoveBox(ctx context.Context, id string) error
	// Boxes lists the ids of the boxes this server holds (after a restart: the ones that
	// survived it).
	Boxes(ctx context.Context) ([]string, error)
	// BoxEnforcement says how each limit of a box is enforced here, for `skrip doctor`.
	BoxEnforcement(l Limits, workspaceBytes int64) []Enforced
	// Memory is the memory of the machine the boxes' workspaces (tmpfs mounts) live in.
	Memory(ctx context.Context) (Memory, error)
}

// CleanPath checks a workspace path as a caller gave it and returns it clean and
// relative to /workspace. It refuses an empty or absolute path, a NUL byte or other
// control character, and any ".." segment, with an errs.Error of kind ErrPath whose
// message a caller can be shown; symlinks are the runner's to resolve.
func CleanPath(p string) (string, error) {
	refuse := func(format string, args ...any) (string, error) {
		return "", errs.New(ErrPath, map[string]any{"path": p}, format, args...)
	}
	switch {
	case p == "":
		return refuse("the path is empty; give a path relative to %s, such as input/data.csv", Workspace)
	case strings.ContainsRune(p, 0):
		return refuse("the path %q holds a NUL byte", p)
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return refuse("the path %q holds a control character; rename the file", p)
	case strings.HasPrefix(p, "/"):
		return refuse("the path %q is absolute; give it relative to %s, such as input/data.csv", p, Workspace)
	case len(p) > 4096:
		return refuse("the path is longer than 4096 bytes")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return refuse("the path %q has a .. segment; paths stay inside %s", p, Workspace)
		}
	}
	c := path.Clean(p)
	if c == "." {
		return refuse("the path %q names %s itself, not a file in it", p, Workspace)
	}
	return c, nil
}

// Exactly wraps rc, which should yield size bytes, so that a read ending short is an
// error (io.ErrUnexpectedEOF) and bytes past size are never passed on: what a caller
// streams out of a workspace is the file it opened, whole, or an error.
func Exactly(rc io.ReadCloser, size int64, name string) io.ReadCloser {
	return &exactly{rc: rc, left: size, name: name}
}

type exactly struct {
	rc   io.ReadCloser
	left int64
	name string
}

func (e *exactly) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.rc.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) && e.left > 0 {
		return n, fmt.Errorf("%s ended %d bytes short while it was read: %w", e.name, e.left, io.ErrUnexpectedEOF)
	}
	if err == nil && e.left == 0 {
		err = io.EOF
	}
	return n, err
}

func (e *exactly) Close() error { return e.rc.Close() }

// ContextReader reads from r until ctx ends, then fails with ctx's error: a stream into a
// workspace stops when its request does.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx: ctx, r: r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
