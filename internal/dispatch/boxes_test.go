package dispatch_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/worker"
)

// boxAckWait is the sandbox tests' ack wait: heartbeats every second, a worker gone
// after 3 s of silence. Shorter ones lose workers to a slow -race machine.
const boxAckWait = 6 * time.Second

func boxWait(cfg *config.Config) { cfg.RunAckWait = boxAckWait }

// TestClusterSandboxes: a sandbox made through one API node lives on a worker and is
// used through another node without workers: exec (plain and streamed), a 50 MB file
// written through one node and read back through the other, a staged file in and a
// published file out, the idle sweep of a node that does not serve the sandbox's exec,
// the listing and the delete. No transfer is left in the work bucket, and a box no
// record knows is swept.
func TestClusterSandboxes(t *testing.T) {
	c := newCluster(t)
	a := c.node(t, 1, boxWait)
	b := c.node(t, 0, boxWait)
	uac, u := a.User(t, "sara", "user")
	ubc := b.Client(t, u.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	sb, err := uac.CreateSandbox(ctx, client.SandboxOptions{Limits: &client.SandboxLimits{WorkspaceBytes: 128 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := a.App.Store.Sandbox(ctx, sb.SandboxID)
	if err != nil || rec.Node != a.Config.WorkerID {
		t.Fatalf("the sandbox lives on %q (%v), want node a's worker %q", rec.Node, err, a.Config.WorkerID)
	}

	res, err := ubc.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sh", "-c", "echo hi; pwd; echo oops >&2; exit 3"}})
	if err != nil || res.ExitCode != 3 || res.Stdout != "hi\n/workspace\n" || res.Stderr != "oops\n" {
		t.Fatalf("exec through node b: %+v, %v", res, err)
	}
	var lines []string
	res, err = ubc.ExecStream(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sh", "-c", "for i in 1 2 3; do echo $i; sleep 0.1; done"}},
		func(stream, line string) { lines = append(lines, stream+":"+line) })
	if err != nil || res.ExitCode != 0 || strings.Join(lines, "") != "stdout:1\nstdout:2\nstdout:3\n" {
		t.Fatalf("streamed exec through node b: %+v, lines %q, %v", res, lines, err)
	}

	// 50 MB in through node a, out through node b, and checked in the box too.
	const size = 50 << 20
	h := sha256.New()
	body := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{1}), size), h)
	w, err := uac.WriteSandboxFile(ctx, sb.SandboxID, "data/big.bin", body, size)
	if err != nil || w.SizeBytes != size || w.Path != "data/big.bin" {
		t.Fatalf("writing 50 MB through node a: %+v, %v", w, err)
	}
	want := hex.EncodeToString(h.Sum(nil))
	rc, n, err := ubc.ReadSandboxFile(ctx, sb.SandboxID, "data/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	h.Reset()
	got, err := io.Copy(h, rc)
	rc.Close()
	if err != nil || got != size || n != size || hex.EncodeToString(h.Sum(nil)) != want {
		t.Fatalf("reading it back through node b: %d bytes (Content-Length %d), %v; checksum ok %v", got, n, err, hex.EncodeToString(h.Sum(nil)) == want)
	}
	res, err = ubc.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sha256sum", "data/big.bin"}})
	if err != nil || !strings.HasPrefix(res.Stdout, want) {
		t.Fatalf("the box's checksum: %+v, %v; want %s", res, err, want)
	}

	// A staged file in through node b; a workspace file out through node a.
	f, err := ubc.Upload(ctx, "in.csv", strings.NewReader("a,b\n1,2\n"), client.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ubc.StageFile(ctx, sb.SandboxID, f.FileKey, "input/in.csv")
	if err != nil || st.SizeBytes != 8 || st.Path != "input/in.csv" {
		t.Fatalf("staging through node b: %+v, %v", st, err)
	}
	res, err = uac.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sh", "-c", "tr , ';' < input/in.csv > out.csv"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v, %v", res, err)
	}
	pub, err := uac.PublishFile(ctx, sb.SandboxID, "out.csv", "", "")
	if err != nil || pub.SizeBytes != 8 {
		t.Fatalf("publishing through node a: %+v, %v", pub, err)
	}
	var out bytes.Buffer
	if _, err := ubc.Download(ctx, pub.FileKey, func(client.FileInfo) (io.Writer, error) { return &out, nil }); err != nil || out.String() != "a;b\n1;2\n" {
		t.Fatalf("the published file: %q, %v", out.String(), err)
	}

	// A missing file and a bad path keep their answers across the cluster.
	if _, _, err := ubc.ReadSandboxFile(ctx, sb.SandboxID, "nope.txt"); status(err) != http.StatusNotFound {
		t.Fatalf("reading a missing file: %v", err)
	}

	// An exec through node b keeps its sandbox from node a's idle sweep, however long it
	// runs; once it has been idle past its timeout, node a destroys it.
	busy, err := ubc.CreateSandbox(ctx, client.SandboxOptions{IdleTimeout: "1s", Limits: &client.SandboxLimits{WorkspaceBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ubc.Exec(ctx, busy.SandboxID, client.ExecRequest{Cmd: []string{"sleep", "3"}, TimeoutS: 10})
		done <- err
	}()
	time.Sleep(2 * time.Second)
	if n, err := a.App.Sandboxes.Expire(ctx); err != nil || n != 0 {
		t.Fatalf("node a's sweep during an exec through node b destroyed %d sandboxes (%v)", n, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the long exec: %v", err)
	}
	time.Sleep(1500 * time.Millisecond)
	if n, err := a.App.Sandboxes.Expire(ctx); err != nil || n != 1 {
		t.Fatalf("node a's sweep after the exec destroyed %d sandboxes (%v), want the idle one", n, err)
	}

	list, err := ubc.Sandboxes(ctx, false)
	if err != nil || len(list) != 1 || list[0].SandboxID != sb.SandboxID {
		t.Fatalf("listing through node b: %+v, %v", list, err)
	}
	if err := ubc.DeleteSandbox(ctx, sb.SandboxID); err != nil {
		t.Fatalf("deleting through node b: %v", err)
	}
	if _, err := uac.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"true"}}); status(err) != http.StatusNotFound {
		t.Fatalf("exec after the delete: %v", err)
	}
	if boxes, _ := a.App.Runner.Boxes(ctx); len(boxes) != 0 {
		t.Fatalf("the worker still holds %v", boxes)
	}
	left := workKeys(t, c, protocol.XferKey(""))
	if len(left) != 0 {
		t.Fatalf("transfers left in the work bucket: %v", left)
	}

	// A box on the worker that no record knows (its create was given up on, say) goes in
	// the next sweep of any API node.
	orphan := ids.New("sb")
	spec := runner.BoxSpec{ID: orphan, Limits: app.SandboxConfig(a.Config).Limits, WorkspaceBytes: 1 << 20}
	nc, err := nats.Connect(c.nats)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	req, _ := json.Marshal(protocol.BoxRequest{Call: "orphan", Box: orphan, Spec: &spec})
	if m, err := nc.Request(protocol.Names{}.BoxSubject(a.Config.WorkerID, protocol.OpCreate), req, 30*time.Second); err != nil || string(m.Data) != "{}" {
		t.Fatalf("making a box without a record: %v", err)
	}
	if boxes, _ := a.App.Runner.Boxes(ctx); len(boxes) != 1 {
		t.Fatalf("the worker holds %v", boxes)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := b.App.Sandboxes.Expire(ctx); err != nil {
			t.Fatal(err)
		}
		if boxes, _ := a.App.Runner.Boxes(ctx); len(boxes) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the box without a record is still on the worker")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// status is the HTTP status of a client error, or 0.
func status(err error) int {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// workKeys lists the work bucket's keys under prefix.
func workKeys(t *testing.T, c *cluster, prefix string) []string {
	t.Helper()
	nc, err := nats.Connect(c.nats)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	work, err := natsblob.New(context.Background(), nc, natsblob.Config{Bucket: "skrip-work", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	infos, err := work.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, i := range infos {
		keys = append(keys, i.Key)
	}
	return keys
}

// testWorker is a `skrip worker` in the test's process, on a NATS connection of its
// own, that the test can lose at once: no goodbye, no more heartbeats.
type testWorker struct {
	id   string
	nc   *nats.Conn
	stop func()
}

func startWorker(t *testing.T, c *cluster, id string) *testWorker {
	t.Helper()
	cfg := apptest.Config(t, apptest.Backend{Blob: "nats"})
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("SKRIP_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("worker", id)
	}
	ctx := context.Background()
	nc, err := nats.Connect(c.nats, nats.Name("test worker "+id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	work, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: cfg.NATSWorkBucket, Node: id, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := app.OpenRunner(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(nc, work, rn, worker.Config{ID: id, Host: "test", Concurrency: 1, AckWait: boxAckWait,
		DataDir: filepath.Join(cfg.DataDir, "w"), CacheBytes: 1 << 30, Grace: time.Second, BoxBudget: 2 << 30}, metrics.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(wctx) }()
	tw := &testWorker{id: id, nc: nc}
	tw.stop = func() { cancel(); <-done }
	t.Cleanup(func() {
		tw.stop()
		boxes, _ := rn.Boxes(context.Background())
		for _, b := range boxes {
			rn.RemoveBox(context.Background(), b)
		}
		rn.Close()
	})
	return tw
}

// lose cuts the worker off as a crash would: its connection goes without a goodbye and
// its heartbeats stop; what it runs is stopped.
func (w *testWorker) lose() {
	w.nc.Close()
	w.stop()
}

// TestClusterSandboxLost: a worker lost with its sandboxes. The next exec on a sandbox
// of it answers 410 gone within the bound, an exec under way when it went ends 410 too,
// the sweep removes the record of one no one used, and the listing omits them.
func TestClusterSandboxLost(t *testing.T) {
	c := newCluster(t)
	a := c.node(t, 0, boxWait)
	b := c.node(t, 0, boxWait)
	w := startWorker(t, c, "w-doomed")
	uac, u := a.User(t, "sara", "user")
	ubc := b.Client(t, u.Token)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The worker joins the registry within a heartbeat.
	var sbs []client.Sandbox
	deadline := time.Now().Add(20 * time.Second)
	for len(sbs) < 3 {
		sb, err := uac.CreateSandbox(ctx, client.SandboxOptions{Limits: &client.SandboxLimits{WorkspaceBytes: 16 << 20}})
		if status(err) == http.StatusServiceUnavailable && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sbs = append(sbs, sb)
	}
	for _, sb := range sbs {
		if res, err := ubc.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
			t.Fatalf("exec through node b: %+v, %v", res, err)
		}
	}

	// An exec under way when the worker is lost.
	running := make(chan error, 1)
	go func() {
		_, err := uac.Exec(ctx, sbs[0].SandboxID, client.ExecRequest{Cmd: []string{"sleep", "60"}, TimeoutS: 90})
		running <- err
	}()
	time.Sleep(time.Second)
	lostAt := time.Now()
	w.lose()

	_, err := ubc.Exec(ctx, sbs[1].SandboxID, client.ExecRequest{Cmd: []string{"true"}})
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusGone || e.Code != "gone" || !strings.Contains(e.Message, "sandbox lost with its worker") {
		t.Fatalf("the next exec on a lost sandbox: %v", err)
	}
	if d := time.Since(lostAt); d > 20*time.Second {
		t.Fatalf("the next exec took %v to answer 410", d)
	}
	t.Logf("the next exec answered 410 %v after the loss", time.Since(lostAt).Round(time.Millisecond))
	select {
	case err := <-running:
		if status(err) != http.StatusGone {
			t.Fatalf("the exec under way: %v", err)
		}
		t.Logf("the exec under way answered 410 %v after the loss", time.Since(lostAt).Round(time.Millisecond))
	case <-time.After(20*time.Second - time.Since(lostAt)):
		t.Fatal("the exec under way when the worker was lost did not end within 20 s")
	}
	// The sweep removes the record of a lost sandbox no one used or listed since.
	if _, err := b.App.Sandboxes.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.App.Store.Sandbox(ctx, sbs[2].SandboxID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the record of a lost sandbox after a sweep: %v", err)
	}
	list, err := ubc.Sandboxes(ctx, false)
	if err != nil || len(list) != 0 {
		t.Fatalf("the listing after the loss: %+v, %v", list, err)
	}
	if _, err := uac.Exec(ctx, sbs[1].SandboxID, client.ExecRequest{Cmd: []string{"true"}}); status(err) != http.StatusNotFound {
		t.Fatalf("a lost sandbox, asked again: %v", err)
	}
}
