// Package bwrap runs tool runs under bubblewrap on the host: new user, pid, net, ipc, uts
// and cgroup namespaces, a non-root uid, a cleared environment, a read-only root, tmpfs
// /tmp, and limits from cgroup v2, cgroup v1 or rlimits, whichever the machine offers.
package bwrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/shim"
)

// Config chooses the programs and directories of the runner.
type Config struct {
	// WorkDir holds per-run scratch directories (<data>/work/bwrap); it is emptied on
	// start, since nothing in it outlives a run.
	WorkDir string
	// Rootfs is a directory mounted read-only as the sandbox's root (a debootstrap tree);
	// empty uses the host's /usr.
	Rootfs string
}

// Runner is the bubblewrap runner.
type Runner struct {
	cfg      Config
	bwrap    string
	python   string
	shimDir  string
	limiter  limiter
	tmpfsOut bool // /work/output is a size-capped tmpfs mounted by the server
	version  string
	log      *slog.Logger
	pending  sync.WaitGroup // cgroups being removed
}

// maxResultBytes caps how much of result.json is read.
const maxResultBytes = 8 << 20

// Inspect checks that bubblewrap can make a sandbox here, without touching the work
// directory or any run: `skrip doctor` uses it beside a running server. An
// ErrUnavailable error says what to install or change.
func Inspect(cfg Config, log *slog.Logger) (*Runner, error) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap is not installed; install it with `apt-get install bubblewrap`", runner.ErrUnavailable)
	}
	if cfg.WorkDir, err = filepath.Abs(cfg.WorkDir); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(cfg.WorkDir))
	r := &Runner{cfg: cfg, bwrap: bw, log: log, limiter: pickLimiter(hex.EncodeToString(sum[:6])), python: "/usr/bin/python3"}
	root := cfg.Rootfs
	if root == "" {
		root = "/"
	}
	if _, err := os.Stat(filepath.Join(root, "usr/bin/python3")); err != nil {
		return nil, fmt.Errorf("%w: no python3 in %s; install it with `apt-get install python3`", runner.ErrUnavailable, filepath.Join(root, "usr/bin"))
	}
	if out, err := exec.Command(bw, r.baseArgs(nil)...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: bubblewrap cannot create a sandbox here (%s): %v; user namespaces must be enabled (sysctl kernel.unprivileged_userns_clone=1)",
			runner.ErrUnavailable, strings.TrimSpace(string(out)), err)
	}
	r.tmpfsOut = probeTmpfs()
	r.version, _ = bwrapVersion(bw)
	return r, nil
}

// New inspects the machine like Inspect, then removes what a crashed server left (scratch
// directories, output mounts, cgroups) and writes the shim.
func New(cfg Config, log *slog.Logger) (*Runner, error) {
	r, err := Inspect(cfg, log)
	if err != nil {
		return nil, err
	}
	r.limiter.sweep()
	if err := r.cleanWorkDir(); err != nil {
		return nil, err
	}
	r.shimDir = filepath.Join(r.cfg.WorkDir, "shim")
	if err := shim.WriteTo(r.shimDir); err != nil {
		return nil, fmt.Errorf("writing the runner shim: %w", err)
	}
	return r, nil
}

func bwrapVersion(bw string) (string, error) {
	out, err := exec.Command(bw, "--version").Output()
	return strings.TrimSpace(string(out)), err
}

// Version is bubblewrap's own version line.
func (r *Runner) Version() string { return r.version }

// Name implements runner.Runner.
func (r *Runner) Name() string { return "bwrap" }

// Close implements runner.Runner: it removes this server's cgroups.
func (r *Runner) Close() error {
	r.pending.Wait()
	r.limiter.close()
	return nil
}

// Enforcement implements runner.Runner.
func (r *Runner) Enforcement(l runner.Limits) []runner.Enforced {
	out := []runner.Enforced{{Limit: "wall time", How: fmt.Sprintf("%s, then SIGKILL of the whole sandbox", l.WallTime), OK: true}}
	out = append(out, r.limiter.enforced(l)...)
	out = append(out, runner.Enforced{Limit: "/tmp", How: runner.HumanBytes(l.TmpBytes) + " tmpfs (bwrap --size)", OK: true})
	if r.tmpfsOut {
		out = append(out, runner.Enforced{Limit: "/work/output", How: runner.HumanBytes(l.OutputBytes) + " tmpfs mounted by the server (it runs as root)", OK: true})
	} else {
		out = append(out, runner.Enforced{Limit: "/work/output", How: runner.HumanBytes(l.OutputBytes) + " per file only (RLIMIT_FSIZE): the server is not root, so the total is not capped"})
	}
	return append(out,
		runner.Enforced{Limit: "stdout/stderr", How: fmt.Sprintf("first %d bytes of each kept, the rest counted and dropped", l.LogBytes), OK: true},
		runner.Enforced{Limit: "network", How: "own network namespace with only loopback", OK: true})
}

// Limiter names the mechanism limiting memory, pids and CPU ("cgroup v1", …).
func (r *Runner) Limiter() string { return r.limiter.name() }

// baseArgs is the sandbox every run shares; spec-specific mounts follow it. With a nil
// spec it is a probe that runs `true`.
func (r *Runner) baseArgs(extra []string) []string {
	args := []string{"--unshare-all", "--die-with-parent", "--new-session", "--uid", "65534", "--gid", "65534",
		"--hostname", "skrip", "--clearenv"}
	if r.cfg.Rootfs != "" {
		args = append(args, "--ro-bind", r.cfg.Rootfs, "/",
			// The rootfs's root-only files would be the sandbox user's here (the server's
			// uid maps to it): hide its secrets and root's home.
			"--ro-bind", "/dev/null", "/etc/shadow",
			"--tmpfs", "/root", "--remount-ro", "/root")
	} else {
		args = append(args, "--ro-bind", "/usr", "/usr")
		for _, l := range []string{"bin", "sbin", "lib", "lib64", "lib32", "libx32"} {
			if _, err := os.Lstat(filepath.Join("/usr", l)); err == nil {
				args = append(args, "--symlink", "usr/"+l, "/"+l)
			}
		}
		for _, etc := range []string{"/etc/fonts", "/etc/alternatives", "/etc/mime.types", "/etc/ld.so.cache", "/etc/localtime"} {
			args = append(args, "--ro-bind-try", etc, etc)
		}
	}
	args = append(args, "--proc", "/proc",
		// When the server is root, the sandbox user is host root to the kernel's uid
		// checks: /proc/sys (core_pattern, …) and sysrq must not be writable.
		"--ro-bind", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--dev", "/dev")
	if extra == nil {
		return append(args, "--", "/usr/bin/true")
	}
	return append(args, extra...)
}

// Run implements runner.Runner.
func (r *Runner) Run(ctx context.Context, spec runner.Spec) (runner.Result, error) {
	scratch := filepath.Join(r.cfg.WorkDir, "runs", spec.ID)
	if err := os.MkdirAll(filepath.Join(scratch, "output"), 0o755); err != nil {
		return runner.Result{}, err
	}
	mounted := false
	defer func() {
		if mounted {
			syscall.Unmount(filepath.Join(scratch, "output"), syscall.MNT_DETACH)
		}
		os.RemoveAll(scratch)
	}()
	l := spec.Limits
	if r.tmpfsOut {
		opts := "size=" + strconv.FormatInt(max(l.OutputBytes, 4096), 10) + ",mode=0755"
		if err := syscall.Mount("tmpfs", filepath.Join(scratch, "output"), "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			return runner.Result{}, fmt.Errorf("mounting the output tmpfs: %w", err)
		}
		mounted = true
	}
	if err := os.WriteFile(filepath.Join(scratch, "script.py"), spec.Script, 0o444); err != nil {
		return runner.Result{}, err
	}
	resultPath := filepath.Join(scratch, "result.json")
	if err := os.WriteFile(resultPath, nil, 0o644); err != nil {
		return runner.Result{}, err
	}

	argv := r.CommandLine(spec, scratch)
	// Every file the run writes is capped at the output limit: /work/result.json lives on
	// the data disk, and without the server's tmpfs so does /work/output.
	ex, err := r.execute(ctx, process{name: spec.ID, argv: argv, limits: l, fsize: max(l.OutputBytes, maxResultBytes), onLine: spec.OnLine})
	res := runner.Result{ExecResult: ex}
	if err != nil {
		return res, err
	}
	if f, err := os.Open(resultPath); err == nil {
		b, _ := io.ReadAll(io.LimitReader(f, maxResultBytes+1))
		f.Close()
		if len(b) > 0 {
			res.ResultJSON = b
		}
	}
	if spec.Collect != nil {
		if err := spec.Collect(filepath.Join(scratch, "output")); err != nil {
			return res, fmt.Errorf("collecting /work/output: %w", err)
		}
	}
	return res, nil
}

// process is one sandboxed command line to execute under limits.
type process struct {
	name   string // names the cgroup
	argv   []string
	limits runner.Limits
	fsize  int64 // bytes any one file may reach (RLIMIT_FSIZE); 0: no limit
	stdin  io.Reader
	onLine func(stream string, line []byte)
}

// execute runs p's bwrap command line in a cgroup of its own, kills the whole sandbox at
// the wall time or when ctx ends, and returns how it ended with its capped output.
func (r *Runner) execute(ctx context.Context, p process) (runner.ExecResult, error) {
	l := p.limits
	g, err := r.limiter.start(p.name, l)
	if err != nil {
		return runner.ExecResult{}, err
	}
	// The kernel frees a cgroup only after the sandbox's pid namespace is torn down, some
	// milliseconds after the run ended: remove it in the background (Close waits).
	r.pending.Add(1)
	defer func() {
		go func() {
			defer r.pending.Done()
			if err := g.destroy(); err != nil {
				r.log.Warn("removing a sandbox's cgroup", "name", p.name, "error", err)
			}
		}()
	}()
	// bwrap says on fd 3 when the sandboxed process has started: an exit code of 125
	// before that is a sandbox that could not be set up, after it the tool's own.
	argv := append([]string{p.argv[0], "--json-status-fd", "3"}, p.argv[1:]...)
	if p.fsize > 0 {
		argv = append([]string{"/bin/sh", "-c", fmt.Sprintf("ulimit -f %d || exit 125; exec \"$@\"", (p.fsize+511)/512), "sh"}, argv...)
	}
	argv = g.wrap(argv)

	stdout := &runner.Capture{Max: l.LogBytes, Stream: "stdout", OnLine: p.onLine}
	stderr := &runner.Capture{Max: l.LogBytes, Stream: "stderr", OnLine: p.onLine}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Stdin = p.stdin
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 2 * time.Second

	statusR, statusW, err := os.Pipe()
	if err != nil {
		return runner.ExecResult{}, err
	}
	cmd.ExtraFiles = []*os.File{statusW}
	started := make(chan bool, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(statusR, 1<<16))
		statusR.Close()
		started <- strings.Contains(string(b), `"child-pid"`)
	}()
	start := time.Now()
	err = cmd.Start()
	statusW.Close()
	if err != nil {
		return runner.ExecResult{}, fmt.Errorf("starting bwrap: %w", err)
	}
	var timedOut atomic.Bool
	var once sync.Once
	kill := func() { once.Do(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) }
	timer := time.AfterFunc(l.WallTime, func() { timedOut.Store(true); kill() })
	stop := context.AfterFunc(ctx, kill)
	waitErr := cmd.Wait()
	timer.Stop()
	stop()
	res := runner.ExecResult{Duration: time.Since(start), TimedOut: timedOut.Load(), OOMKilled: g.oomKilled()}
	stdout.Flush()
	stderr.Flush()
	res.Stdout, res.StdoutTruncated = stdout.Bytes()
	res.Stderr, res.StderrTruncated = stderr.Bytes()
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		}
	case errors.Is(waitErr, exec.ErrWaitDelay):
	default:
		return res, fmt.Errorf("waiting for bwrap: %w", waitErr)
	}
	if childStarted := <-started; res.ExitCode == 125 && !childStarted && !res.TimedOut {
		return res, fmt.Errorf("the sandbox could not be set up: %s", strings.TrimSpace(string(res.Stderr)))
	}
	return res, nil
}

// CommandLine is the bwrap command line of spec with its scratch directory (holding
// script.py, result.json and output/), without the cgroup wrapper: what Run executes, and
// what benchmarks launch bare.
func (r *Runner) CommandLine(spec runner.Spec, scratch string) []string {
	l := spec.Limits
	resultPath := filepath.Join(scratch, "result.json")
	args := r.baseArgs([]string{
		"--size", strconv.FormatInt(max(l.TmpBytes, 4096), 10), "--tmpfs", "/tmp", "--dir", "/tmp/home",
		// /dev is a tmpfs bwrap makes: give shared memory its own capped tmpfs, and make
		// the rest read-only (writing to /dev/null and friends still works).
		"--size", strconv.FormatInt(max(l.TmpBytes, 4096), 10), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--tmpfs", "/work",
		"--ro-bind", filepath.Join(scratch, "script.py"), "/work/script.py",
		"--ro-bind", spec.InputDir, "/work/input",
		"--bind", filepath.Join(scratch, "output"), "/work/output",
		"--bind", resultPath, "/work/result.json",
		"--ro-bind", r.shimDir, "/skrip",
		"--remount-ro", "/work",
		// The root bwrap builds is a writable tmpfs: make it read-only too, once every
		// mount point exists. /tmp and /work/output are mounts of their own and stay writable.
		"--remount-ro", "/",
		"--chdir", "/work",
	})
	args = append(setenv(args, runner.Env("/tmp/home", spec.Env)), "--", r.python, "-s", "-B", shim.Entry)
	return append([]string{r.bwrap}, args...)
}

// setenv adds --setenv for each variable of env, in a stable order.
func setenv(args []string, env map[string]string) []string {
	for _, k := range runner.SortedKeys(env) {
		args = append(args, "--setenv", k, env[k])
	}
	return args
}

// probeTmpfs reports whether the server may mount a size-capped tmpfs (it is root).
func probeTmpfs() bool {
	if os.Geteuid() != 0 {
		return false
	}
	dir, err := os.MkdirTemp("", "skrip-probe-")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=4096"); err != nil {
		return false
	}
	syscall.Unmount(dir, syscall.MNT_DETACH)
	return true
}

// cleanWorkDir removes what a crashed server left: output tmpfs mounts and scratch dirs.
func (r *Runner) cleanWorkDir() error {
	runs := filepath.Join(r.cfg.WorkDir, "runs")
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			f := strings.Fields(line)
			if len(f) > 4 && strings.HasPrefix(f[4], runs+"/") {
				syscall.Unmount(f[4], syscall.MNT_DETACH)
			}
		}
	}
	if err := os.RemoveAll(runs); err != nil {
		return fmt.Errorf("cleaning %s: %w", runs, err)
	}
	return os.MkdirAll(runs, 0o755)
}
