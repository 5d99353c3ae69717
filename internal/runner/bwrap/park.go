package bwrap

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skrip-dev/skrip/internal/runner"
)

// Every sandbox starts as a bwrap that reads its options from a pipe (--args) before it
// does anything else. While it waits, the server puts it into its cgroups and sets its
// rlimits; then it writes the options. No shell joins the groups, and nothing the sandbox
// starts is ever outside them.
//
// On cgroup v1, moving a process into a cgroup takes the kernel's
// cgroup_threadgroup_rwsem for writing, which waits for an RCU grace period whenever no
// other move happened in the last few milliseconds: 5 to 15 ms on an idle machine, a third
// of a no-op run. So the runner keeps a few bwraps parked ahead of time for runs, each
// already in cgroups of its own, and a run takes one: its move was paid before the run
// came. (The kernel's favordynmods option removes the wait too, but it is a switch for the
// whole machine, and on Linux 6.18 a one-way one; cgroup v2 starts the sandbox inside its
// cgroup, with no move.) A parked bwrap serves only a run whose command and baked-in
// limits it was started with, and a run's cgroup limits are written again before it is
// handed its options.

// proc is a started bwrap waiting for its options: descriptor 3 is the seccomp filter, 4
// bwrap's status, 5 its options.
type proc struct {
	cmd     *exec.Cmd
	g       group
	name    string // of the cgroups
	argsW   *os.File
	started chan bool     // whether bwrap said it started the sandboxed command
	exited  chan struct{} // closed when bwrap has ended (its status pipe closed)
	stdout  lateWriter
	stderr  lateWriter
	// What it was started with, for a parked one to serve only runs alike.
	command []string
	limits  runner.Limits // those its group holds
	fsize   int64
}

// Descriptors of a proc's files inside bwrap (cmdline.fd numbers them in order).
const (
	seccompFD = "3"
	statusFD  = "4"
	argsFD    = "5"
)

// spawn starts bwrap for command in a new group name under l, with seccomp as its filter
// (spawn closes it), waiting for its options. fsize is the RLIMIT_FSIZE of the run (0:
// none). extra are passed on to the command as descriptors 6 and up (spawn closes them).
func (r *Runner) spawn(name string, l runner.Limits, seccomp *os.File, command []string, fsize int64, stdin io.Reader, extra []*os.File) (*proc, error) {
	closeExtra := func() {
		for _, f := range extra {
			f.Close()
		}
	}
	g, err := r.limiter.start(name, l)
	if err != nil {
		seccomp.Close()
		closeExtra()
		return nil, err
	}
	pr := &proc{g: g, name: name, command: command, limits: l, fsize: fsize, started: make(chan bool, 1), exited: make(chan struct{})}
	fail := func(err error) (*proc, error) {
		closeExtra()
		r.destroy(g, name)
		return nil, err
	}
	c := &cmdline{command: command, files: []*os.File{seccomp}}
	defer c.close()
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	c.fd(statusW)
	argsR, argsW, err := os.Pipe()
	if err != nil {
		statusR.Close()
		return fail(err)
	}
	c.args = []string{"--args", c.fd(argsR)}
	for _, f := range extra {
		c.fd(f)
	}
	extra = nil
	cmd := r.command(c)
	if limits := pr.rlimits(); r.shellLimits && len(limits) > 0 {
		script := ""
		for _, rl := range limits {
			script += rl.shell()
		}
		wrap(cmd, []string{"/bin/sh", "-c", script + `exec "$@"`, "sh"})
	}
	g.join(cmd)
	cmd.Stdin = stdin
	cmd.Stdout, cmd.Stderr = &pr.stdout, &pr.stderr
	cmd.WaitDelay = 2 * time.Second
	go func() {
		b, _ := io.ReadAll(io.LimitReader(statusR, 1<<16))
		statusR.Close()
		pr.started <- strings.Contains(string(b), `"child-pid"`)
		close(pr.exited)
	}()
	if err := cmd.Start(); err != nil {
		c.close()
		argsW.Close()
		<-pr.started
		return fail(fmt.Errorf("starting bwrap: %w", err))
	}
	c.close()
	pr.cmd, pr.argsW = cmd, argsW
	if err := g.enter(cmd.Process.Pid); err != nil {
		pr.kill()
		return nil, err
	}
	return pr, nil
}

// rlimits are the per-process limits pr's sandbox needs.
func (pr *proc) rlimits() []rlimit {
	limits := pr.g.rlimits()
	if pr.fsize > 0 {
		limits = append(limits, rlimit{unix.RLIMIT_FSIZE, "-f", uint64((pr.fsize + 511) / 512 * 512)})
	}
	return limits
}

// release sets pr's rlimits (unless a shell did), writes it opts, NUL-separated, and
// closes the pipe: bwrap goes on.
func (r *Runner) release(pr *proc, opts []string) error {
	if !r.shellLimits {
		for _, l := range pr.rlimits() {
			if err := l.set(pr.cmd.Process.Pid); err != nil {
				return err
			}
		}
	}
	var b bytes.Buffer
	for _, a := range opts {
		b.WriteString(a)
		b.WriteByte(0)
	}
	_, err := pr.argsW.Write(b.Bytes())
	if cerr := pr.argsW.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("passing bwrap its options: %w", err)
	}
	return nil
}

// kill ends a proc that will not be released, and removes its group.
func (pr *proc) kill() {
	pr.argsW.Close()
	syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGKILL)
	pr.cmd.Wait()
	<-pr.started
	pr.g.destroy()
}

// destroy removes group g in the background (Close waits): the kernel frees a cgroup only
// after the sandbox's pid namespace is torn down, some milliseconds after the run ended.
func (r *Runner) destroy(g group, name string) {
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		if err := g.destroy(); err != nil {
			r.log.Warn("removing a sandbox's cgroup", "name", name, "error", err)
		}
	}()
}

// lateWriter passes what is written to the writer set later, keeping what comes before.
type lateWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

func (lw *lateWriter) Write(b []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.w == nil {
		if lw.buf.Len()+len(b) > 1<<16 {
			return len(b), nil // a parked bwrap has nothing to say; drop a flood
		}
		return lw.buf.Write(b)
	}
	return lw.w.Write(b)
}

func (lw *lateWriter) set(w io.Writer) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.w = w
	if lw.buf.Len() > 0 {
		w.Write(lw.buf.Bytes())
		lw.buf.Reset()
	}
}

// --- the parked bwraps (cgroup v1) ---

// parkMax is how many bwraps the runner keeps parked: one per core of the machine kind
// it is tuned on; a run that finds none starts its own.
const parkMax = 2

// parking holds the parked bwraps.
type parking struct {
	mu     sync.Mutex
	procs  []*proc
	coming int // being started
	closed bool
	served int // runs that took a parked bwrap
}

// parks reports whether runs like p get parked bwraps: runs (with no stdin) on cgroup v1.
func (r *Runner) parks(p process) bool {
	return p.run && p.stdin == nil && r.limiter.name() == "cgroup v1"
}

// unpark returns a parked bwrap for p, with p's limits in its group, or nil.
func (r *Runner) unpark(p process) *proc {
	if !r.parks(p) {
		return nil
	}
	r.parking.mu.Lock()
	var pr *proc
	for i, c := range r.parking.procs {
		if slices.Equal(c.command, p.cmd.command) && c.fsize == p.fsize && (c.limits.CPUs > 0) == (p.limits.CPUs > 0) {
			pr = c
			r.parking.procs = slices.Delete(r.parking.procs, i, i+1)
			break
		}
	}
	r.parking.mu.Unlock()
	if pr == nil {
		return nil
	}
	if pr.limits != p.limits {
		if err := pr.g.(*v1group).set(p.limits); err != nil {
			pr.kill()
			return nil
		}
		pr.limits = p.limits
	}
	r.parking.mu.Lock()
	r.parking.served++
	r.parking.mu.Unlock()
	return pr
}

// refill parks bwraps for runs like p until parkMax are parked, in the background.
func (r *Runner) refill(p process) {
	if !r.parks(p) {
		return
	}
	r.parking.mu.Lock()
	n := parkMax - len(r.parking.procs) - r.parking.coming
	if r.parking.closed || n <= 0 {
		r.parking.mu.Unlock()
		return
	}
	r.parking.coming += n
	r.pending.Add(n)
	r.parking.mu.Unlock()
	for range n {
		go func() {
			defer r.pending.Done()
			pr, err := r.parkOne(p)
			r.parking.mu.Lock()
			r.parking.coming--
			closed := r.parking.closed
			if err == nil && !closed {
				r.parking.procs = append(r.parking.procs, pr)
			}
			r.parking.mu.Unlock()
			switch {
			case err != nil:
				r.log.Warn("parking a sandbox for the next run", "error", err)
			case closed:
				pr.kill()
			}
		}()
	}
}

func (r *Runner) parkOne(p process) (*proc, error) {
	seccomp, err := r.seccompPipe()
	if err != nil {
		return nil, err
	}
	return r.spawn("park-"+randomHex(6), p.limits, seccomp, p.cmd.command, p.fsize, nil, nil)
}

// unparkAll ends the parked bwraps, for Close.
func (r *Runner) unparkAll() {
	r.parking.mu.Lock()
	r.parking.closed = true
	procs := r.parking.procs
	r.parking.procs = nil
	r.parking.mu.Unlock()
	for _, pr := range procs {
		pr.kill()
	}
}
