package bwrap

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/shim"
)

// Warm starts (docs/runner-contract.md "Warm starts"). A warm sandbox is a whole run's
// sandbox made before its run: a scratch directory with an empty script.py, memory.json,
// input/, output/ (its tmpfs mounted) and result.json, mounted as a run's are, and in it
// Python already started by shim/skrip_warm.py with some modules imported, waiting on
// stdin. A run that takes it writes its files into the scratch directory (the mounts
// show them inside), sends its environment, and waits for it as for any run. It serves
// that one run; the next gets a new one.
//
// Which modules: those the script of the run just finished imports (runner.Imports), so
// the next run of the same tool, or of a tool importing at least as much, starts warm. A
// run takes only an interpreter whose modules its own script imports: it never holds
// memory a cold start would not. One is parked per set of the tools run lately, at most
// warmMax, their memory within WarmMemory (the sets wanted longest ago make way), and
// none while the machine's available memory is below twice that.

// warmSandbox is one parked interpreter.
type warmSandbox struct {
	pr      *proc
	name    string
	scratch string
	mounts  mounts
	modules []string
	key     string // the modules, joined
	limits  runner.Limits
	stdin   *os.File      // the go message goes here
	ready   chan struct{} // closed once its modules are imported
	dead    chan struct{} // closed when its sandbox ended (before or after ready)
	memory  int64         // what its group held when it became ready
	output  string        // the host's path of its /work/output
	ended   sync.Once     // discard's
}

// warmPool holds the parked interpreters of one runner.
type warmPool struct {
	budget int64 // 0: no warm starts
	mu     sync.Mutex
	parked []*warmSandbox
	coming map[string]int       // being started, by key
	wanted map[string]time.Time // when a run last imported each set
	sizes  map[string]int64     // what an interpreter of each set held, last measured
	turn   chan struct{}        // one interpreter imports at a time: it is room on the CPU runs share
	closed bool
	warm   int64
	cold   int64
}

// sameLimits reports whether a sandbox made for have may serve a run under want: the
// wall time and the log cap are the server's to apply, everything else is baked in.
func sameLimits(want, have runner.Limits) bool {
	want.WallTime, have.WallTime = 0, 0
	want.LogBytes, have.LogBytes = 0, 0
	return want == have
}

// isDead reports whether s's sandbox has ended.
func (s *warmSandbox) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// prune removes the parked interpreters whose sandbox ended (the host's OOM killer, an
// admin's kill) and returns them, to be discarded outside the lock. w.mu is held.
func (w *warmPool) prune() []*warmSandbox {
	var gone []*warmSandbox
	w.parked = slices.DeleteFunc(w.parked, func(s *warmSandbox) bool {
		if s.isDead() {
			gone = append(gone, s)
			return true
		}
		return false
	})
	return gone
}

// discardAll discards sandboxes in the background (discard waits for the sandbox).
func discardAll(r *Runner, list []*warmSandbox) {
	for _, s := range list {
		r.pending.Add(1)
		go func() {
			defer r.pending.Done()
			s.discard(r)
		}()
	}
}

// take returns a ready parked interpreter that may serve a run importing modules under
// l, the one with the most modules, or nil.
func (w *warmPool) take(r *Runner, modules []string, l runner.Limits) *warmSandbox {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.budget <= 0 {
		return nil
	}
	defer discardAll(r, w.prune())
	// The best is ready and has the most modules; one still importing them is better
	// than none, since it started before this run.
	best, bestScore := -1, -1
	for i, s := range w.parked {
		score := 2 * len(s.modules)
		select {
		case <-s.ready:
			score += 1000
		default:
		}
		if sameLimits(l, s.limits) && runner.Covers(modules, s.modules) && score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		w.cold++
		return nil
	}
	s := w.parked[best]
	w.parked = slices.Delete(w.parked, best, best+1)
	w.warm++
	return s
}

// warmMax bounds the parked interpreters, whatever the budget: one per module set of
// the tools run lately, and each a sandbox's processes.
const warmMax = 8

// warmGuess is what a parked interpreter is taken to hold until it has been measured.
const warmGuess = 64 << 20

// refill parks an interpreter for runs importing modules under l, in the background,
// unless one is parked or coming for them already. Room is made by giving up the
// interpreters of the sets wanted longest ago: past warmMax, or past the budget (their
// memory as measured, or as last measured for their set). It parks none under memory
// pressure.
func (w *warmPool) refill(r *Runner, modules []string, l runner.Limits) {
	key := strings.Join(modules, ",")
	w.mu.Lock()
	if w.budget <= 0 || w.closed {
		w.mu.Unlock()
		return
	}
	w.wanted[key] = time.Now()
	runner.ForgetOld(w.wanted, w.sizes, func(k string) bool {
		return w.coming[k] > 0 || slices.ContainsFunc(w.parked, func(s *warmSandbox) bool { return s.key == k })
	})
	evict := w.prune()
	defer func() { discardAll(r, evict) }()
	if w.coming[key] > 0 {
		w.mu.Unlock()
		return
	}
	for _, s := range w.parked {
		if s.key == key && sameLimits(l, s.limits) {
			w.mu.Unlock()
			return
		}
	}
	need := cmp.Or(w.sizes[key], warmGuess)
	count, held := 0, need
	for _, n := range w.coming {
		count += n
	}
	for k, n := range w.coming {
		held += int64(n) * cmp.Or(w.sizes[k], warmGuess)
	}
	for _, s := range w.parked {
		held += cmp.Or(s.memory, w.sizes[s.key], warmGuess)
	}
	count += len(w.parked)
	// The parked ones in the order their sets were last wanted, oldest first.
	byAge := slices.Clone(w.parked)
	slices.SortStableFunc(byAge, func(a, b *warmSandbox) int { return w.wanted[a.key].Compare(w.wanted[b.key]) })
	for _, s := range byAge {
		if count < warmMax && held <= w.budget {
			break
		}
		evict = append(evict, s)
		count--
		held -= cmp.Or(s.memory, w.sizes[s.key], warmGuess)
	}
	w.parked = slices.DeleteFunc(w.parked, func(s *warmSandbox) bool { return slices.Contains(evict, s) })
	park := count < warmMax && held <= w.budget && !underPressure(w.budget)
	if park {
		w.coming[key]++
		r.pending.Add(1)
	}
	w.mu.Unlock()
	if !park {
		return
	}
	go func() {
		defer r.pending.Done()
		w.turn <- struct{}{}
		defer func() { <-w.turn }()
		var s *warmSandbox
		err := errors.New("closed")
		if !w.isClosed() {
			s, err = r.parkWarm(modules, l)
		}
		w.mu.Lock()
		w.coming[key]--
		if w.coming[key] == 0 {
			delete(w.coming, key)
		}
		closed := w.closed
		if err == nil && !closed {
			w.parked = append(w.parked, s)
		}
		w.mu.Unlock()
		switch {
		case closed && s != nil:
			s.discard(r)
		case closed:
		case err != nil:
			r.log.Warn("parking a warm interpreter for the next run", "modules", key, "error", err)
		default:
			s.measure(r, w) // holding the turn: the next imports once this one is done
		}
	}()
}

func (w *warmPool) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// underPressure reports whether the machine's available memory is below twice what
// parked interpreters may hold.
func underPressure(budget int64) bool {
	avail, ok := runner.MemoryAvailable()
	return ok && avail < 2*budget
}

// measure waits for s to become ready and records the memory its group holds then. Past
// the budget, the interpreters of the sets wanted longest ago are given up until the rest
// fit (s too, when it alone does not). One that ended before it was ready is discarded.
func (s *warmSandbox) measure(r *Runner, w *warmPool) {
	select {
	case <-s.ready:
	case <-s.dead:
	case <-time.After(time.Minute):
	}
	mem := s.pr.g.memUsage()
	w.mu.Lock()
	var evict []*warmSandbox
	switch {
	case !slices.Contains(w.parked, s):
		// A run took it, or take or refill gave it up: theirs to end.
	case s.isDead():
		w.parked = slices.DeleteFunc(w.parked, func(p *warmSandbox) bool { return p == s })
		evict = append(evict, s)
	default:
		s.memory = mem
		if mem > 0 {
			w.sizes[s.key] = mem
		}
		var held int64
		for _, p := range w.parked {
			held += cmp.Or(p.memory, w.sizes[p.key], warmGuess)
		}
		byAge := slices.Clone(w.parked)
		slices.SortStableFunc(byAge, func(a, b *warmSandbox) int {
			// s goes last: the others make way for it, unless it alone is too much.
			if a == s || b == s {
				return cmp.Compare(boolInt(a == s), boolInt(b == s))
			}
			return w.wanted[a.key].Compare(w.wanted[b.key])
		})
		for _, p := range byAge {
			if held <= w.budget {
				break
			}
			evict = append(evict, p)
			held -= cmp.Or(p.memory, w.sizes[p.key], warmGuess)
		}
		w.parked = slices.DeleteFunc(w.parked, func(p *warmSandbox) bool { return slices.Contains(evict, p) })
	}
	w.mu.Unlock()
	if slices.Contains(evict, s) && !s.isDead() {
		r.log.Warn("a parked interpreter holds more than SKRIP_RUNNER_WARM_MEMORY allows; given up", "modules", s.key, "memory", runner.HumanBytes(mem))
	}
	for _, p := range evict {
		p.discard(r)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fellBack moves a run counted warm to the cold ones: its interpreter was gone.
func (w *warmPool) fellBack() {
	w.mu.Lock()
	w.warm--
	w.cold++
	w.mu.Unlock()
}

// stats implements runner.Warmer.
func (w *warmPool) stats() runner.WarmStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := runner.WarmStats{Budget: w.budget, Warm: w.warm, Cold: w.cold}
	for _, n := range w.coming {
		st.Coming += n
	}
	for _, s := range w.parked {
		select {
		case <-s.ready:
			st.Parked++
			st.Bytes += s.memory
		default:
			st.Coming++
		}
	}
	return st
}

// closeAll gives up every parked interpreter, for Close.
func (w *warmPool) closeAll(r *Runner) {
	w.mu.Lock()
	w.closed = true
	parked := w.parked
	w.parked = nil
	w.mu.Unlock()
	for _, s := range parked {
		s.discard(r)
	}
}

// WarmOnMachine counts the sandboxes on this machine that started warm for the server
// whose work directory this runner shares, and the memory they hold, from their cgroups
// (ok false: the limiter can't tell): parked ones, and any running its run now. `skrip
// doctor` shows it beside a running server.
func (r *Runner) WarmOnMachine() (n int, bytes int64, ok bool) { return r.limiter.usage("warm-") }

// WarmStats implements runner.Warmer.
func (r *Runner) WarmStats() runner.WarmStats { return r.warm.stats() }

var _ runner.Warmer = (*Runner)(nil)

// Prime implements runner.Warmer.
func (r *Runner) Prime(scripts []string, l runner.Limits) {
	for _, src := range scripts {
		r.warm.refill(r, runner.Imports([]byte(src)), l)
	}
}

// parkWarm makes a run's sandbox ahead of its run, with Python importing modules in it.
func (r *Runner) parkWarm(modules []string, l runner.Limits) (s *warmSandbox, err error) {
	name := "warm-" + randomHex(6)
	s = &warmSandbox{name: name, modules: modules, key: strings.Join(modules, ","), limits: l, ready: make(chan struct{}), dead: make(chan struct{}),
		scratch: filepath.Join(r.cfg.WorkDir, "runs", name)}
	defer func() {
		if err != nil {
			s.mounts.undo()
			os.RemoveAll(s.scratch)
		}
	}()
	if err := os.MkdirAll(filepath.Join(s.scratch, "output"), 0o755); err != nil {
		return nil, err
	}
	for _, f := range []string{"script.py", "memory.json"} {
		p := filepath.Join(s.scratch, f)
		if err := os.WriteFile(p, nil, 0o640); err != nil {
			return nil, err
		}
		if err := r.share(p, 0o040); err != nil {
			return nil, err
		}
	}
	input := filepath.Join(s.scratch, "input")
	if err := os.Mkdir(input, 0o750); err != nil {
		return nil, err
	}
	if err := r.share(input, 0o050); err != nil {
		return nil, err
	}
	if err := r.handOut(s.scratch); err != nil {
		return nil, err
	}
	src := s.scratch
	if r.view != "" {
		src = filepath.Join(r.view, "runs", name)
		if err := s.mounts.bind(s.scratch, src); err != nil {
			return nil, err
		}
	}
	// The output tmpfs is mounted on a directory of the view, not of the data dir, when
	// there is one: a server killed while this waits for its run (an idle server always
	// has sandboxes parked) leaves no mount point in the data dir, whose directories
	// could then not be removed.
	s.output = filepath.Join(s.scratch, "output")
	if r.view != "" && r.tmpfsOut {
		s.output = filepath.Join(r.view, "runs", name+".output")
		if err := os.Mkdir(s.output, 0o711); err != nil {
			return nil, err
		}
	}
	if err := r.mountOutput(s.output, l, &s.mounts); err != nil {
		if s.output != filepath.Join(s.scratch, "output") {
			os.Remove(s.output)
		}
		return nil, err
	}
	c, err := r.workArgs(src, filepath.Join(src, "input"), s.output, l)
	if err != nil {
		return nil, err
	}
	defer c.close()
	// Only what every run shares: the run's own variables come with its go message.
	c.args = setenv(c.args, runner.RunEnv("/tmp/home", shim.Bin, nil))
	c.command = append([]string{r.python, "-s", "-B", shim.Dir + "/skrip_warm.py", "--ready-fd", "6"}, modules...)
	opts := append([]string{"--json-status-fd", statusFD}, c.args...)
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, err
	}
	seccomp := c.files[0]
	c.files = nil
	pr, err := r.spawn(name, l, seccomp, c.command, runFsize(l), stdinR, []*os.File{readyW})
	stdinR.Close()
	if err != nil {
		stdinW.Close()
		readyR.Close()
		return nil, err
	}
	if err := r.release(pr, opts); err != nil {
		stdinW.Close()
		readyR.Close()
		pr.kill()
		return nil, err
	}
	s.pr, s.stdin = pr, stdinW
	go func() {
		// One byte once the modules are imported; EOF if Python died first (then the
		// sandbox is not ready, and its run would only find it dead).
		var b [1]byte
		if n, _ := readyR.Read(b[:]); n == 1 {
			close(s.ready)
		}
		readyR.Close()
		<-pr.exited
		close(s.dead)
	}()
	return s, nil
}

// discard ends a parked interpreter no run took, and removes its scratch directory.
func (s *warmSandbox) discard(r *Runner) {
	s.ended.Do(func() {
		s.stdin.Close()
		s.pr.kill()
		s.mounts.undo()
		os.RemoveAll(s.scratch)
	})
}

// errWarmDead means a warm sandbox's Python ended before its run came: the run starts
// cold instead.
var errWarmDead = errors.New("the warm interpreter ended before its run")

// runWarm runs spec in s: its files go into s's scratch directory, its environment to
// the waiting interpreter.
func (r *Runner) runWarm(ctx context.Context, s *warmSandbox, spec runner.Spec) (runner.Result, error) {
	start := time.Now()
	defer func() {
		s.mounts.undo()
		os.RemoveAll(s.scratch)
	}()
	// One still importing is waited for within the run's wall time: the run would have
	// imported the same modules itself. Past it, the run timed out.
	timeout := time.NewTimer(spec.Limits.WallTime)
	defer timeout.Stop()
	giveUp := func() {
		s.stdin.Close()
		s.pr.kill()
	}
	select {
	case <-s.ready:
	case <-s.dead:
		giveUp()
		return runner.Result{}, errWarmDead
	case <-timeout.C:
		giveUp()
		return runner.Result{ExecResult: runner.ExecResult{ExitCode: 137, TimedOut: true, Duration: time.Since(start)}}, nil
	case <-ctx.Done():
		giveUp()
		return runner.Result{ExecResult: runner.ExecResult{ExitCode: 137, Duration: time.Since(start)}}, nil
	}
	if s.isDead() {
		giveUp()
		return runner.Result{}, errWarmDead
	}
	if err := r.fillWarm(s, spec); err != nil {
		s.stdin.Close()
		s.pr.kill()
		return runner.Result{}, err
	}
	msg, err := json.Marshal(map[string]any{"env": runner.RunEnv("/tmp/home", shim.Bin, spec.Env)})
	if err == nil {
		_, err = s.stdin.Write(msg)
	}
	if cerr := s.stdin.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// Nothing of the tool ran: the interpreter was gone (EPIPE), so a cold start
		// takes the run.
		r.log.Warn("a parked interpreter could not be handed its run", "error", err)
		s.pr.kill()
		return runner.Result{}, errWarmDead
	}
	ex, err := r.wait(ctx, s.pr, spec.Limits, spec.OnLine, start)
	res := runner.Result{ExecResult: ex}
	if err != nil {
		return res, err
	}
	return res, r.collect(s.scratch, s.output, spec, &res)
}

// fillWarm writes spec's script and memory over s's empty ones (in place: the sandbox
// mounted those files) and puts its input files into s's input directory: linked when
// they are on the same file system, else copied.
func (r *Runner) fillWarm(s *warmSandbox, spec runner.Spec) error {
	for f, body := range map[string][]byte{"script.py": spec.Script, "memory.json": runner.MemoryJSON(spec.Memory)} {
		if err := os.WriteFile(filepath.Join(s.scratch, f), body, 0); err != nil {
			return err
		}
	}
	if err := r.shareTree(spec.InputDir); err != nil {
		return fmt.Errorf("letting the sandbox read its input: %w", err)
	}
	dst := filepath.Join(s.scratch, "input")
	return filepath.WalkDir(spec.InputDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(spec.InputDir, p)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, 0o750); err != nil {
				return err
			}
			return r.share(to, 0o050)
		case d.Type().IsRegular():
			if err := os.Link(p, to); err == nil {
				return nil
			} else if !errors.Is(err, os.ErrPermission) && !isCrossDevice(err) {
				return err
			}
			return r.copyInput(p, to)
		}
		return nil // the input holds only files and directories
	})
}

// copyInput copies the input file p to to, readable by the sandbox.
func (r *Runner) copyInput(p, to string) error {
	in, err := os.Open(p)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return r.share(to, 0o040)
}

func isCrossDevice(err error) bool { return errors.Is(err, syscall.EXDEV) }
