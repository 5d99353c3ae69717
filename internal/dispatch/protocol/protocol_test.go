package protocol_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/runner"
)

// wireJSON is every message and subject as they were when the protocol left dispatch
// (issue 31): API nodes and workers of two versions meet during a rolling upgrade, so a
// field's name or tag, a subject or an answer changes only on purpose. The runner's
// own types inside them are the runner's to change: $LIMITS, $SPEC, $EXEC and $RESULT
// stand for their JSON.
var wireJSON = map[string]string{
	"input":      `{"name":"a.txt","sha256":"ab","bytes":3}`,
	"message":    `{"job":{"run":"r_1","tool":"t_1","script":"eA==","env":{"K":"v"},"memory":"e30=","limits":$LIMITS},"script":{"name":"script.py","sha256":"cd","bytes":1},"inputs":[{"name":"a.txt","sha256":"ab","bytes":3}]}`,
	"claim":      `{"run":"r_1","attempt":2,"worker":"w1"}`,
	"reply":      `{"answer":"go","error":"e"}`,
	"answers":    `["go","recorded","final","stale"]`,
	"record":     `{"run":"r_1","attempt":2,"worker":"w1","report_key":"k"}`,
	"lease":      `{"worker":"w1","runs":[{"run":"r_1","attempt":1,"worker":"w1"}]}`,
	"leasereply": `{"stale":["r_1"],"cancel":["r_2"]}`,
	"line":       `{"attempt":1,"seq":2,"type":"stdout","data":"d"}`,
	"backlog":    `{"lines":[{"attempt":1,"seq":1,"type":"stderr","data":"e"}],"full":true}`,
	"held":       `["held",{"lines":null,"attempt":2}]`,
	"status":     `{"node":"n1","status":"running"}`,
	"heartbeat":  `{"worker":"w1","host":"h","runner":"bwrap","concurrency":2,"busy":1,"runs":["r_1"],"sandboxes":["s_1"],"sandbox_budget":9,"version":"v","started":"2026-11-28T04:00:00Z","at":"2026-11-28T04:00:00Z"}`,
	"boxrequest": `{"call":"c","box":"s_1","spec":$SPEC,"exec":{"cmd":["ls"],"stdin":"aQ==","timeout":1000000000,"log_bytes":5,"lines":true},"path":"p","xfer":"x","if_idle":true}`,
	"boxreply":   `{"line":{"attempt":0,"seq":0,"type":"stdout","data":"l"},"error":{"kind":"path","message":"m","details":{"k":1}},"result":$EXEC,"size":4,"xfer":"x","busy":true,"boxes":["s_1"]}`,
	"ops":        `["create","exec","write","read","remove","boxes","cancel"]`,
	"report":     `{"result":$RESULT,"artifacts":[{"path":"output/a","name":"a","bytes":1,"sha256":"ab","key":"k","expired_at":"2026-11-28T05:00:00Z"}],"limits":$LIMITS,"failure":"f","stopped":"cancelled"}`,
	"stops":      `["cancelled","shutdown"]`,
	"subjects":   `["SKRIP_RUNS","workers","skrip-workers","skrip.jobs.r_1","skrip.api.claim.w1","skrip.api.record.w1","skrip.api.lease.w1","skrip.out.w1.r_1","skrip.w.w1.cancel","skrip.w.w1.sb.exec","skrip.w.w1.backlog","work/xfer/x","work/cas/ab","work/runs/r_1/a2/"]`,
	"listened":   `["skrip.jobs.*","skrip.api.claim.*","skrip.api.record.*","skrip.api.lease.*","skrip.st.*","skrip.st.r_1","skrip.out.*.r_1","skrip.out.","$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.SKRIP_RUNS.workers","api"]`,
	// SKRIP_NATS_PREFIX (issue 34): without one, the names above; with one, each asset's
	// own.
	"more":     `["skrip.api.kick","skrip.api.\u003e","skrip.w.w1.\u003e","skrip.st.","r_1","skrip-work"]`,
	"prefixed": `["p_1_SKRIP_RUNS","p_1-skrip-workers","p_1-skrip-keys","p_1-skrip-files","p_1.skrip.jobs.*","r_1","p_1.skrip.api.claim.w1","p_1.skrip.api.record.w1","p_1.skrip.api.lease.w1","p_1.skrip.api.\u003e","p_1.skrip.api.kick","p_1.skrip.out.w1.r_1","p_1.skrip.out.","p_1.skrip.st.r_1","p_1.skrip.st.","p_1.skrip.w.w1.\u003e","p_1.skrip.w.w1.cancel","p_1.skrip.w.w1.sb.exec","p_1.skrip.w.w1.backlog","$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.p_1_SKRIP_RUNS.workers"]`,
	"timing":   `[90000000000,5000000000,500000000,2]`,
	// Sealed run files and workers' own buckets (issue 31): fields only a message, claim
	// or reply of an API node or worker that seals carries.
	"sealed":  `{"job":{"run":"r_1","tool":"","script":null,"env":null,"limits":$LIMITS},"script":{"name":"","sha256":"","bytes":0},"inputs":null,"token":"t"}`,
	"claimed": `{"run":"r_1","attempt":1,"worker":"w1","token":"t"}`,
	"keys":    `{"answer":"go","keys":[{"sha256":"ab","key":"AQI="}]}`,
	"buckets": `["skrip-work-w-w1","work/sealed/eb9e07600bc82b4c23eb6bedf65ea13a8550c47b3a2c0dad8bf807788031284b","skrip-keys",21600000000000]`,
}

func TestWireUnchanged(t *testing.T) {
	runnerJSON := strings.NewReplacer("$LIMITS", marshal(t, runner.Limits{}), "$SPEC", marshal(t, runner.BoxSpec{}),
		"$EXEC", marshal(t, runner.ExecResult{}), "$RESULT", marshal(t, runner.Result{}))
	got := map[string]string{}
	show := func(name string, v any) { got[name] = marshal(t, v) }
	at := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	exp := at.Add(time.Hour)
	show("input", protocol.Input{Name: "a.txt", SHA256: "ab", Bytes: 3})
	show("message", protocol.Message{Job: runjob.Job{Run: "r_1", Tool: "t_1", Script: []byte("x"), Env: map[string]string{"K": "v"}, Memory: []byte("{}")},
		Script: protocol.Input{Name: "script.py", SHA256: "cd", Bytes: 1}, Inputs: []protocol.Input{{Name: "a.txt", SHA256: "ab", Bytes: 3}}})
	show("claim", protocol.Claim{Run: "r_1", Attempt: 2, Worker: "w1"})
	show("reply", protocol.Reply{Answer: protocol.Go, Error: "e"})
	show("answers", []string{protocol.Go, protocol.Recorded, protocol.Final, protocol.Stale})
	show("record", protocol.Record{Run: "r_1", Attempt: 2, Worker: "w1", ReportKey: "k"})
	show("lease", protocol.Lease{Worker: "w1", Runs: []protocol.Claim{{Run: "r_1", Attempt: 1, Worker: "w1"}}})
	show("leasereply", protocol.LeaseReply{Stale: []string{"r_1"}, Cancel: []string{"r_2"}})
	show("line", protocol.Line{Attempt: 1, Seq: 2, Type: "stdout", Data: "d"})
	show("backlog", protocol.Backlog{Lines: []protocol.Line{{Attempt: 1, Seq: 1, Type: "stderr", Data: "e"}}, Full: true})
	show("held", []any{protocol.Held, protocol.Backlog{Attempt: 2}})
	show("status", protocol.Status{Node: "n1", Status: "running"})
	show("heartbeat", protocol.Heartbeat{Worker: "w1", Host: "h", Runner: "bwrap", Concurrency: 2, Busy: 1, Runs: []string{"r_1"}, Sandboxes: []string{"s_1"},
		BoxBudget: 9, Version: "v", Started: at, At: at})
	show("boxrequest", protocol.BoxRequest{Call: "c", Box: "s_1", Spec: &runner.BoxSpec{}, Exec: &protocol.BoxExec{Cmd: []string{"ls"}, Stdin: []byte("i"), Timeout: time.Second, LogBytes: 5, Lines: true},
		Path: "p", Xfer: "x", IfIdle: true})
	show("boxreply", protocol.BoxReply{Line: &protocol.Line{Type: "stdout", Data: "l"}, Error: &protocol.BoxError{Kind: "path", Message: "m", Details: map[string]any{"k": 1}},
		Result: &runner.ExecResult{}, Size: 4, Xfer: "x", Busy: true, Boxes: []string{"s_1"}})
	show("ops", []string{protocol.OpCreate, protocol.OpExec, protocol.OpWrite, protocol.OpRead, protocol.OpRemove, protocol.OpBoxes, protocol.OpCancel})
	show("report", runjob.Report{Artifacts: []runjob.Artifact{{Path: "output/a", Name: "a", Bytes: 1, SHA256: "ab", Key: "k", ExpiredAt: &exp}},
		Failure: "f", Stopped: runjob.StopCancelled})
	show("stops", []string{runjob.StopCancelled, runjob.StopShutdown})
	var n protocol.Names // no prefix: the names every installation had before SKRIP_NATS_PREFIX
	show("subjects", []string{n.Stream(), protocol.Consumer, n.Registry(), n.JobSubject("r_1"), n.ClaimSubject("w1"), n.RecordSubject("w1"), n.LeaseSubject("w1"),
		n.OutSubject("w1", "r_1"), n.CancelSubject("w1"), n.BoxSubject("w1", "exec"), n.BacklogSubject("w1"), protocol.XferKey("x"), protocol.CASKey("ab"), protocol.AttemptPrefix("r_1", 2)})
	show("listened", []string{n.JobSubjects(), n.ClaimSubject("*"), n.RecordSubject("*"), n.LeaseSubject("*"),
		n.StatusSubject("*"), n.StatusSubject("r_1"), n.OutSubject("*", "r_1"), n.OutPrefix(), n.MaxDeliveries(), protocol.APIQueue})
	show("more", []string{n.KickSubject(), n.APIs(), n.WorkerSubjects("w1"), n.StatusPrefix(), n.JobOf("skrip.jobs.r_1"), n.Bucket("skrip-work")})
	p, err := protocol.NewNames("p_1")
	if err != nil {
		t.Fatal(err)
	}
	show("prefixed", []string{p.Stream(), p.Registry(), p.Keys(), p.Bucket("skrip-files"), p.JobSubjects(), p.JobOf("p_1.skrip.jobs.r_1"), p.ClaimSubject("w1"), p.RecordSubject("w1"),
		p.LeaseSubject("w1"), p.APIs(), p.KickSubject(), p.OutSubject("w1", "r_1"), p.OutPrefix(), p.StatusSubject("r_1"), p.StatusPrefix(), p.WorkerSubjects("w1"),
		p.CancelSubject("w1"), p.BoxSubject("w1", "exec"), p.BacklogSubject("w1"), p.MaxDeliveries()})
	show("timing", []time.Duration{protocol.RequestTimeout, protocol.HeartbeatEvery(30 * time.Second), protocol.HeartbeatEvery(time.Second), time.Duration(protocol.MaxDeliver)})

	show("sealed", protocol.Message{Job: runjob.Job{Run: "r_1"}, Token: "t"})
	show("claimed", protocol.Claim{Run: "r_1", Attempt: 1, Worker: "w1", Token: "t"})
	show("keys", protocol.Reply{Answer: protocol.Go, Keys: []protocol.InputKey{{SHA256: "ab", Key: []byte{1, 2}}}})
	show("buckets", []any{protocol.WorkerBucket("skrip-work", "w1"), protocol.SealedKey([]byte{1, 2}), n.Keys(), protocol.WorkerBucketTTL})

	for name, want := range wireJSON {
		if want = runnerJSON.Replace(want); got[name] != want {
			t.Errorf("%s is\n%s\non the wire, was\n%s", name, got[name], want)
		}
	}
	for name := range got {
		if _, ok := wireJSON[name]; !ok {
			t.Errorf("%s: no JSON to compare with", name)
		}
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBoxErrorKinds: a worker names each sandbox error it reports, the budget
// included, with its details, and the API node gets the same sentinel back.
func TestBoxErrorKinds(t *testing.T) {
	for _, sentinel := range []error{runner.ErrPath, runner.ErrNoFile, runner.ErrNoSpace, runner.ErrNoBox, runner.ErrNoSandboxes, protocol.ErrBudget} {
		be := protocol.BoxErrorOf(errs.New(sentinel, map[string]any{"budget_bytes": 7}, "refused: %s", "why"))
		if be.Kind == "" || be.Message != "refused: why" || be.Details["budget_bytes"] != 7 {
			t.Errorf("%v: reported as %+v", sentinel, be)
		}
		if !errors.Is(be.Sentinel(), sentinel) {
			t.Errorf("%v: kind %q names %v", sentinel, be.Kind, be.Sentinel())
		}
	}
	if be := protocol.BoxErrorOf(errs.New(protocol.ErrBudget, nil, "x")); be.Kind != "budget" {
		t.Errorf("the budget is reported as kind %q", be.Kind)
	}
	be := protocol.BoxErrorOf(fmt.Errorf("the disk broke"))
	if be.Kind != "" || be.Sentinel() != nil || be.Message != "the disk broke" {
		t.Errorf("an error for the log is reported as %+v", be)
	}
}

// TestPrefixChecked: a prefix that could not start a stream's, a bucket's or a
// subject's name is refused, with the rule in the error.
func TestPrefixChecked(t *testing.T) {
	for _, ok := range []string{"", "p", "Team_A", "a_1", "0x", strings.Repeat("a", protocol.MaxPrefix)} {
		if _, err := protocol.NewNames(ok); err != nil {
			t.Errorf("NewNames(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"a.b", "a b", "a*", "a>", "_INBOX", "$JS", "-a", "a-b", "skrip-work-w-x", "a/b", "a\tb", "ä", strings.Repeat("a", protocol.MaxPrefix+1)} {
		_, err := protocol.NewNames(bad)
		if err == nil || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("NewNames(%q) = %v, want an error about the prefix", bad, err)
		}
	}
}
