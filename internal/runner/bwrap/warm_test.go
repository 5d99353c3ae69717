package bwrap

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/runnertest"
)

// warmed is a bwrap Runner whose every run is served by a parked interpreter: before
// each run it parks one for the run's modules and waits until it is ready.
type warmed struct {
	*Runner
	t *testing.T
}

func (w warmed) Run(ctx context.Context, spec runner.Spec) (runner.Result, error) {
	before := w.WarmStats().Warm
	primeWarm(w.t, w.Runner, spec)
	res, err := w.Runner.Run(ctx, spec)
	// > rather than ==: the suite's concurrent case runs two at once.
	if after := w.WarmStats().Warm; after <= before {
		w.t.Errorf("the run was not served warm (%d warm runs before, %d after)", before, after)
	}
	return res, err
}

// primeWarm parks an interpreter for spec and waits until it is ready.
func primeWarm(t *testing.T, r *Runner, spec runner.Spec) {
	t.Helper()
	modules := runner.Imports(spec.Script)
	deadline := time.Now().Add(time.Minute)
	for {
		r.warm.mu.Lock()
		ready := false
		for _, s := range r.warm.parked {
			select {
			case <-s.ready:
				ready = ready || (sameLimits(spec.Limits, s.limits) && runner.Covers(modules, s.modules) && s.key == strings.Join(modules, ","))
			default:
			}
		}
		r.warm.mu.Unlock()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warm interpreter for %v became ready in a minute", modules)
		}
		r.warm.refill(r, modules, spec.Limits)
		time.Sleep(20 * time.Millisecond)
	}
}

func newWarmRunner(t *testing.T, rootfs string) *Runner {
	t.Helper()
	r, err := New(Config{WorkDir: t.TempDir(), Rootfs: rootfs, WarmMemory: 1 << 30}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestConformanceWarm runs the whole conformance suite with every run served by a
// parked interpreter, on the runner rootfs: a warm start behaves as a cold one.
func TestConformanceWarm(t *testing.T) {
	rootfs := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if rootfs == "" {
		t.Skip("covered on the host's /usr by TestWarmIsolation; SKRIP_TEST_RUNNER_ROOTFS runs the suite") // scripts/test.sh sets it
	}
	runnertest.Run(t, func(t *testing.T) runner.Runner { return warmed{newWarmRunner(t, rootfs), t} })
}

// TestWarmIsolation shows that a warm interpreter started without any run's values (so
// nothing it imported ahead could read them), that it then has exactly its run's, and
// that nothing one run sets shows in the next.
func TestWarmIsolation(t *testing.T) {
	r := newWarmRunner(t, os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"))
	w := warmed{r, t}
	const tool = `
import json, os, sys
WARM = "json" in sys.modules  # the shim itself never imports json: a cold start has not
def run_tool(input_dir, output_dir):
    with open("/proc/self/environ", "rb") as f:
        started = sorted(v.split(b"=", 1)[0].decode() for v in f.read().split(b"\0") if v)
    seen = {
        "warm": WARM,
        "started_with": [k for k in started if k.startswith("SKRIPTOTEKET_")],
        "inputs": os.environ.get("SKRIPTOTEKET_INPUTS"),
        "leak_env": os.environ.get("LEAK"),
        "leak_module": getattr(json, "LEAK", None),
        "leak_tmp": os.path.exists("/tmp/leak"),
        "files": sorted(os.listdir(input_dir)),
        "stdin": sys.stdin.read(),
        "argv": sys.argv,
        "main": sys.modules["__main__"].__file__,
        "cwd": os.getcwd(),
    }
    os.environ["LEAK"] = "1"
    json.LEAK = "1"
    open("/tmp/leak", "w").close()
    return {"outputs": [{"kind": "json", "value": seen}]}
`
	for i, secret := range []string{"first", "second"} {
		o := runnertest.Exec(t, w, tool, map[string]string{secret + ".txt": secret}, map[string]any{"secret": secret}, runnertest.Limits())
		v := runnertest.JSONValue(t, o)
		if v["warm"] != true {
			t.Errorf("run %d: not warm: %v", i, v)
		}
		if s := v["started_with"].([]any); len(s) != 0 {
			t.Errorf("run %d: Python started with %v: modules imported ahead could have read them", i, s)
		}
		if in, _ := v["inputs"].(string); !strings.Contains(in, secret) {
			t.Errorf("run %d: SKRIPTOTEKET_INPUTS %q", i, in)
		}
		if v["leak_env"] != nil || v["leak_module"] != nil || v["leak_tmp"] != false {
			t.Errorf("run %d sees what the run before it set: %v", i, v)
		}
		if files := v["files"].([]any); len(files) != 1 || files[0] != secret+".txt" {
			t.Errorf("run %d: input files %v", i, files)
		}
		if v["stdin"] != "" || v["cwd"] != "/work" || v["main"] != "/skrip/skrip_shim.py" || len(v["argv"].([]any)) != 1 || v["argv"].([]any)[0] != "/skrip/skrip_shim.py" {
			t.Errorf("run %d: stdin %q, cwd %v, __main__ %v, argv %v: not as in a cold start", i, v["stdin"], v["cwd"], v["main"], v["argv"])
		}
	}
	st := r.WarmStats()
	if st.Warm != 2 || st.Budget != 1<<30 {
		t.Errorf("WarmStats %+v, want 2 warm runs and the budget", st)
	}
}

// TestWarmOnlyWhatTheRunImports shows that a run never gets an interpreter that imported
// a module its script does not: it would hold memory a cold start does not.
func TestWarmOnlyWhatTheRunImports(t *testing.T) {
	r := newWarmRunner(t, os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"))
	heavy := runner.Spec{Script: []byte("import csv, json\n"), Limits: runnertest.Limits()}
	primeWarm(t, r, heavy)
	before := r.WarmStats()
	o := runnertest.Exec(t, r, "import csv\ndef run_tool(i, o):\n    return 'x'\n", nil, nil, runnertest.Limits())
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %s: %s", o.Parsed.Status, o.Result.Stderr)
	}
	after := r.WarmStats()
	if after.Warm != before.Warm || after.Cold != before.Cold+1 {
		t.Errorf("a run importing csv alone took the interpreter that imported csv and json: %+v then %+v", before, after)
	}
	if after.Parked < 1 || after.Bytes <= 0 {
		t.Errorf("the parked interpreter's memory is not known: %+v", after)
	}
}

// TestWarmPrime: Prime parks one interpreter per module set of the scripts given, and a
// run of one of those tools is then served warm.
func TestWarmPrime(t *testing.T) {
	r := newWarmRunner(t, os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"))
	lim := runnertest.Limits()
	r.Prime([]string{"import csv\n", "import json\nimport csv\n", "import csv, json\n", "print('no imports')\n"}, lim)
	deadline := time.Now().Add(time.Minute)
	for st := r.WarmStats(); st.Parked < 3 || st.Coming > 0; st = r.WarmStats() {
		if time.Now().After(deadline) {
			t.Fatalf("after Prime: %+v, want 3 parked (csv; csv,json; none)", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := r.WarmStats(); st.Parked != 3 {
		t.Fatalf("after Prime: %+v, want 3 parked: one per module set", st)
	}
	o := runnertest.Exec(t, r, "import json\nimport csv\ndef run_tool(i, o):\n    return 'x'\n", nil, nil, lim)
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %s: %s", o.Parsed.Status, o.Result.Stderr)
	}
	if st := r.WarmStats(); st.Warm != 1 || st.Cold != 0 {
		t.Errorf("the run of a primed tool: %+v", st)
	}
}

// TestWarmBudget: past SKRIP_RUNNER_WARM_MEMORY, the sets wanted longest ago make way.
func TestWarmBudget(t *testing.T) {
	r, err := New(Config{WorkDir: t.TempDir(), Rootfs: os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"), WarmMemory: 1}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.Prime([]string{"import csv\n"}, runnertest.Limits())
	time.Sleep(200 * time.Millisecond)
	if st := r.WarmStats(); st.Parked+st.Coming != 0 {
		t.Errorf("a 1-byte budget parked %+v", st)
	}
}

// TestWarmUnderPressure: none is parked while the machine's available memory is below
// twice the budget (here a budget no machine has).
func TestWarmUnderPressure(t *testing.T) {
	r, err := New(Config{WorkDir: t.TempDir(), Rootfs: os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"), WarmMemory: 1 << 50}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.Prime([]string{"import csv\n"}, runnertest.Limits())
	time.Sleep(200 * time.Millisecond)
	if st := r.WarmStats(); st.Parked+st.Coming != 0 {
		t.Errorf("parked under memory pressure: %+v", st)
	}
}

// TestWarmDiedAfterReady (a review's finding): a parked interpreter that died after it
// said it was ready (the host's OOM killer, say) does not fail the run that comes for
// it: the run starts cold, and is counted so.
func TestWarmDiedAfterReady(t *testing.T) {
	r := newWarmRunner(t, os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"))
	const tool = "import csv\ndef run_tool(i, o):\n    return 'x'\n"
	primeWarm(t, r, runner.Spec{Script: []byte(tool), Limits: runnertest.Limits()})
	r.warm.mu.Lock()
	killed := slices.Clone(r.warm.parked)
	r.warm.mu.Unlock()
	for _, s := range killed {
		syscall.Kill(-s.pr.cmd.Process.Pid, syscall.SIGKILL)
	}
	// It died before its run came (a death during the hand-off is the run's own end).
	for _, s := range killed {
		select {
		case <-s.dead:
		case <-time.After(time.Minute):
			t.Fatal("the killed sandbox was never seen to end")
		}
	}
	before := r.WarmStats()
	o := runnertest.Exec(t, r, tool, nil, nil, runnertest.Limits())
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("the run that came for a dead interpreter: %s %s", o.Parsed.Status, o.Result.Stderr)
	}
	if after := r.WarmStats(); after.Warm != before.Warm || after.Cold != before.Cold+1 {
		t.Errorf("counted as warm: %+v then %+v", before, after)
	}
}

// TestWarmDeadIsReplaced (a review's finding): an interpreter that died while importing
// leaves the pool with its scratch directory, and the next runs of its tool park a new
// one.
func TestWarmDeadIsReplaced(t *testing.T) {
	r := newWarmRunner(t, os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"))
	const tool = "import pandas\ndef run_tool(i, o):\n    return 'x'\n"
	l := runnertest.Limits()
	r.warm.refill(r, runner.Imports([]byte(tool)), l)
	var s *warmSandbox
	for deadline := time.Now().Add(time.Minute); s == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing was parked")
		}
		r.warm.mu.Lock()
		if len(r.warm.parked) > 0 {
			s = r.warm.parked[0]
		}
		r.warm.mu.Unlock()
	}
	syscall.Kill(-s.pr.cmd.Process.Pid, syscall.SIGKILL) // while it imports pandas
	select {
	case <-s.dead:
	case <-time.After(time.Minute):
		t.Fatal("the killed sandbox was never seen to end")
	}
	select {
	case <-s.ready:
		t.Fatal("pandas was imported before the kill: the test shows nothing")
	default:
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(s.scratch); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead interpreter's scratch directory %s is still there", s.scratch)
		}
	}
	o := runnertest.Exec(t, r, tool, nil, nil, l)
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %s: %s", o.Parsed.Status, o.Result.Stderr)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if st := r.WarmStats(); st.Parked == 1 && st.Coming == 0 {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after a run of its tool, no new interpreter was parked: %+v", st)
		}
	}
}

// TestWarmBudgetHolds (a review's finding): interpreters primed together never hold
// more than the budget once measured; the sets wanted longest ago make way.
func TestWarmBudgetHolds(t *testing.T) {
	const budget = 200 << 20
	r, err := New(Config{WorkDir: t.TempDir(), Rootfs: os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"), WarmMemory: budget}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	l := runnertest.Limits()
	l.MemoryBytes = 512 << 20
	heavy := "import pandas, numpy, weasyprint, docx, openpyxl, pypdf, jinja2\n"
	r.Prime([]string{heavy, heavy + "import csv\n", heavy + "import json\n", heavy + "import html\n"}, l)
	deadline := time.Now().Add(3 * time.Minute)
	for st := r.WarmStats(); st.Coming > 0 || st.Parked == 0; st = r.WarmStats() {
		if time.Now().After(deadline) {
			t.Fatalf("priming never settled: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := r.WarmStats(); st.Bytes > budget {
		t.Errorf("parked interpreters hold %s, over the budget %s: %+v", runner.HumanBytes(st.Bytes), runner.HumanBytes(budget), st)
	}
}

// TestWarmWallTimeOnce (a review's finding): a run that takes an interpreter still
// importing waits for it within its own wall time, and no more.
func TestWarmWallTimeOnce(t *testing.T) {
	r := newWarmRunner(t, os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"))
	const tool = "import pandas, weasyprint, docx, openpyxl, jinja2, pypdf\ndef run_tool(i, o):\n    return 'x'\n"
	l := runnertest.Limits()
	l.WallTime = 300 * time.Millisecond
	r.warm.refill(r, runner.Imports([]byte(tool)), l)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		r.warm.mu.Lock()
		n := len(r.warm.parked)
		r.warm.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing was parked")
		}
	}
	start := time.Now()
	res, err := r.Run(context.Background(), runner.Spec{ID: "r_walltime", Script: []byte(tool), InputDir: t.TempDir(), Limits: l})
	took := time.Since(start)
	if err != nil || !res.TimedOut {
		t.Fatalf("a run whose imports outlast its wall time: %+v, %v", res.ExecResult, err)
	}
	if took > l.WallTime+time.Second {
		t.Errorf("a run with a %v wall time took %v", l.WallTime, took)
	}
}
