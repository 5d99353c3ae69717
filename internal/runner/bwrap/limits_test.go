package bwrap

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/runner/runnertest"
)

// limitsSeen runs a tool that returns the lines of /proc/self/limits named in want, and
// returns them joined.
func limitsSeen(t *testing.T, r *Runner, names ...string) string {
	t.Helper()
	script := "def run_tool(i, o):\n    want = " + pyList(names) + "\n" +
		"    return '|'.join(' '.join(l.split()) for l in open('/proc/self/limits') if any(l.startswith(w) for w in want))\n"
	o := runnertest.Exec(t, r, script, nil, nil, runnertest.Limits())
	if o.Parsed.Status != "succeeded" || len(o.Parsed.Outputs) != 1 {
		t.Fatalf("run: %+v, stderr %s", o.Parsed, o.Result.Stderr)
	}
	return o.Parsed.Outputs[0].HTML
}

func pyList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = "'" + x + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// TestRlimitsEitherWay: the run's rlimits (RLIMIT_FSIZE at the output limit, and
// RLIMIT_AS at the memory limit on the rlimits fallback) are the same whether the server
// sets them on the waiting bwrap (prlimit) or a shell sets them before it execs bwrap (a
// root server without CAP_SYS_RESOURCE, or a setuid bwrap).
func TestRlimitsEitherWay(t *testing.T) {
	l := runnertest.Limits()
	fsize := "Max file size " + itoa((l.OutputBytes+511)/512*512) + " " + itoa((l.OutputBytes+511)/512*512) + " bytes"
	as := "Max address space " + itoa(l.MemoryBytes/1024*1024) + " " + itoa(l.MemoryBytes/1024*1024) + " bytes"
	for _, tc := range []struct {
		name    string
		shell   bool
		rlimits bool // the rlimits limiter instead of the machine's cgroups
	}{
		{"prlimit", false, false},
		{"shell", true, false},
		{"prlimit, rlimits limiter", false, true},
		{"shell, rlimits limiter", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunner(t).(*Runner)
			if !tc.shell && !mayPrlimit(r.bwrap, r.drop) {
				// Without CAP_SYS_RESOURCE, root may still set the limits of a bwrap
				// that runs as root: the same path, without the uid switch.
				r.drop, r.uid, r.gid = false, os.Getuid(), os.Getgid()
			}
			r.shellLimits = tc.shell
			if tc.rlimits {
				r.limiter = rlimits{}
			}
			got := limitsSeen(t, r, "Max file size", "Max address space")
			if !strings.Contains(got, fsize) {
				t.Errorf("limits %q, want %q", got, fsize)
			}
			if tc.rlimits != strings.Contains(got, as) {
				t.Errorf("limits %q: address space limited %v, want %v (%q)", got, !tc.rlimits, tc.rlimits, as)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestFavorDynmods: on cgroup v1, a root server holds a favordynmods hierarchy of its own
// while the runner is open (so that moving a run into its cgroups does not wait for an
// RCU grace period), and unmounts it on Close.
func TestFavorDynmods(t *testing.T) {
	r := newRunner(t).(*Runner)
	if r.Limiter() != "cgroup v1" || !r.drop {
		t.Skip("cgroup v1 not available to a root server: run the tests as root on a cgroup v1 host")
	}
	if r.dynmods == "" {
		t.Skip("favordynmods not available: Linux 6.0 or later")
	}
	if !mounted(t, r.dynmods, "favordynmods") {
		t.Fatalf("%s is not a favordynmods cgroup mount", r.dynmods)
	}
	if res := runnertest.Exec(t, r, "def run_tool(i, o):\n    return 'ok'\n", nil, nil, runnertest.Limits()); res.Parsed.Status != "succeeded" {
		t.Fatalf("a run beside it: %+v", res.Parsed)
	}
	r.Close()
	if mounted(t, r.dynmods, "") {
		t.Errorf("%s is still mounted after Close", r.dynmods)
	}
	if _, err := os.Stat(r.dynmods); !os.IsNotExist(err) {
		t.Errorf("%s is left: %v", r.dynmods, err)
	}
}

func mounted(t *testing.T, dir, option string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[1] == dir && strings.Contains(f[3], option) {
			return true
		}
	}
	return false
}
