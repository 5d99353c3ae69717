package run

import (
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestJudgeErrorSource: the node that records a run says where its error came from, from
// what the report holds (a worker's, over the wire, or this node's): the worker's own
// failure and the limits are the runner's, a broken or missing result the policy's, a
// result.json's error_source the tool's or a crash; a cancelled run has none. Real runs
// give each of these in TestErrorSource; the report of a worker that could not fetch the
// run's files is here. Each failure but the tool's own message also gets its reason,
// with the parameters a page says it with (run.reason.<code> in the web's catalogues).
func TestJudgeErrorSource(t *testing.T) {
	lim := runner.Limits{WallTime: time.Minute, MemoryBytes: 256 << 20}
	result := func(json string) Report {
		return Report{Limits: lim, Result: runner.Result{ResultJSON: []byte(json)}}
	}
	tests := []struct {
		name         string
		rep          Report
		status, want string
		reason       string
	}{
		{"worker failure", Report{Limits: lim, Failure: "the worker could not fetch the run's files: see its log"}, store.StatusFailed, store.SourceRunner, `{"code":"sandbox"}`},
		{"timeout", Report{Limits: lim, Result: runner.Result{ExecResult: runner.ExecResult{TimedOut: true}}}, store.StatusTimedOut, store.SourceRunner, `{"code":"timed_out","params":{"limit":"60"}}`},
		{"memory", Report{Limits: lim, Result: runner.Result{ExecResult: runner.ExecResult{OOMKilled: true}}}, store.StatusFailed, store.SourceRunner, `{"code":"memory","params":{"limit":"256 MiB"}}`},
		{"no result", Report{Limits: lim, Result: runner.Result{ExecResult: runner.ExecResult{ExitCode: 1}}}, store.StatusFailed, store.SourcePolicy, `{"code":"no_result","params":{"exit_code":"1"}}`},
		{"broken result", result(`{"contract_version": 1}`), store.StatusFailed, store.SourcePolicy, `{"code":"violation"}`},
		{"forged source", result(`{"contract_version": 2, "status": "failed", "error_source": "runner"}`), store.StatusFailed, store.SourcePolicy, `{"code":"violation"}`},
		{"tool", result(`{"contract_version": 2, "status": "failed", "error_summary": "Ingen fil.", "error_source": "tool"}`), store.StatusFailed, store.SourceTool, ""},
		{"original format", result(`{"contract_version": 2, "status": "failed", "error_summary": "Ingen fil."}`), store.StatusFailed, store.SourceTool, ""},
		{"crash", result(`{"contract_version": 2, "status": "failed", "error_summary": "Tool execution failed (ValueError).", "error_source": "crash"}`), store.StatusFailed, store.SourceCrash, `{"code":"crash"}`},
		{"input", result(`{"contract_version": 2, "status": "failed", "error_summary": "Ingen kolumn Namn.", "error_source": "input", "error_field": "klasslista"}`), store.StatusFailed, store.SourceInput, `{"code":"input","params":{"field":"klasslista"}}`},
		{"input without a field", result(`{"contract_version": 2, "status": "failed", "error_summary": "Fel.", "error_source": "input"}`), store.StatusFailed, store.SourceTool, ""},
		{"succeeded", result(`{"contract_version": 2, "status": "succeeded"}`), store.StatusSucceeded, "", ""},
		{"cancelled", Report{Limits: lim, Stopped: StopCancelled}, store.StatusCancelled, "", ""},
		{"shut down", Report{Limits: lim, Stopped: StopShutdown}, store.StatusCancelled, "", ""},
	}
	r := store.Run{ID: "r_1", Context: "default", Kind: store.KindInitial}
	for _, tc := range tests {
		out := judge(r, tc.rep, contract.DefaultPolicy())
		if out.status != tc.status || out.source != tc.want {
			t.Errorf("%s: %s from %q (%q); want %s from %q", tc.name, out.status, out.source, out.summary, tc.status, tc.want)
		}
		if got := out.reason.String(); got != tc.reason {
			t.Errorf("%s: reason %s; want %s", tc.name, got, tc.reason)
		}
	}
}
