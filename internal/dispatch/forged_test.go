package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// forge makes JetStream send data on subject the ways a worker can make it, whatever
// its permissions (TestWorkerCannotDeliverAsAnother): a push consumer of a stream it
// writes, with subject as its deliver subject, and a direct get of that stream with
// subject as its reply, and the PubAck of a publish. It returns once a plain subscriber got both: the handlers on
// subject were given them too.
func forge(t *testing.T, url, subject string, data any) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, _ := jetstream.New(nc)
	name := "FORGED_" + nuid.Next()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	defer js.DeleteStream(context.Background(), name)
	b, ok := data.([]byte)
	if !ok {
		b, _ = json.Marshal(data)
	}
	if _, err := js.Publish(ctx, name+".x", b); err != nil {
		t.Fatal(err)
	}
	seen, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	defer seen.Unsubscribe()
	nc.Flush()
	req := fmt.Sprintf(`{"stream_name":%q,"config":{"name":"push","deliver_subject":%q,"ack_policy":"none"}}`, name, subject)
	if _, err := nc.Request("$JS.API.CONSUMER.CREATE."+name+".push", []byte(req), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+name, subject, []byte(`{"last_by_subj":"`+name+`.x"}`)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		m, err := seen.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("forged delivery %d of 2 on %s: %v", i+1, subject, err)
		}
		if !protocol.Forged(m, false) {
			t.Fatalf("a forged delivery on %s (reply %q, header %v) does not look forged", subject, m.Reply, m.Header)
		}
	}
	// A publish whose PubAck goes to subject: no reply and no header, but none of the
	// worker's bytes either; each handler checks what it reads.
	if err := nc.PublishRequest(name+".y", subject, b); err != nil {
		t.Fatal(err)
	}
	if _, err := seen.NextMsg(5 * time.Second); err != nil {
		t.Fatalf("the PubAck on %s: %v", subject, err)
	}
}

// TestForgedDeliveriesDropped: what a worker makes JetStream deliver in another
// worker's name or an API node's reaches the API node's handlers and is dropped there:
// a record of another worker's run, an output line in its run, a status change. A
// record in the name of a worker that does not hold the run makes no bucket for it.
func TestForgedDeliveriesDropped(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0)
	ctx := context.Background()
	ubc, r := queuedRun(t, b)
	fake := newFakeWorker(t, c.nats)
	id, attempt, answer := fake.claim(t)
	if id != r.RunID || attempt != 1 || answer != protocol.Go {
		t.Fatalf("claim: %s, %d, %s", id, attempt, answer)
	}
	_, sub := b.App.Runs.Subscribe(r.RunID, true)
	defer sub.Close()
	time.Sleep(300 * time.Millisecond) // the node watches the run's lines

	// In the holder's name: before the fix the node read the holder's bucket, found no
	// report, and recorded the run failed.
	forgedAt := time.Now()
	forge(t, c.nats, protocol.Names{}.RecordSubject("fake"), protocol.Record{Run: r.RunID, Attempt: 1, Worker: "fake",
		ReportKey: protocol.AttemptPrefix(r.RunID, 1) + "report.json"})
	forge(t, c.nats, protocol.Names{}.OutSubject("fake", r.RunID), protocol.Line{Attempt: 1, Seq: 1, Type: "stdout", Data: "forged line"})
	forge(t, c.nats, protocol.Names{}.StatusSubject(r.RunID), protocol.Status{Node: "another node", Status: "forged status"})

	// The real line and status after them, so that the handlers were live.
	line, _ := json.Marshal(protocol.Line{Attempt: 1, Seq: 2, Type: "stdout", Data: "real line"})
	fake.nc.Publish(protocol.Names{}.OutSubject("fake", r.RunID), line)
	status, _ := json.Marshal(protocol.Status{Node: "another node", Status: "real status"})
	fake.nc.Publish(protocol.Names{}.StatusSubject(r.RunID), status)
	var got []run.Event
	deadline := time.After(10 * time.Second)
	for len(got) < 2 {
		select {
		case <-sub.Ready():
			got = append(got, sub.Take()...)
		case <-deadline:
			t.Fatalf("the real line and status did not arrive: %+v", got)
		}
	}
	time.Sleep(200 * time.Millisecond)
	got = append(got, sub.Take()...)
	for _, e := range got {
		if e.Data == "forged line" || e.Data == "forged status" {
			t.Errorf("a forged delivery reached the run's viewers: %+v", e)
		}
	}
	// A record waits up to 7.5 s for a report that is missing (getPatiently).
	time.Sleep(time.Until(forgedAt.Add(9 * time.Second)))
	if g, _ := b.App.Store.GetRun(ctx, r.RunID); g.Status != store.StatusRunning || g.Worker != "fake" {
		t.Errorf("after the forged record: %s (%s), worker %q", g.Status, g.ErrorSummary, g.Worker)
	}
	if rr, _ := ubc.GetRun(ctx, r.RunID, 0); rr.Status != "running" {
		t.Errorf("the user sees the run %s", rr.Status)
	}

	// A record in the name of a worker that holds nothing, asked as a worker asks.
	if got := fake.ask(t, protocol.Names{}.RecordSubject("ghost"), protocol.Record{Run: r.RunID, Attempt: 1, Worker: "ghost",
		ReportKey: protocol.AttemptPrefix(r.RunID, 1) + "report.json"}); got != protocol.Stale {
		t.Fatalf("a record of a worker that holds nothing was answered %q", got)
	}
	js, _ := jetstream.New(fake.nc)
	if _, err := js.Stream(ctx, "OBJ_"+protocol.WorkerBucket(b.Config.NATSWorkBucket, "ghost")); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("a record of a worker that holds nothing made its bucket: %v", err)
	}
}

// TestForgedDeliveriesDroppedByWorkers: what a worker makes JetStream deliver on
// another worker's subjects reaches that worker's handlers and is dropped there: an exec
// and a remove in a user's sandbox, a cancel of the run it holds.
func TestForgedDeliveriesDroppedByWorkers(t *testing.T) {
	c := newCluster(t)
	a := c.node(t, 0, boxWait)
	startWorker(t, c, "wf")
	uac, _ := a.User(t, "sara", "user")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sb, err := uac.CreateSandbox(ctx, client.SandboxOptions{Limits: &client.SandboxLimits{WorkspaceBytes: 16 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := a.App.Store.Sandbox(ctx, sb.SandboxID); err != nil || rec.Node != "wf" {
		t.Fatalf("the sandbox lives on %q (%v), want wf", rec.Node, err)
	}
	forge(t, c.nats, protocol.Names{}.BoxSubject("wf", protocol.OpExec), protocol.BoxRequest{Call: "forged", Box: sb.SandboxID,
		Exec: &protocol.BoxExec{Cmd: []string{"sh", "-c", "echo forged > forged.txt"}, Timeout: 10 * time.Second}})
	time.Sleep(2 * time.Second) // what the worker would do, it does within this
	res, err := uac.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sh", "-c", "ls"}})
	if err != nil || res.ExitCode != 0 || strings.Contains(res.Stdout, "forged") {
		t.Errorf("after a forged exec, the sandbox: %+v, %v", res, err)
	}

	// A run the worker holds, and a forged cancel of it: it runs to its end.
	if _, _, err := a.Admin.CreateTool(ctx, "counter", "Counter", "", counterTool, true); err != nil {
		t.Fatal(err)
	}
	r, err := uac.RunFiles(ctx, "counter", nil, map[string]any{"sleep": 3}, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, uac, r.RunID, "running")
	forge(t, c.nats, protocol.Names{}.CancelSubject("wf"), []byte(r.RunID))
	if got := waitFinal(t, uac, r.RunID); got.Status != "succeeded" {
		t.Errorf("after a forged cancel the run is %s (%v)", got.Status, got.ErrorSummary)
	}

	forge(t, c.nats, protocol.Names{}.BoxSubject("wf", protocol.OpRemove), protocol.BoxRequest{Call: "forged-rm", Box: sb.SandboxID})
	time.Sleep(2 * time.Second)
	if res, err := uac.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Errorf("after a forged remove, the sandbox: %+v, %v", res, err)
	}
}

// waitFinal waits for run id to end.
func waitFinal(t *testing.T, c *client.Client, id string) client.Run {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		r, err := c.GetRun(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch r.Status {
		case "succeeded", "failed", "cancelled":
			return r
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("run %s never ended", id)
	return client.Run{}
}
