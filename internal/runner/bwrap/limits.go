package bwrap

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skrip-dev/skrip/internal/runner"
)

// limiter puts a run's processes under memory, pids and CPU limits. There are three:
// cgroup v2 where the server's cgroup has the controllers delegated, cgroup v1 where its
// controllers are mounted, and rlimits as the last resort.
type limiter interface {
	name() string
	// start makes the per-run group.
	start(id string, l runner.Limits) (group, error)
	enforced(l runner.Limits) []runner.Enforced
	// sweep removes per-run groups a crashed server left behind.
	sweep()
	// close sweeps and removes this server's own parent groups.
	close()
	// usage sums the memory of this server's groups whose names start with prefix,
	// and counts them (ok false: this limiter can't tell).
	usage(prefix string) (n int, bytes int64, ok bool)
}

// A group's process is a bwrap that waits for its options on a pipe (park.go): whatever
// the group does before bwrap is handed them, bwrap has not started anything yet, so no
// child of it is ever outside the group or its limits.
type group interface {
	// join prepares cmd, before it starts, to start inside the group (cgroup v2).
	join(cmd *exec.Cmd)
	// enter puts pid, the started bwrap still waiting for its options, into the group
	// (cgroup v1), as the server.
	enter(pid int) error
	// rlimits are the per-process limits the group needs beside its own.
	rlimits() []rlimit
	oomKilled() bool
	// memory is what the group's processes hold now (0: not known).
	memUsage() int64
	destroy() error
}

// pickLimiter chooses the best limiter this machine offers. ns names this server's
// groups (a hash of its work dir), so that sweeping never touches another server's runs.
func pickLimiter(ns string) limiter {
	if l, err := newV2(ns); err == nil {
		return l
	}
	if l, err := newV1(ns); err == nil {
		return l
	}
	return rlimits{}
}

// --- cgroup v2 ---

type v2 struct{ base, ns string }

func newV2(ns string) (limiter, error) {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		return nil, err
	}
	self, err := selfCgroupV2()
	if err != nil {
		return nil, err
	}
	base := filepath.Join("/sys/fs/cgroup", self)
	ctl, err := os.ReadFile(filepath.Join(base, "cgroup.subtree_control"))
	if err != nil {
		return nil, err
	}
	have := strings.Fields(string(ctl))
	for _, want := range []string{"memory", "pids"} {
		if !contains(have, want) {
			return nil, fmt.Errorf("cgroup v2 controller %s is not delegated to %s", want, base)
		}
	}
	probe := filepath.Join(base, "skrip-probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(probe, 0o755); err != nil {
		return nil, err
	}
	os.Remove(probe)
	return v2{base: base, ns: ns}, nil
}

func selfCgroupV2() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("no cgroup v2 entry in /proc/self/cgroup")
}

func (v v2) name() string { return "cgroup v2" }

func (v v2) close() { v.sweep() }

func (v v2) sweep() {
	old, _ := filepath.Glob(filepath.Join(v.base, "skrip-"+v.ns+"-*"))
	for _, d := range old {
		os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0)
		removeCgroup(d)
	}
}

func (v v2) usage(prefix string) (int, int64, bool) {
	dirs, _ := filepath.Glob(filepath.Join(v.base, "skrip-"+v.ns+"-"+prefix+"*"))
	var sum int64
	for _, d := range dirs {
		sum += readInt(filepath.Join(d, "memory.current"))
	}
	return len(dirs), sum, true
}

func (v v2) start(id string, l runner.Limits) (group, error) {
	dir := filepath.Join(v.base, "skrip-"+v.ns+"-"+id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		removeCgroup(dir)
		return nil, fmt.Errorf("opening cgroup %s: %w", dir, err)
	}
	g := &v2group{dir: dir, fd: os.NewFile(uintptr(fd), dir)}
	if err := g.set(l); err != nil {
		g.destroy()
		return nil, err
	}
	return g, nil
}

func (v v2) enforced(l runner.Limits) []runner.Enforced {
	cpu := runner.Enforced{Limit: "cpu", How: "cgroup v2 cpu.max", OK: true}
	if ctl, _ := os.ReadFile(filepath.Join(v.base, "cgroup.subtree_control")); !contains(strings.Fields(string(ctl)), "cpu") {
		cpu = runner.Enforced{Limit: "cpu", How: "not enforced (cgroup v2 cpu controller not delegated)"}
	}
	return []runner.Enforced{
		{Limit: "memory", How: "cgroup v2 memory.max (" + runner.HumanBytes(l.MemoryBytes) + ", no swap)", OK: true},
		{Limit: "pids", How: fmt.Sprintf("cgroup v2 pids.max (%d)", l.Pids), OK: true},
		cpu,
	}
}

type v2group struct {
	dir string
	fd  *os.File // the cgroup's directory
}

// join makes cmd a clone straight into the cgroup (CLONE_INTO_CGROUP), done by the
// server before cmd drops to the sandbox's uid: moving itself later would take write
// access to the cgroup.procs of the server's own cgroup.
func (g *v2group) join(cmd *exec.Cmd) {
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(g.fd.Fd())
}

// set writes l's limits into the group.
func (g *v2group) set(l runner.Limits) error {
	writes := [][2]string{{"memory.max", strconv.FormatInt(l.MemoryBytes, 10)}, {"memory.swap.max", "0"}, {"pids.max", strconv.Itoa(l.Pids)}}
	if l.CPUs > 0 {
		writes = append(writes, [2]string{"cpu.max", fmt.Sprintf("%d 100000", int64(l.CPUs*100000))})
	}
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(g.dir, w[0]), []byte(w[1]), 0); err != nil && !(w[0] == "memory.swap.max" || w[0] == "cpu.max") {
			return fmt.Errorf("setting %s: %w", w[0], err)
		}
	}
	return nil
}

func (g *v2group) enter(pid int) error { return nil }
func (g *v2group) rlimits() []rlimit   { return nil }

func (g *v2group) oomKilled() bool {
	return counter(filepath.Join(g.dir, "memory.events"), "oom_kill") > 0
}

func (g *v2group) memUsage() int64 { return readInt(filepath.Join(g.dir, "memory.current")) }

func (g *v2group) destroy() error {
	g.fd.Close()
	os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	return removeCgroup(g.dir)
}

// --- cgroup v1 ---

type v1 struct{ memory, pids, cpu string }

func newV1(ns string) (limiter, error) {
	l := v1{}
	for _, c := range []struct {
		ctl string
		dst *string
	}{{"memory", &l.memory}, {"pids", &l.pids}, {"cpu", &l.cpu}} {
		root := filepath.Join("/sys/fs/cgroup", c.ctl)
		if _, err := os.Stat(filepath.Join(root, "cgroup.procs")); err != nil {
			continue
		}
		dir := filepath.Join(root, "skrip", ns)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			continue
		}
		*c.dst = dir
	}
	if l.memory == "" || l.pids == "" {
		return nil, errors.New("cgroup v1 memory and pids controllers are not both writable")
	}
	return l, nil
}

func (v v1) name() string { return "cgroup v1" }

func (v v1) close() {
	v.sweep()
	for _, root := range []string{v.memory, v.pids, v.cpu} {
		if root != "" {
			os.Remove(root)
		}
	}
}

func (v v1) sweep() {
	for _, root := range []string{v.memory, v.pids, v.cpu} {
		if root == "" {
			continue
		}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.IsDir() {
				removeCgroup(filepath.Join(root, e.Name()))
			}
		}
	}
}

func (v v1) usage(prefix string) (int, int64, bool) {
	dirs, _ := filepath.Glob(filepath.Join(v.memory, prefix+"*"))
	var sum int64
	for _, d := range dirs {
		sum += readInt(filepath.Join(d, "memory.usage_in_bytes"))
	}
	return len(dirs), sum, true
}

func (v v1) start(id string, l runner.Limits) (group, error) {
	g := &v1group{}
	for _, c := range []struct {
		root string
		dst  *string
	}{{v.memory, &g.memory}, {v.pids, &g.pids}, {v.cpu, &g.cpu}} {
		if c.root == "" || (c.root == v.cpu && l.CPUs <= 0) {
			continue
		}
		dir := filepath.Join(c.root, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.destroy()
			return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		g.dirs = append(g.dirs, dir)
		*c.dst = dir
	}
	if err := g.set(l); err != nil {
		g.destroy()
		return nil, err
	}
	return g, nil
}

func (v v1) enforced(l runner.Limits) []runner.Enforced {
	out := []runner.Enforced{
		{Limit: "memory", How: "cgroup v1 memory.limit_in_bytes (" + runner.HumanBytes(l.MemoryBytes) + ")", OK: true},
		{Limit: "pids", How: fmt.Sprintf("cgroup v1 pids.max (%d)", l.Pids), OK: true},
	}
	if v.cpu != "" {
		return append(out, runner.Enforced{Limit: "cpu", How: fmt.Sprintf("cgroup v1 cpu.cfs_quota_us (%g CPU)", l.CPUs), OK: true})
	}
	return append(out, runner.Enforced{Limit: "cpu", How: "not enforced (no writable cgroup v1 cpu controller)"})
}

type v1group struct {
	dirs              []string
	memory, pids, cpu string // the group's cgroup of each controller ("": none)
}

// set writes l's limits into the group's cgroups. A group made for a run without a CPU
// limit has no cpu cgroup.
func (g *v1group) set(l runner.Limits) error {
	type w struct{ dir, file, value string }
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	// memsw may never be below the memory limit: raising a parked group's limits takes
	// memsw first, lowering them takes it last; the write that does not fit fails, and
	// memsw's errors are not fatal.
	writes := []w{
		{g.memory, "memory.memsw.limit_in_bytes", mem},
		{g.memory, "memory.limit_in_bytes", mem},
		{g.memory, "memory.memsw.limit_in_bytes", mem},
		{g.memory, "memory.swappiness", "0"},
		{g.pids, "pids.max", strconv.Itoa(l.Pids)},
	}
	if l.CPUs > 0 {
		writes = append(writes, w{g.cpu, "cpu.cfs_period_us", "100000"}, w{g.cpu, "cpu.cfs_quota_us", strconv.FormatInt(int64(l.CPUs*100000), 10)})
	}
	for _, wr := range writes {
		if wr.dir == "" {
			continue
		}
		err := os.WriteFile(filepath.Join(wr.dir, wr.file), []byte(wr.value), 0)
		// memsw exists only with swap accounting; swappiness is advisory.
		if err != nil && wr.file != "memory.memsw.limit_in_bytes" && wr.file != "memory.swappiness" {
			return fmt.Errorf("setting %s: %w", wr.file, err)
		}
	}
	return nil
}

func (g *v1group) join(cmd *exec.Cmd) {}
func (g *v1group) rlimits() []rlimit  { return nil }

// enter writes pid into each cgroup.procs: the server may (it is root, or the sandbox
// runs as the server's own uid).
func (g *v1group) enter(pid int) error {
	for _, d := range g.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("moving the sandbox into cgroup %s: %w", d, err)
		}
	}
	return nil
}

func (g *v1group) oomKilled() bool {
	if g.memory == "" {
		return false
	}
	return counter(filepath.Join(g.memory, "memory.oom_control"), "oom_kill") > 0
}

func (g *v1group) memUsage() int64 {
	if g.memory == "" {
		return 0
	}
	return readInt(filepath.Join(g.memory, "memory.usage_in_bytes"))
}

func (g *v1group) destroy() error {
	var errs []error
	for _, d := range g.dirs {
		errs = append(errs, removeCgroup(d))
	}
	return errors.Join(errs...)
}

// --- rlimits, the last resort ---

type rlimits struct{}

func (rlimits) name() string { return "rlimits" }

func (rlimits) sweep()                          {}
func (rlimits) usage(string) (int, int64, bool) { return 0, 0, false }
func (rlimits) close()                          {}

func (rlimits) start(id string, l runner.Limits) (group, error) {
	return rgroup{l: l}, nil
}

func (rlimits) enforced(l runner.Limits) []runner.Enforced {
	return []runner.Enforced{
		{Limit: "memory", How: "RLIMIT_AS per process (" + runner.HumanBytes(l.MemoryBytes) + "); no cgroup available", OK: true},
		{Limit: "pids", How: "not enforced (no cgroup pids controller)"},
		{Limit: "cpu", How: "not enforced (no cgroup cpu controller)"},
	}
}

type rgroup struct{ l runner.Limits }

func (r rgroup) join(cmd *exec.Cmd) {}

// enter sets nothing: execute applies the group's rlimits.
func (r rgroup) enter(pid int) error { return nil }

func (r rgroup) rlimits() []rlimit {
	return []rlimit{{unix.RLIMIT_AS, "-v", uint64(r.l.MemoryBytes / 1024 * 1024)}}
}

func (rgroup) oomKilled() bool { return false }
func (rgroup) memUsage() int64 { return 0 }
func (rgroup) destroy() error  { return nil }

// --- helpers ---

// rlimit is a process limit: its resource, the shell's `ulimit` flag for it, and its
// value in bytes.
type rlimit struct {
	res   int
	flag  string
	bytes uint64
}

// set makes l the soft and hard limit of process pid, as `ulimit` does.
func (l rlimit) set(pid int) error {
	if err := unix.Prlimit(pid, l.res, &unix.Rlimit{Cur: l.bytes, Max: l.bytes}, nil); err != nil {
		return fmt.Errorf("setting the sandbox's ulimit %s: %w", l.flag, err)
	}
	return nil
}

// shell is l as a `ulimit` command (in KiB, or 512-byte blocks for -f).
func (l rlimit) shell() string {
	unit := uint64(1024)
	if l.flag == "-f" {
		unit = 512
	}
	return fmt.Sprintf("ulimit %s %d || exit 125; ", l.flag, l.bytes/unit)
}

// readInt reads a cgroup file that holds one number (0 when it can't).
func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// counter reads "name value" from a flat-keyed cgroup file.
func counter(path, name string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == name {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// removeCgroup kills what is left in a cgroup and removes it, retrying while the kernel
// still counts exiting processes.
func removeCgroup(dir string) error {
	deadline := time.Now().Add(5 * time.Second)
	// The kernel releases a cgroup a moment after its last process exits: retry soon,
	// then less often.
	wait := 500 * time.Microsecond
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		err := os.Remove(dir)
		if err == nil || os.IsNotExist(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 20*time.Millisecond)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
