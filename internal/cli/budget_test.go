package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// `skrip doctor` shows the memory budget of the sandboxes' workspaces beside the
// machine's memory; `skrip serve` with a budget the machine cannot hold refuses to start
// and says which setting to change, and `skrip doctor` says so too.
func TestMemoryBudgetInDoctorAndServe(t *testing.T) {
	mem, err := runner.HostMemory()
	if err != nil {
		t.Fatal(err)
	}
	doctor := func(vars map[string]string, wantCode int) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] }); code != wantCode {
			t.Fatalf("doctor: exit %d, want %d: %s", code, wantCode, errOut.String())
		}
		return out.String()
	}
	vars := map[string]string{"SKRIP_DATA_DIR": t.TempDir(), "SKRIP_RUNNER": "bwrap", "SKRIP_SANDBOX_MEMORY_BUDGET": "4GiB"}
	out := doctor(vars, 0)
	for _, want := range []string{"memory budget", "4 GiB for the /workspace of all sandboxes together (SKRIP_SANDBOX_MEMORY_BUDGET)", "room for 3 of 1 GiB", "65536 files and directories",
		"machine memory", mem.String()} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}

	tooMuch := fmt.Sprintf("%dGiB", mem.Bytes>>30+2)
	vars["SKRIP_SANDBOX_MEMORY_BUDGET"] = tooMuch
	// A budget serve refuses is a failed check: doctor exits 1.
	out = doctor(vars, 1)
	if !strings.Contains(out, "REFUSED") || !strings.Contains(out, "skrip serve refuses to start") {
		t.Errorf("doctor does not say the budget is refused:\n%s", out)
	}

	vars["SKRIP_ADDR"] = testutil.FreeAddr(t)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := Main(ctx, []string{"serve"}, strings.NewReader(""), &stdout, &stderr, func(k string) string { return vars[k] })
	if code == 0 {
		t.Fatal("skrip serve started with a budget over the machine's memory")
	}
	for _, want := range []string{"SKRIP_SANDBOX_MEMORY_BUDGET is " + strings.Replace(tooMuch, "GiB", " GiB", 1), "more than this machine can hold", mem.String(), "at most"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("serve's error lacks %q:\n%s", want, stderr.String())
		}
	}
}
