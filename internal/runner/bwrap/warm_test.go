package bwrap

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
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
