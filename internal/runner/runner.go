// Package runner owns isolated execution of one tool run: the Runner interface that the
// bubblewrap and Docker runners implement, the limits a run gets, and what a run leaves
// behind (exit status, capped logs, result.json, the files of /work/output).
package runner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// ErrUnavailable means the runner cannot run anything on this machine (a missing program,
// an engine that does not answer); its message says what to install.
var ErrUnavailable = errors.New("runner unavailable")

// Limits bound one run. Zero means the runner's own default is not applied: callers
// always pass every limit (config holds the defaults).
type Limits struct {
	WallTime    time.Duration
	MemoryBytes int64
	Pids        int
	CPUs        float64
	TmpBytes    int64
	OutputBytes int64
	LogBytes    int64 // kept of stdout and of stderr each
}

// OutputInodes is how many files and directories a run's /work/output holds, on every
// runner: past it a tool's writes fail with ENOSPC. It bounds what the server walks and
// lists after the run (a run keeps at most 500 artifacts anyway), which a tool could
// otherwise make as large as the tmpfs's default inode count, millions of entries.
const OutputInodes = 16384

// Spec is one run to execute. The runner mounts Script read-only at /work/script.py,
// Memory read-only at /work/memory.json, InputDir read-only at /work/input, a writable
// size-capped /work/output, a writable /work/result.json, and the shim read-only at
// /skrip, then runs the shim with Env added to an otherwise cleared environment.
type Spec struct {
	ID       string // the run id: names scratch dirs, cgroups and containers
	ToolID   string
	Script   []byte
	InputDir string
	Env      map[string]string
	// Memory is /work/memory.json, mounted read-only: {"settings": {...}} with the
	// user's saved settings for the tool (docs/spec.md §5b). nil or empty gives "{}".
	Memory []byte
	Limits Limits
	// OnLine, when set, receives stdout and stderr lines as they come ("stdout" or
	// "stderr"); it must not block for long.
	OnLine func(stream string, line []byte)
	// Collect, when set, is called after the sandbox has exited (however it ended) with
	// a host directory holding what the run left in /work/output. The directory is only
	// valid during the call. Its regular files are the ones an OutputBudget of
	// Limits.OutputBytes keeps, by apparent size in path order; the others are left out
	// and listed in Result.LeftOut. Symlinks and special files are as the run left them:
	// the caller decides what is an artifact.
	Collect func(outputDir string) error
}

// ExecResult is how a sandboxed process ended: a run's, or one exec's in a persistent
// sandbox. A process that fails or times out is a result, not an error.
type ExecResult struct {
	ExitCode        int
	TimedOut        bool
	OOMKilled       bool
	Stdout          []byte
	Stderr          []byte
	StdoutTruncated bool
	StderrTruncated bool
	Duration        time.Duration
}

// Result is how a run ended: its process, the result.json it left, and the files of
// /work/output that did not fit in its cap.
type Result struct {
	ExecResult
	ResultJSON []byte // /work/result.json as the run left it; nil when empty
	LeftOut    LeftOut
}

// Enforced says how one limit is enforced on this machine, for `skrip doctor`.
type Enforced struct {
	Limit string // "wall time", "memory", "pids", "cpu", "/tmp", "/work/output", "stdout/stderr", "network"
	How   string // e.g. "cgroup v1 memory.limit_in_bytes", or "not enforced"
	OK    bool
}

// Runner executes runs in a sandbox. Every method is safe for concurrent use.
type Runner interface {
	// Name is "bwrap" or "docker".
	Name() string
	// Run executes spec and waits for it to end. A run that fails, times out or runs
	// out of memory is a Result, not an error; an error means the sandbox itself could
	// not be set up or torn down.
	Run(ctx context.Context, spec Spec) (Result, error)
	// Enforcement lists every limit and how this runner enforces l here.
	Enforcement(l Limits) []Enforced
	// Ping reports whether the runner can start a sandbox now (/readyz asks): the
	// answer is at most ReadyEvery old, so asking often costs nothing.
	Ping(ctx context.Context) error
	// Close releases what the runner holds; persistent sandboxes outlive it.
	Close() error
}

// Engine is a sandbox engine that does both jobs, as bwrap and docker do: it runs tools
// (Runner) and keeps agents' persistent sandboxes (Sandboxes, docs/spec.md §9). Only
// what needs both asks for an Engine (the server's start, a worker); the run service
// asks for a Runner, the sandbox service for Sandboxes.
type Engine interface {
	Runner
	Sandboxes
}

// MemoryJSON is what a run's /work/memory.json holds: memory, or "{}" when it is empty.
func MemoryJSON(memory []byte) []byte {
	if len(memory) == 0 {
		return []byte("{}")
	}
	return memory
}

// MemoryExceeded is the error summary of a run stopped by its memory limit.
func MemoryExceeded(limit int64) string {
	return fmt.Sprintf("memory limit exceeded (%s)", HumanBytes(limit))
}

// TimedOut is the error summary of a run stopped by its wall-time limit.
func TimedOut(d time.Duration) string {
	return fmt.Sprintf("Execution timed out after %s", d)
}

// HumanBytes formats a limit in binary units: "1 GiB", "256 MiB", "1.5 GiB".
func HumanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// Env is the environment every sandboxed process starts from (PATH, LANG, HOME and
// Python's settings), with extra added over it.
func Env(home string, extra map[string]string) map[string]string {
	env := map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home,
		"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// RunEnv is the environment of a tool's run: Env with home as HOME, bin (where the runner
// put the shim's commands, such as the pandoc wrapper) first on PATH, and XDG_CACHE_HOME
// a directory under home the runner makes, where tools' libraries keep their caches
// (docs/runner-contract.md). extra is added over it.
func RunEnv(home, bin string, extra map[string]string) map[string]string {
	env := Env(home, nil)
	env["PATH"] = bin + ":" + env["PATH"]
	env["XDG_CACHE_HOME"] = CacheDir(home)
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// CacheDir is a run's XDG_CACHE_HOME under its home, which the runner makes.
func CacheDir(home string) string { return home + "/.cache" }

// SortedKeys returns the keys of env in order, so command lines are stable.
func SortedKeys(env map[string]string) []string {
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
