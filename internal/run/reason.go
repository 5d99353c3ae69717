package run

import (
	"encoding/json"
	"strconv"

	"github.com/skrip-dev/skrip/internal/store"
)

// Reason is why skrip's side, or a refusal of the user's input, failed a run: a code and
// its parameters, stored with the run (store.Run.ErrorReason) beside the English
// error_summary, so that a page says it in its own language (the web's catalogues hold
// run.reason.<code>). A run the tool's own message failed has none: that message is
// the tool's, shown as it is.
type Reason struct {
	Code   string            `json:"code"`
	Params map[string]string `json:"params,omitempty"`
}

// The reasons' codes.
const (
	ReasonTimedOut   = "timed_out"   // the wall-time limit; params limit (seconds)
	ReasonMemory     = "memory"      // the memory limit; params limit ("1 GiB")
	ReasonNoResult   = "no_result"   // the tool wrote no result.json; params exit_code
	ReasonViolation  = "violation"   // result.json broke the contract
	ReasonCrash      = "crash"       // an uncaught exception in the tool
	ReasonSandbox    = "sandbox"     // the sandbox or the run's files failed on skrip's side
	ReasonWorkerLost = "worker_lost" // the run's workers stopped answering
	ReasonNotQueued  = "not_queued"  // the server that took it stopped before it was queued
	ReasonRestart    = "restart"     // the server restarted while it ran
	ReasonInput      = "input"       // the tool refused the user's input in a field; params field
)

// NoticeOutputLimit is the reason of the notice that artifacts over the output limit
// were not kept (contract.Output.Reason); params limit, files, more (how many files
// beyond those listed, when some are) and total.
const NoticeOutputLimit = "output_limit"

// Codes are the reasons' codes, for the catalogues' test.
func Codes() []string {
	return []string{ReasonTimedOut, ReasonMemory, ReasonNoResult, ReasonViolation, ReasonCrash, ReasonSandbox,
		ReasonWorkerLost, ReasonNotQueued, ReasonRestart, ReasonInput}
}

// String is r as store.Run.ErrorReason holds it ("" for none).
func (r Reason) String() string {
	if r.Code == "" {
		return ""
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// ReasonOf is why run r failed, as it was stored; the zero Reason when it has none (the
// tool's own message, a run that did not fail, or one recorded before reasons were).
func ReasonOf(r store.Run) Reason {
	var out Reason
	if r.ErrorReason == "" || json.Unmarshal([]byte(r.ErrorReason), &out) != nil {
		return Reason{}
	}
	return out
}

// reason is a Reason of code with params given as name, value pairs.
func reason(code string, kv ...string) Reason {
	r := Reason{Code: code}
	for i := 0; i+1 < len(kv); i += 2 {
		if r.Params == nil {
			r.Params = map[string]string{}
		}
		r.Params[kv[i]] = kv[i+1]
	}
	return r
}

// Reasons for the cluster's side, which ends runs with End.
var (
	// WorkerLost is a run whose workers stopped answering.
	WorkerLost = reason(ReasonWorkerLost)
	// NotQueued is a run whose server stopped before it reached the queue.
	NotQueued = reason(ReasonNotQueued)
)

// itoa is n as a reason's parameter.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
