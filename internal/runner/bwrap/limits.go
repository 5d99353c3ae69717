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
	// start makes the per-run group, which the sandbox's host uid:gid owner (-1: the
	// server's own) may join. Its join makes a command start inside the group, so that
	// no child is ever outside it.
	start(id string, l runner.Limits, owner [2]int) (group, error)
	enforced(l runner.Limits) []runner.Enforced
	// sweep removes per-run groups a crashed server left behind.
	sweep()
	// close sweeps and removes this server's own parent groups.
	close()
}

type group interface {
	join(cmd *exec.Cmd)
	oomKilled() bool
	destroy() error
}

// joinScript is run by /bin/sh: it writes its own pid into each cgroup.procs file given
// before "--", then execs the rest. It runs as the sandbox's uid, which owns those files.
const joinScript = `while [ "$1" != "--" ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"`

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

func (v v2) start(id string, l runner.Limits, owner [2]int) (group, error) {
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
	writes := [][2]string{{"memory.max", strconv.FormatInt(l.MemoryBytes, 10)}, {"memory.swap.max", "0"}, {"pids.max", strconv.Itoa(l.Pids)}}
	if l.CPUs > 0 {
		writes = append(writes, [2]string{"cpu.max", fmt.Sprintf("%d 100000", int64(l.CPUs*100000))})
	}
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0); err != nil && !(w[0] == "memory.swap.max" || w[0] == "cpu.max") {
			g.destroy()
			return nil, fmt.Errorf("setting %s: %w", w[0], err)
		}
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

func (g *v2group) oomKilled() bool {
	return counter(filepath.Join(g.dir, "memory.events"), "oom_kill") > 0
}

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

func (v v1) start(id string, l runner.Limits, owner [2]int) (group, error) {
	g := &v1group{}
	type w struct{ file, value string }
	plan := []struct {
		root   string
		writes []w
	}{
		{v.memory, []w{{"memory.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)}, {"memory.memsw.limit_in_bytes", strconv.FormatInt(l.MemoryBytes, 10)}, {"memory.swappiness", "0"}}},
		{v.pids, []w{{"pids.max", strconv.Itoa(l.Pids)}}},
	}
	if v.cpu != "" && l.CPUs > 0 {
		plan = append(plan, struct {
			root   string
			writes []w
		}{v.cpu, []w{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", strconv.FormatInt(int64(l.CPUs*100000), 10)}}})
	}
	for _, p := range plan {
		dir := filepath.Join(p.root, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.destroy()
			return nil, fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		g.dirs = append(g.dirs, dir)
		// The sandbox's uid joins the group itself (see joinScript); writing its pid
		// there takes no more than owning the file, in cgroup v1.
		if err := os.Chown(filepath.Join(dir, "cgroup.procs"), owner[0], owner[1]); err != nil {
			g.destroy()
			return nil, fmt.Errorf("handing cgroup %s to the sandbox's uid: %w", dir, err)
		}
		for _, wr := range p.writes {
			err := os.WriteFile(filepath.Join(dir, wr.file), []byte(wr.value), 0)
			// memsw exists only with swap accounting; swappiness is advisory.
			if err != nil && wr.file != "memory.memsw.limit_in_bytes" && wr.file != "memory.swappiness" {
				g.destroy()
				return nil, fmt.Errorf("setting %s: %w", wr.file, err)
			}
		}
		if p.root == v.memory {
			g.memory = dir
		}
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
	dirs   []string
	memory string
}

func (g *v1group) join(cmd *exec.Cmd) {
	prefix := []string{"/bin/sh", "-c", joinScript, "sh"}
	for _, d := range g.dirs {
		prefix = append(prefix, filepath.Join(d, "cgroup.procs"))
	}
	wrap(cmd, append(prefix, "--"))
}

func (g *v1group) oomKilled() bool {
	if g.memory == "" {
		return false
	}
	return counter(filepath.Join(g.memory, "memory.oom_control"), "oom_kill") > 0
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

func (rlimits) sweep() {}
func (rlimits) close() {}

func (rlimits) start(id string, l runner.Limits, owner [2]int) (group, error) {
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

func (r rgroup) join(cmd *exec.Cmd) {
	wrap(cmd, []string{"/bin/sh", "-c", fmt.Sprintf("ulimit -v %d || exit 125; exec \"$@\"", r.l.MemoryBytes/1024), "sh"})
}

func (rgroup) oomKilled() bool { return false }
func (rgroup) destroy() error  { return nil }

// --- helpers ---

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
