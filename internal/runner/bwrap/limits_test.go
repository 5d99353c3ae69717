package bwrap

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestParkedRunsKeepTheirLimits: on cgroup v1 a run takes a bwrap parked in cgroups of its
// own ahead of time, with the limits of the run before it; the run's own limits are what
// hold (smaller memory and pids limits, then larger ones again), and Close ends the
// parked bwraps.
func TestParkedRunsKeepTheirLimits(t *testing.T) {
	r := newRunner(t).(*Runner)
	if r.Limiter() != "cgroup v1" {
		t.Skip("cgroup v1 not available: run the tests as root on a cgroup v1 host")
	}
	if o := runnertest.Exec(t, r, "def run_tool(i, o):\n    return 'ok'\n", nil, nil, runnertest.Limits()); o.Parsed.Status != "succeeded" {
		t.Fatalf("first run: %+v", o.Parsed)
	}
	parked := func() []int {
		r.parking.mu.Lock()
		defer r.parking.mu.Unlock()
		var pids []int
		for _, pr := range r.parking.procs {
			pids = append(pids, pr.cmd.Process.Pid)
		}
		return pids
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(parked()) < parkMax && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(parked()); n != parkMax {
		t.Fatalf("%d bwraps parked after a run, want %d", n, parkMax)
	}

	small := runnertest.Limits()
	small.MemoryBytes, small.Pids = 64<<20, 8
	o := runnertest.Exec(t, r, `
import os, time
def run_tool(input_dir, output_dir):
    n = 0
    for _ in range(64):
        try:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            n += 1
        except OSError:
            break
    blocks = []
    try:
        for _ in range(128):
            blocks.append(bytearray(1 << 20))
    except MemoryError:
        pass
    return {"outputs": [{"kind": "json", "value": {"forked": n, "mib": len(blocks)}}]}
`, nil, nil, small)
	r.parking.mu.Lock()
	served := r.parking.served
	r.parking.mu.Unlock()
	if served == 0 {
		t.Fatal("the second run did not take a parked bwrap")
	}
	if o.Parsed.Status == "succeeded" {
		v := o.Parsed.Outputs[0].Value.(map[string]any)
		if v["forked"].(float64) >= float64(small.Pids) || v["mib"].(float64) >= 64 {
			t.Fatalf("under 64 MiB and 8 pids, the run forked %v and allocated %v MiB", v["forked"], v["mib"])
		}
	} else if !o.Result.OOMKilled {
		t.Fatalf("the run failed, but not for memory: %+v %s", o.Result, o.Result.Stderr)
	}

	// Once every parked bwrap has the small limits, one serves a run with the larger ones.
	for range parkMax {
		for len(parked()) < parkMax && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if o := runnertest.Exec(t, r, "def run_tool(i, o):\n    return 'ok'\n", nil, nil, small); o.Parsed.Status != "succeeded" {
			t.Fatalf("a no-op run under the small limits: %+v", o.Parsed)
		}
	}
	for len(parked()) < parkMax && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r.parking.mu.Lock()
	served = r.parking.served
	r.parking.mu.Unlock()
	big := runnertest.Exec(t, r, "def run_tool(i, o):\n    b = bytearray(160 << 20)\n    return 'ok'\n", nil, nil, runnertest.Limits())
	r.parking.mu.Lock()
	servedBig := r.parking.served
	r.parking.mu.Unlock()
	if big.Parsed.Status != "succeeded" || servedBig != served+1 {
		t.Fatalf("160 MiB under 256 MiB after a run under 64 MiB: %+v (parked bwraps served %d runs, want %d) %s", big.Parsed, servedBig, served+1, big.Result.Stderr)
	}

	pids := parked()
	r.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("parked bwrap %d still runs after Close", pid)
		}
	}
}

// BenchmarkCgroupV1Move times what parking takes off a run's path (park.go): moving a
// process into a cgroup v1 after the machine made no such move for 50 ms, which waits for
// an RCU grace period, against a move right after another one.
//
//	go test -run XXX -bench CgroupV1Move ./internal/runner/bwrap
func BenchmarkCgroupV1Move(b *testing.B) {
	v, err := newV1("bench" + strconv.Itoa(os.Getpid()))
	if err != nil {
		b.Skip("cgroup v1 not available: run as root on a cgroup v1 host")
	}
	defer v.close()
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	var groups [2]group
	for i := range groups {
		if groups[i], err = v.start("move"+strconv.Itoa(i), runnertest.Limits()); err != nil {
			b.Fatal(err)
		}
	}
	defer func() {
		v.(v1).sweep()
	}()
	for _, idle := range []time.Duration{50 * time.Millisecond, 0} {
		b.Run("after "+idle.String()+" idle", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				time.Sleep(idle)
				b.StartTimer()
				if err := groups[i%2].enter(sleeper.Process.Pid); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOptionWithNULRefused: bwrap reads its options from a pipe, NUL-separated, so an
// option holding a NUL would reach it as several options (here a --setenv value that
// carries a --bind of the host's root). Such a command line is refused, as exec refused
// it when the options were bwrap's argv.
func TestOptionWithNULRefused(t *testing.T) {
	r := newRunner(t).(*Runner)
	c := &cmdline{}
	if err := r.baseArgs(c); err != nil {
		t.Fatal(err)
	}
	c.args = append(c.args, "--setenv", "X", "a\x00--bind\x00/\x00/host")
	c.command = []string{"/bin/sh", "-c", "test -e /host/proc && echo escaped; true"}
	res, err := r.execute(context.Background(), process{name: "nul-" + randomHex(4), cmd: c, limits: runnertest.Limits()})
	if err == nil {
		t.Fatalf("a NUL in an option was passed on: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}
