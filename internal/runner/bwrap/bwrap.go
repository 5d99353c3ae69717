// Package bwrap runs tool runs under bubblewrap on the host: new user, pid, net, ipc, uts
// and cgroup namespaces, an unprivileged host uid, a seccomp filter, a cleared
// environment, a read-only root, tmpfs /tmp, and limits from cgroup v2, cgroup v1 or
// rlimits, whichever the machine offers.
package bwrap

import (
	"bytes"
	"cmp"
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

	"golang.org/x/sys/unix"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/seccomp"
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
	// UID and GID are the host ids sandboxes run as when the server is root (0: 65534,
	// nobody). A server that is not root cannot switch: its sandboxes run as itself.
	UID, GID int
	// WarmMemory is what interpreters parked ahead of runs may hold together
	// (SKRIP_RUNNER_WARM_MEMORY); 0 parks none (warm.go).
	WarmMemory int64
}

// sandboxUID is the uid (and gid) a tool sees itself as inside its user namespace,
// whatever host uid that maps to: the Docker runner's user.
const sandboxUID = "65534"

// Runner is the bubblewrap runner.
type Runner struct {
	cfg      Config
	bwrap    string
	python   string
	shimDir  string
	limiter  limiter
	tmpfsOut bool // /work/output is a size-capped tmpfs mounted by the server
	// drop: the server is root, and starts bwrap as uid:gid through a view (view.go);
	// else as itself (uid:gid), with no view.
	drop     bool
	uid, gid int
	view     string
	root     string // what bwrap mounts as the sandbox's root; empty: the host's /usr
	seccomp  []byte // the BPF program bwrap loads before it execs the tool
	// shellLimits: the server may not set bwrap's rlimits (mayPrlimit); a shell sets them
	// before it execs bwrap.
	shellLimits bool
	version     string
	log         *slog.Logger
	pending     sync.WaitGroup // cgroups being removed, bwraps being parked
	parking     parking        // bwraps started ahead of runs (park.go)
	warm        warmPool       // interpreters started ahead of runs (warm.go)
	ready       runner.Readiness
}

// maxResultBytes caps how much of result.json is read.
const maxResultBytes = 8 << 20

// Inspect checks that bubblewrap can make a sandbox here, as the uid sandboxes run as and
// under the seccomp filter, without touching the work directory or any run: `skrip
// doctor` uses it beside a running server. An ErrUnavailable error says what to install
// or change.
func Inspect(cfg Config, log *slog.Logger) (*Runner, error) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap is not installed; install it with `apt-get install bubblewrap`", runner.ErrUnavailable)
	}
	if cfg.WorkDir, err = filepath.Abs(cfg.WorkDir); err != nil {
		return nil, err
	}
	if cfg.UID < 0 || cfg.GID < 0 {
		return nil, fmt.Errorf("the sandbox uid:gid %d:%d is not a pair of host ids", cfg.UID, cfg.GID)
	}
	sum := sha256.Sum256([]byte(cfg.WorkDir))
	r := &Runner{cfg: cfg, bwrap: bw, log: log, limiter: pickLimiter(hex.EncodeToString(sum[:6])), python: "/usr/bin/python3",
		drop: os.Geteuid() == 0, uid: os.Getuid(), gid: os.Getgid(), root: cfg.Rootfs,
		warm: warmPool{budget: cfg.WarmMemory, coming: map[string]int{}, wanted: map[string]time.Time{}, sizes: map[string]int64{}, turn: make(chan struct{}, 1)}}
	if r.drop {
		r.uid, r.gid = cmp.Or(cfg.UID, 65534), cmp.Or(cfg.GID, 65534)
		// Until New makes the view, the sandbox's uid may not reach the root filesystem:
		// the probe checks uid, namespaces and filter over the host's /usr.
		r.root = ""
	}
	if r.seccomp, err = seccomp.Program(); err != nil {
		return nil, fmt.Errorf("%w: building the seccomp filter: %v", runner.ErrUnavailable, err)
	}
	root := cmp.Or(cfg.Rootfs, "/")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/python3")); err != nil {
		return nil, fmt.Errorf("%w: no python3 in %s; install it with `apt-get install python3`", runner.ErrUnavailable, filepath.Join(root, "usr/bin"))
	}
	if err := r.probe(context.Background()); err != nil {
		return nil, err
	}
	r.tmpfsOut = probeTmpfs()
	if r.drop && !r.tmpfsOut {
		return nil, fmt.Errorf("%w: skrip runs as root but may not mount (no CAP_SYS_ADMIN), so it cannot give sandboxes their own uid; run skrip serve as an unprivileged user, or let it mount",
			runner.ErrUnavailable)
	}
	r.shellLimits = !mayPrlimit(bw, r.drop)
	r.version, _ = bwrapVersion(bw)
	r.ready.Check = r.check
	return r, nil
}

// Ping implements runner.Runner.
func (r *Runner) Ping(ctx context.Context) error { return r.ready.Ping(ctx) }

// check makes the smallest sandbox (it runs `true`), as Inspect does at start: it fails
// when bwrap or python3 went away, or the kernel stopped allowing the namespaces.
func (r *Runner) check(ctx context.Context) error {
	root := r.cfg.Rootfs
	if root == "" {
		root = "/"
	}
	if _, err := os.Stat(filepath.Join(root, "usr/bin/python3")); err != nil {
		return fmt.Errorf("%w: no python3 in %s", runner.ErrUnavailable, filepath.Join(root, "usr/bin"))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return r.probe(ctx)
}

// probe runs `true` in the sandbox every run shares, as the sandbox uid.
func (r *Runner) probe(ctx context.Context) error {
	c := &cmdline{}
	defer c.close()
	err := r.baseArgs(c)
	if err == nil {
		c.command = []string{"/usr/bin/true"}
		cmd := r.command(c)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err = cmd.Start(); err == nil {
			stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
			err = cmd.Wait()
			stop()
		}
		if err != nil {
			err = fmt.Errorf("%s: %v", strings.TrimSpace(out.String()), err)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: bubblewrap (%s) cannot create a sandbox here as uid %d (%v); user namespaces must be open to unprivileged users (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu, an AppArmor profile that lets bwrap use them)",
			runner.ErrUnavailable, r.bwrap, r.uid, err)
	}
	return nil
}

// New inspects the machine like Inspect, then removes what a crashed server left (scratch
// directories, output mounts, cgroups), writes the shim and, as root, makes the view.
func New(cfg Config, log *slog.Logger) (*Runner, error) {
	r, err := Inspect(cfg, log)
	if err != nil {
		return nil, err
	}
	r.limiter.sweep()
	view := ""
	if r.drop {
		sum := sha256.Sum256([]byte(r.cfg.WorkDir))
		view = filepath.Join(viewParent(), "skrip-"+hex.EncodeToString(sum[:6]))
		// A server killed mid-run leaves its view, whose mounts of the run's input and
		// output keep the scratch directories busy: it goes first, with every mount
		// under it.
		syscall.Unmount(view, syscall.MNT_DETACH)
	}
	if err := r.cleanWorkDir(); err != nil {
		return nil, err
	}
	r.shimDir = filepath.Join(r.cfg.WorkDir, "shim")
	if err := shim.WriteTo(r.shimDir); err != nil {
		return nil, fmt.Errorf("writing the runner shim: %w", err)
	}
	// The sandbox's uid reads it whatever the server's umask.
	if err := os.Chmod(r.shimDir, 0o755); err != nil {
		return nil, err
	}
	if r.drop {
		if err := r.makeView(view); err != nil {
			return nil, err
		}
		r.view = view
		if r.cfg.Rootfs != "" {
			r.root = filepath.Join(view, "rootfs")
		}
		if err := r.probe(context.Background()); err != nil {
			r.Close()
			return nil, err
		}
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

// Close implements runner.Runner: it removes this server's cgroups and its view.
func (r *Runner) Close() error {
	r.unparkAll()
	r.warm.closeAll(r)
	r.pending.Wait()
	r.limiter.close()
	if r.view != "" {
		syscall.Unmount(r.view, syscall.MNT_DETACH)
		os.Remove(r.view)
	}
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
		runner.Enforced{Limit: "network", How: "own network namespace with only loopback", OK: true},
		r.hostUID(), syscalls)
}

// hostUID says which host uid sandboxes run as.
func (r *Runner) hostUID() runner.Enforced {
	if r.drop {
		return runner.Enforced{Limit: "host uid", How: fmt.Sprintf("%d:%d (SKRIP_BWRAP_UID, SKRIP_BWRAP_GID); %s inside its user namespace", r.uid, r.gid, sandboxUID), OK: true}
	}
	return runner.Enforced{Limit: "host uid", How: fmt.Sprintf("%d:%d, the server's own: it is not root, so it cannot switch; %s inside its user namespace", r.uid, r.gid, sandboxUID), OK: true}
}

// syscalls says which system calls the seccomp filter refuses.
var syscalls = runner.Enforced{Limit: "system calls",
	How: "seccomp filter: keyrings, ptrace, perf_event_open, bpf, userfaultfd, io_uring, mount and namespace calls, kernel modules, clocks and the rest of Docker's default refusals fail with EPERM", OK: true}

// Limiter names the mechanism limiting memory, pids and CPU ("cgroup v1", …).
func (r *Runner) Limiter() string { return r.limiter.name() }

// baseArgs starts c with the sandbox every run shares, seccomp filter included;
// spec-specific mounts follow it.
func (r *Runner) baseArgs(c *cmdline) error {
	pr, err := r.seccompPipe()
	if err != nil {
		return err
	}
	c.args = append(c.args, "--unshare-all", "--die-with-parent", "--new-session", "--uid", sandboxUID, "--gid", sandboxUID,
		"--hostname", "skrip", "--clearenv", "--seccomp", c.fd(pr))
	if r.root != "" {
		c.args = append(c.args, "--ro-bind", r.root, "/",
			// Hide the rootfs's secrets and root's home, should their modes ever let
			// the sandbox's uid read them.
			"--ro-bind", "/dev/null", "/etc/shadow",
			"--tmpfs", "/root", "--remount-ro", "/root")
	} else {
		c.args = append(c.args, "--ro-bind", "/usr", "/usr")
		for _, l := range []string{"bin", "sbin", "lib", "lib64", "lib32", "libx32"} {
			if _, err := os.Lstat(filepath.Join("/usr", l)); err == nil {
				c.args = append(c.args, "--symlink", "usr/"+l, "/"+l)
			}
		}
		for _, etc := range []string{"/etc/fonts", "/etc/alternatives", "/etc/mime.types", "/etc/ld.so.cache", "/etc/localtime"} {
			c.args = append(c.args, "--ro-bind-try", etc, etc)
		}
	}
	c.args = append(c.args, "--proc", "/proc",
		// Kernel settings stay read-only, whatever the uid.
		"--ro-bind", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--dev", "/dev")
	return nil
}

// seccompPipe returns the read end of a pipe that holds the seccomp filter: it is far
// smaller than a pipe's buffer.
func (r *Runner) seccompPipe() (*os.File, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = pw.Write(r.seccomp)
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("passing the seccomp filter: %w", err)
	}
	return pr, nil
}

// command is c as a process: bwrap started as the sandbox's host uid (when the server is
// root), with c's files, a bare environment, in a process group of its own, killed if the
// server dies.
func (r *Runner) command(c *cmdline) *exec.Cmd {
	cmd := exec.Command(r.bwrap, append(append(c.args[:len(c.args):len(c.args)], "--"), c.command...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = c.files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if r.drop {
		// Groups empty: root's supplementary groups are dropped too.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid), Groups: []uint32{}}
	}
	return cmd
}

// shim is where bwrap finds the shim.
func (r *Runner) shim() string {
	if r.view != "" {
		return filepath.Join(r.view, "shim")
	}
	return r.shimDir
}

// Run implements runner.Runner. A run whose script imports what a parked interpreter
// preloaded takes it (warm.go); any other starts its own sandbox.
func (r *Runner) Run(ctx context.Context, spec runner.Spec) (runner.Result, error) {
	modules := runner.Imports(spec.Script)
	defer r.warm.refill(r, modules, spec.Limits)
	if w := r.warm.take(r, modules, spec.Limits); w != nil {
		res, err := r.runWarm(ctx, w, spec)
		if !errors.Is(err, errWarmDead) {
			return res, err
		}
		r.warm.fellBack()
		r.log.Warn("a parked interpreter had ended; the run starts cold", "run", spec.ID)
	}
	scratch := filepath.Join(r.cfg.WorkDir, "runs", spec.ID)
	if err := os.MkdirAll(filepath.Join(scratch, "output"), 0o755); err != nil {
		return runner.Result{}, err
	}
	var m mounts
	defer func() {
		m.undo()
		os.RemoveAll(scratch)
	}()
	l := spec.Limits
	if err := r.mountOutput(filepath.Join(scratch, "output"), l, &m); err != nil {
		return runner.Result{}, err
	}
	c, err := r.runArgs(spec, scratch, &m)
	if err != nil {
		return runner.Result{}, err
	}
	// Every file the run writes is capped at the output limit: /work/result.json lives on
	// the data disk, and without the server's tmpfs so does /work/output.
	ex, err := r.execute(ctx, process{name: spec.ID, cmd: c, limits: l, fsize: runFsize(l), onLine: spec.OnLine, run: true})
	res := runner.Result{ExecResult: ex}
	if err != nil {
		return res, err
	}
	return res, r.collect(scratch, filepath.Join(scratch, "output"), spec, &res)
}

// runFsize is the RLIMIT_FSIZE of a run under l.
func runFsize(l runner.Limits) int64 { return max(l.OutputBytes, maxResultBytes) }

// mountOutput mounts a tmpfs capped at l's output limit on the directory output, when
// the server may mount (it is root), adding it to m.
func (r *Runner) mountOutput(output string, l runner.Limits, m *mounts) error {
	if !r.tmpfsOut {
		return nil
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700,uid=%d,gid=%d", max(l.OutputBytes, 4096), runner.OutputInodes, r.uid, r.gid)
	if err := syscall.Mount("tmpfs", output, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting the output tmpfs: %w", err)
	}
	*m = append(*m, output)
	return nil
}

// collect reads the result.json a run left in scratch, and hands its output (the host's
// path of its /work/output) to spec.Collect.
func (r *Runner) collect(scratch, output string, spec runner.Spec, res *runner.Result) error {
	if f, err := os.Open(filepath.Join(scratch, "result.json")); err == nil {
		b, _ := io.ReadAll(io.LimitReader(f, maxResultBytes+1))
		f.Close()
		if len(b) > 0 {
			res.ResultJSON = b
		}
	}
	if spec.Collect == nil {
		return nil
	}
	var err error
	// The output tmpfs caps the blocks written, not what sparse files claim.
	if res.LeftOut, err = runner.FitDir(output, spec.Limits.OutputBytes); err != nil {
		return fmt.Errorf("sizing /work/output: %w", err)
	}
	if err := spec.Collect(output); err != nil {
		return fmt.Errorf("collecting /work/output: %w", err)
	}
	return nil
}

// runArgs writes script.py, memory.json and an empty result.json into scratch (which
// holds output/), hands what the sandbox writes to its uid, lets it read the rest, mounts
// what it needs into the view (adding to m), and returns the command line of the run.
func (r *Runner) runArgs(spec runner.Spec, scratch string, m *mounts) (*cmdline, error) {
	script, memory := filepath.Join(scratch, "script.py"), filepath.Join(scratch, "memory.json")
	for p, body := range map[string][]byte{script: spec.Script, memory: runner.MemoryJSON(spec.Memory)} {
		if err := os.WriteFile(p, body, 0o440); err != nil {
			return nil, err
		}
		if err := r.share(p, 0o040); err != nil {
			return nil, err
		}
	}
	if err := r.handOut(scratch); err != nil {
		return nil, err
	}
	if err := r.shareTree(spec.InputDir); err != nil {
		return nil, fmt.Errorf("letting the sandbox read its input: %w", err)
	}
	src, input := scratch, spec.InputDir
	if r.view != "" {
		src = filepath.Join(r.view, "runs", spec.ID)
		if err := m.bind(spec.InputDir, filepath.Join(scratch, "input")); err != nil {
			return nil, err
		}
		if err := m.bind(scratch, src); err != nil {
			return nil, err
		}
		input = filepath.Join(src, "input")
	}
	c, err := r.workArgs(src, input, filepath.Join(src, "output"), spec.Limits)
	if err != nil {
		return nil, err
	}
	c.args = setenv(c.args, runner.RunEnv("/tmp/home", shim.Bin, spec.Env))
	c.command = []string{r.python, "-s", "-B", shim.Entry}
	return c, nil
}

// handOut makes scratch's empty result.json and hands it and output/ to the sandbox's
// uid: the two things a run writes.
func (r *Runner) handOut(scratch string) error {
	result, output := filepath.Join(scratch, "result.json"), filepath.Join(scratch, "output")
	if err := os.WriteFile(result, nil, 0o600); err != nil {
		return err
	}
	for _, p := range []string{result, output} {
		if err := os.Lchown(p, r.uid, r.gid); err != nil {
			return fmt.Errorf("handing %s to the sandbox's uid: %w", filepath.Base(p), err)
		}
	}
	return nil
}

// workArgs is the sandbox of a run whose files bwrap finds in src (script.py,
// memory.json, result.json), input and output: everything but its environment and
// command.
func (r *Runner) workArgs(src, input, output string, l runner.Limits) (*cmdline, error) {
	c := &cmdline{}
	if err := r.baseArgs(c); err != nil {
		return nil, err
	}
	tmp := strconv.FormatInt(max(l.TmpBytes, 4096), 10)
	c.args = append(c.args, "--size", tmp, "--tmpfs", "/tmp", "--dir", "/tmp/home", "--dir", runner.CacheDir("/tmp/home"),
		// /dev is a tmpfs bwrap makes: give shared memory its own capped tmpfs, and make
		// the rest read-only (writing to /dev/null and friends still works).
		"--size", tmp, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--tmpfs", "/work",
		"--ro-bind", filepath.Join(src, "script.py"), "/work/script.py",
		// /work is bwrap's own tmpfs: the mount point is made there, whatever the
		// rootfs's /work holds.
		"--ro-bind", filepath.Join(src, "memory.json"), contract.MemoryPath,
		"--ro-bind", input, "/work/input",
		"--bind", output, "/work/output",
		"--bind", filepath.Join(src, "result.json"), "/work/result.json",
		"--ro-bind", r.shim(), "/skrip",
		"--remount-ro", "/work",
		// The root bwrap builds is a writable tmpfs: make it read-only too, once every
		// mount point exists. /tmp and /work/output are mounts of their own and stay writable.
		"--remount-ro", "/",
		"--chdir", "/work")
	return c, nil
}

// BareCommand is the sandbox Run starts for spec in scratch (holding output/, which the
// caller made) without the cgroup and rlimit wrappers: what benchmarks launch bare. It
// writes script.py and result.json like Run; done undoes what it mounted and closes the
// command's files, once it has run.
func (r *Runner) BareCommand(spec runner.Spec, scratch string) (cmd *exec.Cmd, done func(), err error) {
	var m mounts
	c, err := r.runArgs(spec, scratch, &m)
	if err != nil {
		m.undo()
		return nil, nil, err
	}
	return r.command(c), func() { c.close(); m.undo() }, nil
}

// BareLimited is BareCommand run as Run runs it, under spec's limits (cgroups,
// rlimits, wall time, captured output), without Run's other steps (the output tmpfs,
// result.json, collecting the output): what benchmarks compare the bare loop with. run
// may be called once; done undoes what was mounted.
func (r *Runner) BareLimited(spec runner.Spec, scratch string) (run func(context.Context) (runner.ExecResult, error), done func(), err error) {
	var m mounts
	c, err := r.runArgs(spec, scratch, &m)
	if err != nil {
		m.undo()
		return nil, nil, err
	}
	run = func(ctx context.Context) (runner.ExecResult, error) {
		return r.execute(ctx, process{name: spec.ID, cmd: c, limits: spec.Limits, fsize: runFsize(spec.Limits), run: true})
	}
	return run, func() { c.close(); m.undo() }, nil
}

// FloorCommand is the least sandbox a run could be: `bwrap --unshare-all` over the same
// root, as the same uid, running `python3 -c pass`, with no filter, limits, mounts or
// shim. Benchmarks launch it as the floor a run's latency is measured against.
func (r *Runner) FloorCommand() *exec.Cmd { return r.FloorPython("pass") }

// FloorPython is FloorCommand running `python3 -c code` (a writable /tmp, the cwd):
// what a tool's work costs in the least sandbox.
func (r *Runner) FloorPython(code string) *exec.Cmd {
	c := &cmdline{args: []string{"--unshare-all", "--die-with-parent", "--chdir", "/tmp"}, command: []string{r.python, "-c", code}}
	if r.root != "" {
		c.args = append(c.args, "--ro-bind", r.root, "/")
	} else {
		c.args = append(c.args, "--ro-bind", "/usr", "/usr")
		for _, l := range []string{"bin", "lib", "lib64"} {
			if _, err := os.Lstat(filepath.Join("/usr", l)); err == nil {
				c.args = append(c.args, "--symlink", "usr/"+l, "/"+l)
			}
		}
	}
	c.args = append(c.args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	return r.command(c)
}

// process is one sandboxed command line to execute under limits.
type process struct {
	name   string // names the cgroup
	cmd    *cmdline
	limits runner.Limits
	fsize  int64 // bytes any one file may reach (RLIMIT_FSIZE); 0: no limit
	stdin  io.Reader
	onLine func(stream string, line []byte)
	run    bool // a tool run (Run), which parked bwraps may serve
}

// execute runs p's bwrap command line in a cgroup of its own, kills the whole sandbox at
// the wall time or when ctx ends, and returns how it ended with its capped output. It
// closes p's files.
func (r *Runner) execute(ctx context.Context, p process) (runner.ExecResult, error) {
	defer p.cmd.close()
	l := p.limits
	if len(p.cmd.files) != 1 {
		return runner.ExecResult{}, fmt.Errorf("a sandbox's command line passes %d files, want its seccomp filter alone", len(p.cmd.files))
	}
	// The options refer to the descriptors spawn gives (park.go): the filter is the
	// command line's own first file, as there.
	opts := append([]string{"--json-status-fd", statusFD}, p.cmd.args...)
	// They go to bwrap NUL-separated (release): a NUL inside one would make it several.
	for _, o := range opts {
		if strings.IndexByte(o, 0) >= 0 {
			return runner.ExecResult{}, fmt.Errorf("a sandbox option holds a NUL byte: %q", o)
		}
	}
	start := time.Now()
	pr := r.unpark(p)
	if pr != nil {
		if err := r.release(pr, opts); err != nil {
			// A parked bwrap that died (the thread that started it ended, say) is
			// replaced.
			r.log.Warn("a parked sandbox could not be used", "error", err)
			pr.kill()
			pr = nil
		}
	}
	if pr == nil {
		seccomp := p.cmd.files[0]
		p.cmd.files = nil
		var err error
		if pr, err = r.spawn(p.name, l, seccomp, p.cmd.command, p.fsize, p.stdin, nil); err != nil {
			return runner.ExecResult{}, err
		}
		if err := r.release(pr, opts); err != nil {
			pr.kill()
			return runner.ExecResult{}, err
		}
	}
	r.refill(p)
	return r.wait(ctx, pr, l, p.onLine, start)
}

// wait captures the output of pr, a released bwrap, kills the whole sandbox at l's wall
// time (counted from start) or when ctx ends, and returns how it ended. It removes pr's
// group.
func (r *Runner) wait(ctx context.Context, pr *proc, l runner.Limits, onLine func(string, []byte), start time.Time) (runner.ExecResult, error) {
	defer r.destroy(pr.g, pr.name)
	stdout := &runner.Capture{Max: l.LogBytes, Stream: "stdout", OnLine: onLine}
	stderr := &runner.Capture{Max: l.LogBytes, Stream: "stderr", OnLine: onLine}
	pr.stdout.set(stdout)
	pr.stderr.set(stderr)
	cmd := pr.cmd
	var timedOut atomic.Bool
	var once sync.Once
	kill := func() { once.Do(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) }
	timer := time.AfterFunc(l.WallTime-time.Since(start), func() { timedOut.Store(true); kill() })
	stop := context.AfterFunc(ctx, kill)
	waitErr := cmd.Wait()
	timer.Stop()
	stop()
	res := runner.ExecResult{Duration: time.Since(start), TimedOut: timedOut.Load(), OOMKilled: pr.g.oomKilled()}
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
	if childStarted := <-pr.started; res.ExitCode == 125 && !childStarted && !res.TimedOut {
		return res, fmt.Errorf("the sandbox could not be set up: %s", strings.TrimSpace(string(res.Stderr)))
	}
	return res, nil
}

// wrap makes cmd run its command line through prefix, which ends by exec'ing it.
func wrap(cmd *exec.Cmd, prefix []string) {
	cmd.Args = append(prefix, cmd.Args...)
	cmd.Path = prefix[0]
}

// setenv adds --setenv for each variable of env, in a stable order.
func setenv(args []string, env map[string]string) []string {
	for _, k := range runner.SortedKeys(env) {
		args = append(args, "--setenv", k, env[k])
	}
	return args
}

// mayPrlimit reports whether the server may set the rlimits of bwrap, started from the
// program bw: as root, with CAP_SYS_RESOURCE (a container's root often lacks it); as
// another user, when bwrap runs as that user too (it is not setuid).
func mayPrlimit(bw string, root bool) bool {
	if root {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		return unix.Capget(&hdr, &data[0]) == nil && data[0].Effective&(1<<unix.CAP_SYS_RESOURCE) != 0
	}
	fi, err := os.Stat(bw)
	return err == nil && fi.Mode()&os.ModeSetuid == 0
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

// cleanWorkDir removes what a crashed server left: mounts and scratch dirs of runs.
func (r *Runner) cleanWorkDir() error {
	runs := filepath.Join(r.cfg.WorkDir, "runs")
	sweepMounts(runs)
	if err := os.RemoveAll(runs); err != nil {
		return fmt.Errorf("cleaning %s: %w", runs, err)
	}
	return os.MkdirAll(runs, 0o755)
}
