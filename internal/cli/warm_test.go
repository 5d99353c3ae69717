package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestWarmStartsShow runs a tool twice through a server: the second run is served by
// the interpreter parked after the first, /metrics counts it and what the parked one
// holds, and doctor, on the server's data dir, finds that one parked.
func TestWarmStartsShow(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	env := apptest.Start(t, cfg)
	ctx := context.Background()
	const tool = "import csv, json\ndef run_tool(input_dir, output_dir):\n    return '<p>ok</p>'\n"
	if _, _, err := env.Admin.CreateTool(ctx, "warm", "Warm", "", tool, true); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		r, err := env.Admin.RunFiles(ctx, "warm", nil, nil, time.Minute)
		if err != nil || r.Status != "succeeded" {
			t.Fatalf("run: %+v %v", r, err)
		}
	}
	waitParked := func() {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); env.Metric(t, "skrip_runner_parked_interpreters") < 1; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no interpreter was parked after a run")
			}
		}
	}
	// Saving the tool checked its syntax in a sandbox, which started Python too: count
	// from here.
	// from here. (The check may have parked an interpreter for the tool's modules, so the
	// first run may be served warm already.)
	warm0, cold0 := env.Metric(t, "skrip_runner_warm_starts_total"), env.Metric(t, "skrip_runner_cold_starts_total")
	run()
	waitParked()
	warm1, cold1 := env.Metric(t, "skrip_runner_warm_starts_total"), env.Metric(t, "skrip_runner_cold_starts_total")
	if starts := warm1 - warm0 + cold1 - cold0; starts != 1 {
		t.Errorf("the first run started Python %v times", starts)
	}
	run()
	waitParked()
	if warm := env.Metric(t, "skrip_runner_warm_starts_total") - warm1; warm != 1 {
		t.Errorf("the second run was not served warm: %v warm starts", warm)
	}
	if b := env.Metric(t, "skrip_runner_parked_bytes"); b <= 0 {
		t.Errorf("skrip_runner_parked_bytes %v", b)
	}
	if b := env.Metric(t, "skrip_runner_parked_budget_bytes"); b != float64(cfg.RunnerWarmMemory) || b == 0 {
		t.Errorf("skrip_runner_parked_budget_bytes %v, want %d", b, cfg.RunnerWarmMemory)
	}

	parked := env.Metric(t, "skrip_runner_parked_interpreters")
	out := doctorWith(t, map[string]string{"SKRIP_RUNNER": "bwrap", "SKRIP_DATA_DIR": cfg.DataDir, "SKRIP_BWRAP_ROOTFS": cfg.BwrapRootfs})
	for _, want := range []string{"Warm starts on interpreters parked ahead of runs may hold 512 MiB (SKRIP_RUNNER_WARM_MEMORY)", fmt.Sprintf("parked now %d hold ", int(parked))} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	off := doctorWith(t, map[string]string{"SKRIP_RUNNER": "bwrap", "SKRIP_RUNNER_WARM_MEMORY": "0"})
	if !strings.Contains(off, "Warm starts off SKRIP_RUNNER_WARM_MEMORY is 0") {
		t.Errorf("doctor with warm starts off:\n%s", off)
	}
}
