package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/runnertest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// warmed is a Docker Runner whose every run is served by a container with Python
// started: before each run it parks one for the run's modules and waits until it is
// ready.
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

// primeWarm parks a container for spec and waits until its Python is ready.
func primeWarm(t *testing.T, r *Runner, spec runner.Spec) {
	t.Helper()
	modules := runner.Imports(spec.Script)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		r.warm.mu.Lock()
		ready := false
		for _, s := range r.warm.parked {
			select {
			case <-s.ready:
				ready = ready || (sameLimits(spec.Limits, s.limits) && s.key == strings.Join(modules, ","))
			default:
			}
		}
		r.warm.mu.Unlock()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warm container for %v became ready in two minutes", modules)
		}
		r.warm.refill(r, modules, spec.Limits)
		time.Sleep(50 * time.Millisecond)
	}
}

func newWarmRunner(t *testing.T) *Runner {
	t.Helper()
	r, err := New(context.Background(), Config{Image: testImage(), Server: t.Name(), WarmMemory: 1 << 30}, slog.New(slog.DiscardHandler))
	if errors.Is(err, runner.ErrUnavailable) {
		testutil.Missing(t, "docker", err.Error(), "a running Docker engine and `skrip runner-image build`")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestConformanceWarm runs the whole conformance suite with every run served by a
// container whose Python was started ahead of it: a warm start behaves as a cold one.
func TestConformanceWarmPython(t *testing.T) {
	runnertest.Run(t, func(t *testing.T) runner.Runner { return warmed{newWarmRunner(t), t} })
}

// TestWarmIsolation shows that a warm container's Python started without any run's
// values (so nothing it imported ahead could read them), that it then has exactly its
// run's, that the tool finds what a cold start finds, and that nothing one run sets
// shows in the next.
func TestWarmIsolation(t *testing.T) {
	r := newWarmRunner(t)
	w := warmed{r, t}
	const tool = `
import json, os, sys
with open("/proc/self/cmdline", "rb") as f:
    WARM = b"skrip_warm.py" in f.read()  # the one thing a warm start cannot hide
def run_tool(input_dir, output_dir):
    with open("/proc/self/environ", "rb") as f:
        started = sorted(v.split(b"=", 1)[0].decode() for v in f.read().split(b"\0") if v)
    seen = {
        "warm": WARM,
        "started_with": [k for k in started if k.startswith("SKRIPTOTEKET_")],
        "inputs": os.environ.get("SKRIPTOTEKET_INPUTS"),
        "env": sorted(os.environ),
        "leak_env": os.environ.get("LEAK"),
        "leak_module": getattr(json, "LEAK", None),
        "leak_tmp": os.path.exists("/tmp/leak"),
        "tmp": sorted(os.listdir("/tmp")),
        "skrip": sorted(os.listdir("/work/.skrip")),
        "files": sorted(os.listdir(input_dir)),
        "stdin": sys.stdin.read(),
        "fds": sorted(os.listdir("/proc/self/fd")),
        "argv": sys.argv,
        "main": sys.modules["__main__"].__file__,
        "cwd": os.getcwd(),
    }
    os.environ["LEAK"] = "1"
    json.LEAK = "1"
    open("/tmp/leak", "w").close()
    return {"outputs": [{"kind": "json", "value": seen}]}
`
	// A cold start on the same engine, to compare with.
	cold := runnertest.JSONValue(t, runnertest.Exec(t, r, tool, map[string]string{"x.txt": "x"}, nil, runnertest.Limits()))
	if cold["warm"] != false || cold["stdin"] != "" {
		t.Fatalf("the first run was served warm, or its stdin was not empty: %v", cold)
	}
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
		if v["stdin"] != "" || v["cwd"] != "/work" || v["main"] != "/work/.skrip/skrip_shim.py" || len(v["argv"].([]any)) != 1 || v["argv"].([]any)[0] != "/work/.skrip/skrip_shim.py" {
			t.Errorf("run %d: stdin %q, cwd %v, __main__ %v, argv %v: not as in a cold start", i, v["stdin"], v["cwd"], v["main"], v["argv"])
		}
		for _, k := range []string{"env", "tmp", "skrip", "fds"} {
			if got, want := fmt.Sprint(v[k]), fmt.Sprint(cold[k]); got != want {
				t.Errorf("run %d: %s %s, a cold start has %s", i, k, got, want)
			}
		}
	}
	st := r.WarmStats()
	if st.Warm != 2 || st.Budget != 1<<30 {
		t.Errorf("WarmStats %+v, want 2 warm runs and the budget", st)
	}
}

// TestWarmOnlyWhatTheRunImports shows that a run never gets a container whose Python
// imported a module its script does not: it would hold memory a cold start does not.
func TestWarmOnlyWhatTheRunImports(t *testing.T) {
	r := newWarmRunner(t)
	heavy := runner.Spec{Script: []byte("import csv, json\n"), Limits: runnertest.Limits()}
	primeWarm(t, r, heavy)
	before := r.WarmStats()
	o := runnertest.Exec(t, r, "import csv\ndef run_tool(i, o):\n    return 'x'\n", nil, nil, runnertest.Limits())
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %s: %s", o.Parsed.Status, o.Result.Stderr)
	}
	after := r.WarmStats()
	if after.Warm != before.Warm || after.Cold != before.Cold+1 {
		t.Errorf("a run importing csv alone took the container that imported csv and json: %+v then %+v", before, after)
	}
	deadline := time.Now().Add(time.Minute)
	for after.Bytes <= 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the engine's stats are read once it is ready
		after = r.WarmStats()
	}
	if after.Parked < 1 || after.Bytes <= 0 {
		t.Errorf("the parked container's memory is not known: %+v", after)
	}
}

// TestWarmDeadIsReplaced: a parked container that ends before its modules are imported
// is removed and no longer holds its module set's place, so the next run parks a new one.
func TestWarmDeadIsReplaced(t *testing.T) {
	r := newWarmRunner(t)
	modules, l := []string{"pandas"}, runnertest.Limits()
	r.warm.refill(r, modules, l)
	var s *warmBox
	for deadline := time.Now().Add(time.Minute); s == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no container parked in a minute")
		}
		r.warm.mu.Lock()
		if len(r.warm.parked) > 0 {
			s = r.warm.parked[0]
		}
		r.warm.mu.Unlock()
	}
	// Killed while pandas is being imported (seconds, beside the milliseconds this takes).
	if _, err := r.cli.ContainerKill(context.Background(), s.c.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.dead:
	case <-s.ready:
		t.Fatal("the container became ready before it was killed")
	case <-time.After(time.Minute):
		t.Fatal("the killed container was never noticed")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r.warm.mu.Lock()
		n := len(r.warm.parked)
		r.warm.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dead container still holds its place")
		}
	}
	primeWarm(t, r, runner.Spec{Script: []byte("import pandas\n"), Limits: l})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := r.cli.ContainerInspect(context.Background(), s.c.id, client.ContainerInspectOptions{}); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead container %s was not removed", s.c.id[:12])
		}
	}
}

// TestWarmEndedAfterReady: a run that takes a container whose Python was ready but which
// has ended since (as the engine's state reports, whenever its answer to the wait comes)
// starts cold instead, succeeds, and counts as cold.
func TestWarmEndedAfterReady(t *testing.T) {
	r := newWarmRunner(t)
	const tool = "import json\ndef run_tool(i, o):\n    return 'ok'\n"
	spec := runner.Spec{Script: []byte(tool), Limits: runnertest.Limits()}
	primeWarm(t, r, spec)
	// primeWarm's refills may have parked a second container: the ready one is killed,
	// and left the only one parked, so the run cannot take another.
	var s *warmBox
	for deadline := time.Now().Add(time.Minute); s == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("containers still being parked after a minute")
		}
		r.warm.mu.Lock()
		if len(r.warm.coming) == 0 {
			for _, p := range r.warm.parked {
				select {
				case <-p.ready:
					s = p
				default:
				}
			}
		}
		var others []*warmBox
		if s != nil {
			others = slices.DeleteFunc(r.warm.parked, func(p *warmBox) bool { return p == s })
			r.warm.parked = []*warmBox{s}
		}
		r.warm.mu.Unlock()
		for _, p := range others {
			p.discard(r)
		}
	}
	ctx := context.Background()
	if _, err := r.cli.ContainerKill(ctx, s.c.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		insp, err := r.cli.ContainerInspect(ctx, s.c.id, client.ContainerInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !insp.Container.State.Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed container still runs")
		}
	}
	// No wait for the engine's answer to the wait, which may come well after the state
	// shows the container exited: the run must notice it ended all the same.
	before := r.WarmStats()
	o := runnertest.Exec(t, r, tool, nil, nil, runnertest.Limits())
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %s (%s), exit %d: %s", o.Parsed.Status, o.Parsed.ErrorSummary, o.Result.ExitCode, o.Result.Stderr)
	}
	if after := r.WarmStats(); after.Warm != before.Warm || after.Cold != before.Cold+1 {
		t.Errorf("WarmStats %+v then %+v, want one more cold run", before, after)
	}
	r.warm.mu.Lock()
	defer r.warm.mu.Unlock()
	if slices.Contains(r.warm.parked, s) {
		t.Error("the run did not take the ended container")
	}
}

// frame is one frame of an attach stream: stream 1 is stdout, 2 stderr.
func frame(stream byte, s string) []byte {
	b := []byte{stream, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[4:], uint32(len(s)))
	return append(b, s...)
}

// TestWarmWatch: what Python writes before it is ready (an import's warning) reaches the
// run's output as in a cold start, the ready marker never does, and a stream that ends
// before the marker means the container is dead.
func TestWarmWatch(t *testing.T) {
	const marker = "skrip-ready-0123"
	for _, tc := range []struct {
		name           string
		frames         [][]byte
		ready          bool
		stdout, stderr string
	}{
		{"marker alone", [][]byte{frame(1, marker+"\n")}, true, "tool out\n", ""},
		{"warnings before", [][]byte{frame(2, "Warning: x\n"), frame(1, "half"), frame(1, marker+"\n")}, true, "halftool out\n", "Warning: x\n"},
		{"marker split", [][]byte{frame(1, marker[:5]), frame(1, marker[5:]+"\n")}, true, "tool out\n", ""},
		{"one frame", [][]byte{frame(1, "a\n"+marker+"\n")}, true, "a\ntool out\n", ""},
		{"died importing", [][]byte{frame(2, "Killed\n")}, false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in bytes.Buffer
			for _, f := range tc.frames {
				in.Write(f)
			}
			if tc.ready {
				in.Write(frame(1, "tool out\n")) // the run's own output, after the marker
			}
			s := &warmBox{c: &box{}, ready: make(chan struct{}), dead: make(chan struct{})}
			s.c.att.Reader = bufio.NewReader(&in)
			s.watch(marker)
			select {
			case <-s.ready:
				if !tc.ready {
					t.Fatal("ready without the marker")
				}
			case <-s.dead:
				if tc.ready {
					t.Fatal("dead although the marker came")
				}
				return
			}
			var stdout, stderr bytes.Buffer
			if _, err := stdcopy.StdCopy(&stdout, &stderr, io.MultiReader(bytes.NewReader(s.early), s.stream)); err != nil {
				t.Fatal(err)
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
}

// TestWarmBudgetCountsUnmeasured: containers being made, and parked ones not yet
// measured, count against SKRIP_RUNNER_WARM_MEMORY (at their set's last measured size, or
// a guess), and once they are measured the parked ones fit in it. Each of these holds
// about 100 MiB, more than the guess: four are more than the budget.
func TestWarmBudgetCountsUnmeasured(t *testing.T) {
	budget := int64(200 << 20)
	r, err := New(context.Background(), Config{Image: testImage(), Server: t.Name(), WarmMemory: budget}, slog.New(slog.DiscardHandler))
	if errors.Is(err, runner.ErrUnavailable) {
		testutil.Missing(t, "docker", err.Error(), "a running Docker engine and `skrip runner-image build`")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	r.Prime([]string{"import pandas\n", "import pandas, csv\n", "import pandas, json\n", "import pandas, html\n"}, runnertest.Limits())
	r.warm.mu.Lock()
	coming := 0
	for _, n := range r.warm.coming {
		coming += n
	}
	r.warm.mu.Unlock()
	if coming > 3 || coming == 0 {
		t.Errorf("Prime started %d containers; with a 64 MiB guess each, 3 fit in 200 MiB", coming)
	}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r.warm.mu.Lock()
		n, measured := len(r.warm.parked), 0
		for _, s := range r.warm.parked {
			if s.memory > 0 {
				measured++
			}
		}
		coming := len(r.warm.coming)
		r.warm.mu.Unlock()
		if coming == 0 && n > 0 && measured == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("parked %d, measured %d, coming %d", n, measured, coming)
		}
	}
	st := r.WarmStats()
	if st.Parked == 0 || st.Bytes > st.Budget {
		t.Errorf("%d parked containers hold %s, budget %s", st.Parked, runner.HumanBytes(st.Bytes), runner.HumanBytes(st.Budget))
	}
	// The size now known, a refill for another set counts it, not the guess.
	r.warm.mu.Lock()
	size, held := int64(0), r.warm.held()
	for _, n := range r.warm.sizes {
		size = max(size, n)
	}
	r.warm.mu.Unlock()
	if size <= warmGuess {
		t.Fatalf("a pandas container measured at %s, not more than the guess: the test shows nothing", runner.HumanBytes(size))
	}
	r.warm.refill(r, []string{"pandas", "yaml"}, runnertest.Limits())
	r.warm.mu.Lock()
	defer r.warm.mu.Unlock()
	if r.warm.held() > budget {
		t.Errorf("after a refill for another set %s are held or coming (before %s), budget %s", runner.HumanBytes(r.warm.held()), runner.HumanBytes(held), runner.HumanBytes(budget))
	}
}

// parkNeverReady parks a container for runs importing modules under l whose Python never
// becomes ready: its supervisor is the cold one, which prints nothing before its run.
func parkNeverReady(t *testing.T, r *Runner, modules []string, l runner.Limits) *warmBox {
	t.Helper()
	c, err := r.prepare(context.Background(), l, "", "")
	if err != nil {
		t.Fatal(err)
	}
	s := &warmBox{c: c, modules: modules, key: strings.Join(modules, ","), limits: l, ready: make(chan struct{}), dead: make(chan struct{})}
	go s.watch("skrip-ready-never")
	r.warm.mu.Lock()
	r.warm.parked = append(r.warm.parked, s)
	r.warm.mu.Unlock()
	t.Cleanup(func() { s.discard(r) })
	return s
}

// TestWarmImportsWithinWallTime: a run that takes a container still importing its
// modules waits for it only for its wall time, and then has timed out, as a cold start
// importing them would have; it does not start again cold with a whole wall time.
func TestWarmImportsWithinWallTime(t *testing.T) {
	r := newWarmRunner(t)
	l := runnertest.Limits()
	l.WallTime = 2 * time.Second
	s := parkNeverReady(t, r, []string{"json"}, l)
	before := r.WarmStats()
	began := time.Now()
	o := runnertest.Exec(t, r, "import json\ndef run_tool(i, o):\n    return 'ok'\n", nil, nil, l)
	took := time.Since(began)
	if !o.Result.TimedOut || o.Result.ExitCode == 0 || o.Result.ResultJSON != nil {
		t.Errorf("timed out %v, exit %d, result.json %q: want a run killed at its wall time", o.Result.TimedOut, o.Result.ExitCode, o.Result.ResultJSON)
	}
	if took < l.WallTime || took > l.WallTime+2*time.Second {
		t.Errorf("the run took %v with a wall time of %v", took, l.WallTime)
	}
	if o.Result.Duration < l.WallTime {
		t.Errorf("Duration %v, shorter than the wall time it ran out", o.Result.Duration)
	}
	if after := r.WarmStats(); after.Warm != before.Warm+1 || after.Cold != before.Cold {
		t.Errorf("WarmStats %+v then %+v, want one more warm run and no cold one", before, after)
	}
	select {
	case <-s.dead: // its attach stream closed: it was given up
	case <-time.After(10 * time.Second):
		t.Error("the container that did not become ready was not given up")
	}
}

// TestWarmDiesWhileAwaited: a container that ends while a run waits for its imports is
// given up, and the run starts cold, succeeds and counts as cold.
func TestWarmDiesWhileAwaited(t *testing.T) {
	r := newWarmRunner(t)
	l := runnertest.Limits()
	s := parkNeverReady(t, r, []string{"json"}, l)
	before := r.WarmStats()
	go func() {
		time.Sleep(500 * time.Millisecond)
		if _, err := r.cli.ContainerKill(context.Background(), s.c.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			t.Error(err)
		}
	}()
	began := time.Now()
	o := runnertest.Exec(t, r, "import json\ndef run_tool(i, o):\n    return 'ok'\n", nil, nil, l)
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %s (%s), exit %d: %s", o.Parsed.Status, o.Parsed.ErrorSummary, o.Result.ExitCode, o.Result.Stderr)
	}
	if took := time.Since(began); took > l.WallTime {
		t.Errorf("the run took %v: it waited for the dead container past its wall time %v", took, l.WallTime)
	}
	if after := r.WarmStats(); after.Warm != before.Warm || after.Cold != before.Cold+1 {
		t.Errorf("WarmStats %+v then %+v, want one more cold run", before, after)
	}
}
