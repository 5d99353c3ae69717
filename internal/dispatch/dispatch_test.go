package dispatch_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// cluster is API nodes sharing one PostgreSQL schema and one nats-server.
type cluster struct {
	nats string
	db   string
}

func newCluster(t *testing.T) *cluster {
	return &cluster{nats: testutil.NATSServer(t), db: testutil.PostgresURL(t)}
}

// node starts an API node; with workers > 0 it executes that many runs at once too.
func (c *cluster) node(t *testing.T, workers int, tweak ...func(*config.Config)) *apptest.Env {
	t.Helper()
	cfg := apptest.Config(t, apptest.Backend{Blob: "nats"})
	cfg.DatabaseURL, cfg.NATSURL = c.db, c.nats
	cfg.RunnerConcurrency = workers
	cfg.RunAckWait = 2 * time.Second
	cfg.WorkerID = "w-" + filepath.Base(filepath.Dir(cfg.DataDir))
	for _, f := range tweak {
		f(&cfg)
	}
	return apptest.Start(t, cfg)
}

const counterTool = `
import os, time, skrip_toolkit as tk
ACTIONS = [{"action_id": "inc", "label": "Öka", "kind": "form", "fields": []}]
def run_tool(input_dir, output_dir):
    act = tk.action()
    files = sorted(f["name"] + ":" + open(f["path"]).read() for f in tk.input_files())
    print("files", files)
    if tk.inputs().get("sleep"):
        time.sleep(float(tk.inputs()["sleep"]))
    open(os.path.join(output_dir, "files.txt"), "w").write(",".join(files))
    n = 0 if act is None else act["state"]["n"] + 1
    return {"outputs": [{"kind": "json", "value": {"n": n, "files": files}}], "next_actions": ACTIONS, "state": {"n": n}}
`

func writeFiles(t *testing.T, files map[string]string) []string {
	dir := t.TempDir()
	var paths []string
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func jsonValue(t *testing.T, r client.Run) map[string]any {
	t.Helper()
	for _, o := range r.Outputs {
		if o.Kind == "json" {
			v, _ := o.Value.(map[string]any)
			return v
		}
	}
	t.Fatalf("run %s has no json output: %+v", r.RunID, r.Outputs)
	return nil
}

// TestClusterRun: a run submitted on an API node without workers executes on another
// node's worker, with its files, artifacts and session; its action and its cancel work
// from either node.
func TestClusterRun(t *testing.T) {
	c := newCluster(t)
	a := c.node(t, 1)
	b := c.node(t, 0)
	tool, _, err := b.Admin.CreateTool(context.Background(), "counter", "Counter", "", counterTool, true)
	if err != nil {
		t.Fatal(err)
	}
	ubc, u := b.User(t, "ulla", "user")
	uac := a.Client(t, u.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	r, err := ubc.RunFiles(ctx, "counter", writeFiles(t, map[string]string{"a.txt": "A", "b.txt": "B"}), nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "succeeded" || r.Attempts != 1 || r.StateRev == nil || *r.StateRev != 1 {
		t.Fatalf("run on node b: %s (%v), attempts %d, state_rev %v", r.Status, r.ErrorSummary, r.Attempts, r.StateRev)
	}
	if v := jsonValue(t, r); fmt.Sprint(v["n"]) != "0" || strings.Join(toStrings(v["files"]), ",") != "a.txt:A,b.txt:B" {
		t.Fatalf("the tool saw %v", v)
	}
	if r.Stdout == nil || !strings.Contains(*r.Stdout, "files") {
		t.Fatalf("stdout: %v", r.Stdout)
	}
	got, _ := a.App.Store.GetRun(ctx, r.RunID)
	if got.Worker != a.Config.WorkerID {
		t.Fatalf("the run was claimed by %q, want node a's worker %q", got.Worker, a.Config.WorkerID)
	}
	if len(r.Artifacts) != 1 {
		t.Fatalf("artifacts: %+v", r.Artifacts)
	}
	for _, cl := range []*client.Client{uac, ubc} {
		var buf bytes.Buffer
		if err := cl.DownloadArtifact(ctx, r.Artifacts[0], &buf); err != nil || buf.String() != "a.txt:A,b.txt:B" {
			t.Fatalf("artifact: %q, %v", buf.String(), err)
		}
	}

	// An action through node a: the session files and state, and state_rev moves once.
	ar, err := uac.StartAction(ctx, tool.ID, "default", "inc", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	done, err := uac.GetRun(ctx, ar.Run.RunID, time.Minute)
	if err != nil || done.Status != "succeeded" || done.StateRev == nil || *done.StateRev != 2 {
		t.Fatalf("action run: %+v, %v", done, err)
	}
	if v := jsonValue(t, done); fmt.Sprint(v["n"]) != "1" || strings.Join(toStrings(v["files"]), ",") != "a.txt:A,b.txt:B" {
		t.Fatalf("the action saw %v", v)
	}

	// Cancel through node b a run that runs on node a.
	long, err := ubc.RunFiles(ctx, "counter", nil, map[string]any{"sleep": 60}, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ubc, long.RunID, "running")
	if _, err := ubc.CancelRun(ctx, long.RunID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ended, err := uac.GetRun(ctx, long.RunID, 30*time.Second)
	if err != nil || ended.Status != "cancelled" {
		t.Fatalf("cancelled run: %s (%v), %v", ended.Status, ended.ErrorSummary, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the cancel took %v", d)
	}
}

// queuedRun publishes the counter tool on API node b and submits a run of it as a user,
// without waiting: with no worker in the cluster it stays queued.
func queuedRun(t *testing.T, b *apptest.Env) (*client.Client, client.Run) {
	t.Helper()
	if _, _, err := b.Admin.CreateTool(context.Background(), "counter", "Counter", "", counterTool, true); err != nil {
		t.Fatal(err)
	}
	ubc, _ := b.User(t, "ulla", "user")
	r, err := ubc.RunFiles(context.Background(), "counter", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ubc, r
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func waitStatus(t *testing.T, c *client.Client, id, status string) client.Run {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		r, err := c.GetRun(context.Background(), id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == status {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("run %s never became %s", id, status)
	return client.Run{}
}

// fakeWorker pulls run messages like a worker and claims them, then does what the test
// says: nothing more, as a worker that went silent.
type fakeWorker struct {
	nc   *nats.Conn
	cons jetstream.Consumer
	msg  protocol.Message // the last one claim fetched
	last jetstream.Msg    // its delivery
}

func newFakeWorker(t *testing.T, url string) *fakeWorker {
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	cons, err := js.Consumer(context.Background(), protocol.Names{}.Stream(), protocol.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	// A worker's heartbeat says it has a slot, and the scheduler sends a run only to a
	// slot. It is put under a name of its own: the tests of a lost worker need "fake",
	// the name it claims as, gone from the registry.
	kv, err := js.KeyValue(context.Background(), protocol.Names{}.Registry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	beating := make(chan struct{})
	t.Cleanup(func() { stop(); <-beating })
	go func() {
		defer close(beating)
		for ctx.Err() == nil {
			b, _ := json.Marshal(protocol.Heartbeat{Worker: "fake-slot", Concurrency: 1, At: time.Now()})
			kv.Put(ctx, "fake-slot", b)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return &fakeWorker{nc: nc, cons: cons}
}

// waitQueueEmpty waits up to 10 s for the run queue to hold no message.
func (f *fakeWorker) waitQueueEmpty(t *testing.T) {
	t.Helper()
	js, _ := jetstream.New(f.nc)
	stream, _ := js.Stream(context.Background(), protocol.Names{}.Stream())
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := stream.Info(context.Background())
		if err == nil && info.State.Msgs == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lost run's message stayed in the queue: %+v, %v", info.State, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// claim takes the next message and claims its run as the attempt its delivery says.
func (f *fakeWorker) claim(t *testing.T) (string, int64, string) {
	t.Helper()
	attempt := f.fetch(t)
	answer := f.ask(t, protocol.Names{}.ClaimSubject("fake"), protocol.Claim{Run: f.msg.Job.Run, Attempt: attempt, Worker: "fake", Token: f.msg.Token})
	return f.msg.Job.Run, attempt, answer
}

// fetch takes the next message, and returns the attempt its delivery says.
func (f *fakeWorker) fetch(t *testing.T) int64 {
	t.Helper()
	msg, err := f.cons.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatalf("fetching a run: %v", err)
	}
	f.msg, f.last = protocol.Message{}, msg
	json.Unmarshal(msg.Data(), &f.msg)
	meta, _ := msg.Metadata()
	return int64(meta.NumDelivered)
}

func (f *fakeWorker) ask(t *testing.T, subject string, req any) string {
	t.Helper()
	return f.askReply(t, subject, req).Answer
}

func (f *fakeWorker) askReply(t *testing.T, subject string, req any) protocol.Reply {
	t.Helper()
	b, _ := json.Marshal(req)
	msg, err := f.nc.Request(subject, b, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	var rep protocol.Reply
	json.Unmarshal(msg.Data, &rep)
	return rep
}

// TestLateResultDiscarded: a worker that claims a run and goes silent loses it to
// another worker after the ack wait; the run is recorded once, as attempt 2, and the
// silent worker's late result is refused and changes nothing.
func TestLateResultDiscarded(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0)
	if _, _, err := b.Admin.CreateTool(context.Background(), "counter", "Counter", "", counterTool, true); err != nil {
		t.Fatal(err)
	}
	ubc, _ := b.User(t, "ulla", "user")
	r, err := ubc.RunFiles(context.Background(), "counter", writeFiles(t, map[string]string{"a.txt": "A"}), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeWorker(t, c.nats)
	id, attempt, answer := fake.claim(t)
	if id != r.RunID || attempt != 1 || answer != protocol.Go {
		t.Fatalf("fake claim = %s, attempt %d, %s", id, attempt, answer)
	}
	// A real worker comes; after the ack wait, the run is its attempt 2.
	a := c.node(t, 1)
	done, err := ubc.GetRun(context.Background(), r.RunID, time.Minute)
	if err != nil || done.Status != "succeeded" || done.Attempts != 2 || done.StateRev == nil || *done.StateRev != 1 {
		t.Fatalf("run: %s (%v), attempts %d, state_rev %v, %v", done.Status, done.ErrorSummary, done.Attempts, done.StateRev, err)
	}
	// The silent worker's result comes late: refused, and nothing changes.
	late := fake.ask(t, protocol.Names{}.RecordSubject("fake"), protocol.Record{Run: id, Attempt: 1, Worker: "fake", ReportKey: protocol.AttemptPrefix(id, 1) + "report.json"})
	if late != protocol.Stale {
		t.Fatalf("a late result was answered %q, want %q: its worker must not acknowledge the message", late, protocol.Stale)
	}
	after, _ := a.App.Store.GetRun(context.Background(), r.RunID)
	if after.Status != "succeeded" || after.Attempts != 2 || after.StateRev == nil || *after.StateRev != 1 {
		t.Fatalf("after the late result: %+v", after)
	}
	sess, err := ubc.SessionOf(context.Background(), "counter", "default")
	if err != nil || sess.StateRev != 1 {
		t.Fatalf("session: rev %d, %v; want 1", sess.StateRev, err)
	}
}

// TestWorkersLost: a run whose two workers both go silent fails with "worker lost",
// and its message leaves the queue.
func TestWorkersLost(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0)
	ubc, r := queuedRun(t, b)
	fake := newFakeWorker(t, c.nats)
	for want := int64(1); want <= protocol.MaxDeliver; want++ {
		if id, attempt, answer := fake.claim(t); id != r.RunID || attempt != want || answer != protocol.Go {
			t.Fatalf("fake claim %d = %s, attempt %d, %s", want, id, attempt, answer)
		}
	}
	// JetStream gives up on a message when a worker asks for the next one (the workers
	// of a cluster always do); the advisory it then sends ends the run.
	if msg, err := fake.cons.Next(jetstream.FetchMaxWait(5 * time.Second)); err == nil {
		t.Fatalf("the run's message was delivered a third time: %s", msg.Subject())
	}
	done, err := ubc.GetRun(context.Background(), r.RunID, 30*time.Second)
	if err != nil || done.Status != "failed" || done.ErrorSummary == nil || !strings.Contains(*done.ErrorSummary, "worker lost") || done.Attempts != 2 {
		t.Fatalf("run: %s (%v), attempts %d, %v", done.Status, done.ErrorSummary, done.Attempts, err)
	}
	if done.ErrorSource == nil || *done.ErrorSource != store.SourceRunner {
		t.Errorf("a run whose workers were lost has the error_source %v; want runner", done.ErrorSource)
	}
	fake.waitQueueEmpty(t)
}

// TestQueueFull: with no worker, the cluster's queue takes SKRIP_RUNNER_QUEUE runs and
// answers the next one 503 with Retry-After, creating nothing: the refusal comes before
// the run's upload replaces its session's files. The runs waiting are counted in the
// database, where they wait (the stream holds none of them).
func TestQueueFull(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0, func(cfg *config.Config) { cfg.RunnerQueue = 2 })
	ctx := context.Background()
	if _, _, err := b.Admin.CreateTool(ctx, "counter", "Counter", "", counterTool, true); err != nil {
		t.Fatal(err)
	}
	ubc, u := b.User(t, "ulla", "user")
	first := writeFiles(t, map[string]string{"a.txt": "A"})
	for _, files := range [][]string{first, nil} {
		if _, err := ubc.RunFiles(ctx, "counter", files, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A third, with a file that would replace a.txt in the session.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("files", "b.txt")
	part.Write([]byte("B"))
	mw.Close()
	req, _ := http.NewRequest("POST", b.URL+"/api/v1/tools/counter/runs", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+u.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(msg), "busy") {
		t.Fatalf("a run past the queue: %d (Retry-After %q) %s", resp.StatusCode, resp.Header.Get("Retry-After"), msg)
	}
	runs, _ := b.App.Store.ListRuns(ctx, store.RunFilter{Limit: 10})
	if len(runs) != 2 {
		t.Fatalf("%d runs made, want 2", len(runs))
	}
	files, err := ubc.SessionFiles(ctx, "counter", "default")
	if err != nil || len(files.Files) != 1 || files.Files[0].Name != "a.txt" {
		t.Fatalf("the session's files after a refused run: %+v, %v; want a.txt as before", files.Files, err)
	}
}

// TestSweepEndsLostRuns: with no worker left to ask for work, JetStream sends no
// advisory; the sweep still fails a run whose last worker went silent, and a queued run
// whose message never reached the queue.
func TestSweepEndsLostRuns(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0)
	tool, _, err := b.Admin.CreateTool(context.Background(), "counter", "Counter", "", counterTool, true)
	if err != nil {
		t.Fatal(err)
	}
	ubc, u := b.User(t, "ulla", "user")
	r, err := ubc.RunFiles(context.Background(), "counter", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A run the server made but never queued (it died in between), a while ago.
	orphan := store.Run{ID: "r_orphan", ToolID: tool.ID, VersionID: *tool.PublishedVersionID, UserID: u.ID, Context: "default", Kind: "initial",
		Status: store.StatusQueued, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`,
		CreatedAt: time.Now().Add(-15 * time.Minute)}
	if err := b.App.Store.CreateRun(context.Background(), orphan); err != nil {
		t.Fatal(err)
	}
	fake := newFakeWorker(t, c.nats)
	for want := int64(1); want <= protocol.MaxDeliver; want++ {
		if id, attempt, answer := fake.claim(t); id != r.RunID || attempt != want || answer != protocol.Go {
			t.Fatalf("fake claim %d = %s, attempt %d, %s", want, id, attempt, answer)
		}
	}
	done, err := ubc.GetRun(context.Background(), r.RunID, 30*time.Second)
	if err != nil || done.Status != "failed" || done.ErrorSummary == nil || !strings.Contains(*done.ErrorSummary, "worker lost") {
		t.Fatalf("run: %s (%v), %v", done.Status, done.ErrorSummary, err)
	}
	got, err := b.App.Store.GetRun(context.Background(), orphan.ID)
	if err != nil || got.Status != store.StatusFailed || !strings.Contains(got.ErrorSummary, "not queued") || got.ErrorSource != store.SourceRunner {
		t.Fatalf("the run that never reached the queue: %s (%s, from %q), %v", got.Status, got.ErrorSummary, got.ErrorSource, err)
	}
	// Each with the reason the page says it by, in its language.
	if got.ErrorReason != run.NotQueued.String() {
		t.Errorf("the run that never reached the queue has the reason %q; want %q", got.ErrorReason, run.NotQueued.String())
	}
	if lost, err := b.App.Store.GetRun(context.Background(), r.RunID); err != nil || lost.ErrorReason != run.WorkerLost.String() {
		t.Errorf("the run whose workers were lost has the reason %q (%v); want %q", lost.ErrorReason, err, run.WorkerLost.String())
	}
	// Its message leaves the stream with it: past its last delivery it would hold a
	// place in the queue for good (and with a queue of one, every run would get 503).
	fake.waitQueueEmpty(t)
}

const linesTool = `
import time
def run_tool(input_dir, output_dir):
    print("early line", flush=True)
    time.sleep(2)
    print("late line", flush=True)
    time.sleep(1)
    return {"outputs": []}
`

// TestLateViewerGetsBacklog: a viewer who opens a run's events on an API node after the
// run printed its first lines on a worker sees those lines first, then the live ones,
// each once, and the final status.
func TestLateViewerGetsBacklog(t *testing.T) {
	c := newCluster(t)
	a := c.node(t, 1)
	b := c.node(t, 0)
	if _, _, err := b.Admin.CreateTool(context.Background(), "lines", "Lines", "", linesTool, true); err != nil {
		t.Fatal(err)
	}
	ubc, u := b.User(t, "ulla", "user")
	r, err := ubc.RunFiles(context.Background(), "lines", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, ubc, r.RunID, "running")
	time.Sleep(time.Second) // "early line" is printed
	nodes := []*apptest.Env{b, a}
	bodies := make([]string, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", node.URL+"/api/v1/runs/"+r.RunID+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+u.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodies[i] = string(body)
		}()
	}
	wg.Wait()
	for i, events := range bodies {
		early, late := strings.Index(events, "early line"), strings.Index(events, "late line")
		if early < 0 || late < early || strings.Count(events, "early line") != 1 || strings.Count(events, "late line") != 1 ||
			!strings.Contains(events, "event: status\ndata: \"succeeded\"") {
			t.Fatalf("events on %s:\n%s", nodes[i].URL, events)
		}
	}
}

// TestLeaseDuringClaim: a worker's lease check that asks about a run whose claim is
// still on its way is not told to drop it; one about a run another attempt holds is.
// (A worker that asked too early was told "stale", dropped the run unacknowledged, and
// it came back only after the ack wait.)
func TestLeaseDuringClaim(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0)
	_, r := queuedRun(t, b)
	fake := newFakeWorker(t, c.nats)
	lease := func(attempt int64) protocol.LeaseReply {
		b, _ := json.Marshal(protocol.Lease{Worker: "fake", Runs: []protocol.Claim{{Run: r.RunID, Attempt: attempt, Worker: "fake"}}})
		msg, err := fake.nc.Request(protocol.Names{}.LeaseSubject("fake"), b, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep protocol.LeaseReply
		json.Unmarshal(msg.Data, &rep)
		return rep
	}
	if rep := lease(1); len(rep.Stale) != 0 {
		t.Fatalf("a queued run whose claim is on its way was called stale: %+v", rep)
	}
	if _, attempt, answer := fake.claim(t); attempt != 1 || answer != protocol.Go {
		t.Fatalf("claim: attempt %d, %s", attempt, answer)
	}
	if rep := lease(1); len(rep.Stale) != 0 {
		t.Fatalf("the run's own attempt was called stale: %+v", rep)
	}
	if _, err := b.App.Store.ClaimRun(context.Background(), r.RunID, 2, "other", time.Now()); err != nil {
		t.Fatal(err)
	}
	if rep := lease(1); len(rep.Stale) != 1 {
		t.Fatalf("an attempt another one took over was not called stale: %+v", rep)
	}
}

// TestCancelWhenWorkerGone: a user's cancel of a run whose worker is gone ends the run
// at once; it used to stay "running" until another worker took it.
func TestCancelWhenWorkerGone(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0)
	ubc, r := queuedRun(t, b)
	fake := newFakeWorker(t, c.nats) // answers nothing after its claim: as a dead worker
	if _, attempt, answer := fake.claim(t); attempt != 1 || answer != protocol.Go {
		t.Fatalf("claim: attempt %d, %s", attempt, answer)
	}
	got, err := ubc.CancelRun(context.Background(), r.RunID)
	if err != nil || got.Status != "cancelled" {
		t.Fatalf("cancel of a run whose worker is gone: %s, %v; want cancelled at once", got.Status, err)
	}
}

// TestForgedRequestsRefused: workers are untrusted. One worker cannot record the run
// another holds (the API node takes who asks from the subject, which only that worker's
// NATS user may publish on), nor claim a run it was not delivered, nor an attempt the
// queue never delivers. The run's files sit sealed in the work bucket, and open only
// with the keys its claim's reply hands over. A report whose artifacts are not what it
// says fails the run, with none of them kept. (What a worker's NATS user may not touch
// at all: natsserver's TestWorkerCredentialsRefused.)
func TestForgedRequestsRefused(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0)
	ctx := context.Background()
	if _, _, err := b.Admin.CreateTool(ctx, "counter", "Counter", "", counterTool, true); err != nil {
		t.Fatal(err)
	}
	ubc, _ := b.User(t, "ulla", "user")
	const secret = "ulla's secret staged file, 0123456789"
	r, err := ubc.RunFiles(ctx, "counter", writeFiles(t, map[string]string{"secret.txt": secret}), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeWorker(t, c.nats)
	attempt := fake.fetch(t)
	if fake.msg.Job.Run != r.RunID || attempt != 1 || fake.msg.Token == "" || len(fake.msg.Inputs) != 1 {
		t.Fatalf("delivered: %+v, attempt %d", fake.msg, attempt)
	}

	// A claim without the delivery's token: a worker that names a run (from another's
	// heartbeat, say) and was not delivered it.
	for name, token := range map[string]string{"no token": "", "a guessed token": strings.Repeat("0", 32), "a token one off": "x" + fake.msg.Token} {
		rep := fake.askReply(t, protocol.Names{}.ClaimSubject("evil"), protocol.Claim{Run: r.RunID, Attempt: 1, Worker: "evil", Token: token})
		if rep.Answer != protocol.Stale || len(rep.Keys) != 0 {
			t.Fatalf("a claim with %s was answered %+v, want %q and no keys", name, rep, protocol.Stale)
		}
	}
	if got, _ := b.App.Store.GetRun(ctx, r.RunID); got.Status != store.StatusQueued || got.Worker != "" {
		t.Fatalf("after claims without the delivery: %s, worker %q", got.Status, got.Worker)
	}

	// The run's files in the work bucket: not under their checksum, and ciphertext
	// without their keys.
	work, err := natsblob.New(ctx, fake.nc, natsblob.Config{Bucket: b.Config.NATSWorkBucket})
	if err != nil {
		t.Fatal(err)
	}
	in := fake.msg.Inputs[0]
	if _, err := work.Stat(ctx, protocol.CASKey(in.SHA256)); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the input is in the work bucket by its checksum: %v", err)
	}
	infos, err := work.List(ctx, "work/")
	if err != nil || len(infos) < 2 {
		t.Fatalf("the work bucket holds %d objects, %v", len(infos), err)
	}
	for _, info := range infos {
		if !strings.HasPrefix(info.Key, "work/sealed/") {
			t.Errorf("the work bucket holds %s, not sealed", info.Key)
		}
		if got := readAll(t, work, info.Key); strings.Contains(string(got), secret) || strings.Contains(string(got), "run_tool") {
			t.Errorf("%s holds plaintext", info.Key)
		}
	}

	// The claim with the delivery's token: the keys of the run's files, which open
	// them; one file's key does not open another.
	rep := fake.askReply(t, protocol.Names{}.ClaimSubject("fake"), protocol.Claim{Run: r.RunID, Attempt: 1, Worker: "fake", Token: fake.msg.Token})
	if rep.Answer != protocol.Go || len(rep.Keys) != 2 {
		t.Fatalf("the delivered claim was answered %q with %d keys", rep.Answer, len(rep.Keys))
	}
	keys := map[string][]byte{}
	for _, k := range rep.Keys {
		keys[k.SHA256] = k.Key
	}
	if got := openSealed(t, work, keys[in.SHA256], keys[in.SHA256]); string(got) != secret {
		t.Fatalf("the input opened to %q", got)
	}
	opened, err := protocol.Open(bytes.NewReader(readAll(t, work, protocol.SealedKey(keys[in.SHA256]))), keys[fake.msg.Script.SHA256])
	if err == nil {
		_, err = io.ReadAll(opened)
	}
	if !errors.Is(err, protocol.ErrSealed) {
		t.Fatalf("the input opened with the script's key: %v", err)
	}

	// Another worker records the run: refused, and its bucket is not read.
	forged := fake.ask(t, protocol.Names{}.RecordSubject("evil"), protocol.Record{Run: r.RunID, Attempt: 1, Worker: "fake",
		ReportKey: protocol.AttemptPrefix(r.RunID, 1) + "report.json"})
	if forged != protocol.Stale {
		t.Fatalf("a record of another worker's run was answered %q, want %q", forged, protocol.Stale)
	}
	if got := fake.ask(t, protocol.Names{}.ClaimSubject("evil"), protocol.Claim{Run: r.RunID, Attempt: 99, Worker: "evil", Token: fake.msg.Token}); got != "" {
		t.Fatalf("a claim of attempt 99 was answered %q", got)
	}
	if got, _ := b.App.Store.GetRun(ctx, r.RunID); got.Status != store.StatusRunning || got.Attempts != 1 || got.Worker != "fake" {
		t.Fatalf("after the forged requests: %s, attempt %d, worker %q", got.Status, got.Attempts, got.Worker)
	}

	// The holder's report says its artifact has other bytes than it has: the run fails,
	// and nothing of it is kept.
	own, err := work.Sibling(ctx, protocol.WorkerBucket(b.Config.NATSWorkBucket, "fake"), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	files, err := natsblob.New(ctx, fake.nc, natsblob.Config{Bucket: b.Config.NATSBucket})
	if err != nil {
		t.Fatal(err)
	}
	record := func(id string, arts []runjob.Artifact) client.Run {
		t.Helper()
		prefix := protocol.AttemptPrefix(id, 1)
		report, _ := json.Marshal(runjob.Report{Artifacts: arts})
		if _, err := own.Put(ctx, prefix+"report.json", bytes.NewReader(report), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if answer := fake.ask(t, protocol.Names{}.RecordSubject("fake"), protocol.Record{Run: id, Attempt: 1, Worker: "fake", ReportKey: prefix + "report.json"}); answer != protocol.Recorded {
			t.Fatalf("the record was answered %q", answer)
		}
		if err := fake.last.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := ubc.GetRun(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		if kept, err := files.List(ctx, "runs/"+id+"/"); err != nil || len(kept) != 0 {
			t.Fatalf("the files bucket keeps %d objects of the run, %v", len(kept), err)
		}
		return got
	}
	prefix := protocol.AttemptPrefix(r.RunID, 1) + "out/"
	for name, body := range map[string]string{"good.txt": "honest bytes", "bad.txt": "forged bytes"} {
		if _, err := own.Put(ctx, prefix+name, strings.NewReader(body), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	honest := sha256.Sum256([]byte("honest bytes"))
	sum := hex.EncodeToString(honest[:])
	got := record(r.RunID, []runjob.Artifact{
		{Path: "output/good.txt", Name: "good.txt", Bytes: 12, SHA256: sum, Key: prefix + "good.txt"},
		{Path: "output/bad.txt", Name: "bad.txt", Bytes: 12, SHA256: sum, Key: prefix + "bad.txt"},
	})
	if got.Status != "failed" || got.ErrorSummary == nil || !strings.Contains(*got.ErrorSummary, "output/bad.txt") ||
		!strings.Contains(*got.ErrorSummary, "not the sha256:"+sum) || len(got.Artifacts) != 0 {
		t.Fatalf("a run with a forged checksum: %s (%v), %d artifacts", got.Status, got.ErrorSummary, len(got.Artifacts))
	}

	// An artifact the report names and the worker never left: the run fails too.
	r2, err := ubc.RunFiles(ctx, "counter", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if id, _, answer := fake.claim(t); id != r2.RunID || answer != protocol.Go {
		t.Fatalf("claim of the second run: %s, %s", id, answer)
	}
	got = record(r2.RunID, []runjob.Artifact{{Path: "output/gone.txt", Name: "gone.txt", Bytes: 12, SHA256: sum,
		Key: protocol.AttemptPrefix(r2.RunID, 1) + "out/gone.txt"}})
	if got.Status != "failed" || got.ErrorSummary == nil || !strings.Contains(*got.ErrorSummary, "output/gone.txt is missing") {
		t.Fatalf("a run with a missing artifact: %s (%v)", got.Status, got.ErrorSummary)
	}
}

func readAll(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	rc, _, err := s.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openSealed reads the work bucket's object sealed with key and opens it with open.
func openSealed(t *testing.T, work blob.Store, key, open []byte) []byte {
	t.Helper()
	r, err := protocol.Open(bytes.NewReader(readAll(t, work, protocol.SealedKey(key))), open)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
