package clustertest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/clustertest/hosts"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/wire"
)

// skripCluster is the cluster of the fault tests: three nats-servers, PostgreSQL, two
// API nodes without workers and two workers, each on a host of its own.
type skripCluster struct {
	net     *hosts.Network
	nats    *hosts.NATS
	pg      *hosts.Postgres
	db      *sql.DB
	api     map[string]*node // api1, api2
	workers map[string]*node // w1, w2
	admin   *client.Client
	token   string // a user's, for runs
	user    string
}

// node is one skrip process on its host.
type node struct {
	name string
	proc *hosts.Proc
	base string // its HTTP address
}

const (
	adminToken = "skr_cluster-admin-token-0123456789"
	ackWait    = "3s"
	// workerWait is how long a running run whose worker is gone waits for another (F9).
	workerWait = "10s"
)

var users = []natsserver.User{
	{Name: "api", Password: "api-secret", Kind: natsserver.APIUser},
	{Name: "w1", Password: "w1-secret", Kind: natsserver.WorkerUser, Worker: "w1"},
	{Name: "w2", Password: "w2-secret", Kind: natsserver.WorkerUser, Worker: "w2"},
}

// env is this process's environment without skrip's settings, plus settings.
func env(settings map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKRIP_") {
			out = append(out, kv)
		}
	}
	for k, v := range settings {
		out = append(out, k+"="+v)
	}
	return out
}

func startCluster(t *testing.T) *skripCluster {
	t.Helper()
	c := &skripCluster{api: map[string]*node{}, workers: map[string]*node{}}
	c.net = Network(t)
	c.pg = Postgres(t, c.net)
	c.nats = NATS(t, c.net, users...)
	bin := Skrip(t)
	var err error
	if c.db, err = sql.Open("pgx", c.pg.URL()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.db.Close() })
	data := t.TempDir()
	reapAlso(t, c.net, data)
	// A worker killed by a test leaves its sandboxes' workspaces mounted (boxes outlive
	// their worker on purpose); the test's data dir goes with them.
	t.Cleanup(func() { unmountUnder(data) })
	common := map[string]string{
		"SKRIP_NATS_URL": c.nats.URLs(), "SKRIP_NATS_REPLICAS": "3", "SKRIP_RUN_ACK_WAIT": ackWait,
		"SKRIP_RUNNER": "bwrap", "SKRIP_LOG_LEVEL": "info", "SKRIP_SHUTDOWN_GRACE": "20s",
	}
	if rootfs := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"); rootfs != "" {
		common["SKRIP_BWRAP_ROOTFS"] = rootfs
	}
	start := func(name, verb string, extra map[string]string) *node {
		h := Host(t, c.net, name)
		s := map[string]string{"SKRIP_DATA_DIR": filepath.Join(data, name), "SKRIP_ADDR": h.Addr + ":8080"}
		for k, v := range common {
			s[k] = v
		}
		for k, v := range extra {
			s[k] = v
		}
		p := Start(t, h, hosts.Command{Name: name, Path: bin, Args: []string{verb}, Env: env(s)})
		n := &node{name: name, proc: p, base: "http://" + h.Addr + ":8080"}
		n.waitReady(t)
		return n
	}
	// SKRIP_RUNS_PER_USER: F5 sends one user's runs faster than two workers finish them
	// while one restarts, and what it checks is that none is lost, not the per-user limit
	// (which internal/api's fairness tests cover); on a busy machine 8 were waiting.
	apiSettings := map[string]string{"SKRIP_DATABASE_URL": c.pg.URL(), "SKRIP_BLOB": "nats", "SKRIP_RUNNER_CONCURRENCY": "0",
		"SKRIP_BOOTSTRAP_ADMIN_TOKEN": adminToken, "SKRIP_NATS_USER": "api", "SKRIP_NATS_PASSWORD": "api-secret",
		"SKRIP_RUNS_PER_USER": "64", "SKRIP_RUN_WORKER_WAIT": workerWait}
	// API nodes first: they make the stream, the buckets and the registry.
	for _, name := range []string{"api1", "api2"} {
		c.api[name] = start(name, "serve", apiSettings)
	}
	for _, name := range []string{"w1", "w2"} {
		c.workers[name] = start(name, "worker", map[string]string{"SKRIP_WORKER_ID": name, "SKRIP_RUNNER_CONCURRENCY": "2",
			"SKRIP_NATS_USER": name, "SKRIP_NATS_PASSWORD": name + "-secret"})
	}
	c.admin, _ = client.New(c.api["api1"].base, adminToken)
	u, err := c.admin.CreateUser(context.Background(), "ulla", "user", "")
	if err != nil {
		t.Fatal(err)
	}
	c.token, c.user = u.Token, u.ID
	for _, tool := range []struct{ slug, src string }{{"steps", stepsTool}, {"noop", noopTool}, {"copy", copyTool}} {
		if _, _, err := c.admin.CreateTool(context.Background(), tool.slug, tool.slug, "", tool.src, true); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// waitReady waits for the node's /readyz.
func (n *node) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		resp, err := http.Get(n.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not ready after 90 s (%v); its log:\n%s", n.name, err, n.proc.Log(4000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// client is the user's client of API node name.
func (c *skripCluster) client(t *testing.T, name string) *client.Client {
	t.Helper()
	cl, err := client.New(c.api[name].base, c.token)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// holder is the worker that holds run id now, and its attempt, from the database.
func (c *skripCluster) holder(t *testing.T, id string) (string, int64, string) {
	t.Helper()
	var worker, status string
	var attempts int64
	if err := c.db.QueryRow("SELECT worker, attempts, status FROM runs WHERE id = $1", id).Scan(&worker, &attempts, &status); err != nil {
		t.Fatal(err)
	}
	return worker, attempts, status
}

// waitRunning waits until run id runs on a worker and returns that worker.
func (c *skripCluster) waitRunning(t *testing.T, id string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if w, _, status := c.holder(t, id); status == "running" && w != "" {
			return w
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, n := range c.nodes() {
		t.Logf("--- %s:\n%s", n.name, n.proc.Log(30000))
	}
	t.Fatalf("run %s never ran", id)
	return ""
}

// warnings are the lines the skrip nodes logged at WARN or ERROR.
func (c *skripCluster) warnings() string {
	var b strings.Builder
	for _, n := range c.nodes() {
		for _, line := range strings.Split(n.proc.Log(1<<20), "\n") {
			if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
				fmt.Fprintf(&b, "%s: %s\n", n.name, line)
			}
		}
	}
	return b.String()
}

func (c *skripCluster) nodes() []*node {
	return []*node{c.api["api1"], c.api["api2"], c.workers["w1"], c.workers["w2"]}
}

// other is the other worker's name.
func other(w string) string {
	if w == "w1" {
		return "w2"
	}
	return "w1"
}

// stepsTool offers one action that sleeps as long as its input says and counts.
const stepsTool = `
import time, skrip_toolkit as tk
ACTIONS = [{"action_id": "work", "label": "Arbeta", "kind": "form", "fields": [{"name": "sleep", "label": "Sekunder", "kind": "number"}]}]
def run_tool(input_dir, output_dir):
    act = tk.action()
    if act is None:
        return {"outputs": [], "next_actions": ACTIONS, "state": {"n": 0}}
    time.sleep(float(act["input"].get("sleep", 0)))
    n = act["state"]["n"] + 1
    return {"outputs": [{"kind": "json", "value": {"n": n}}], "next_actions": ACTIONS, "state": {"n": n}}
`

const noopTool = "def run_tool(input_dir, output_dir):\n    return 'ok'\n"

// copyTool copies its input files to its output, after sleeping as long as asked.
const copyTool = `
import os, shutil, time, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    time.sleep(float(tk.inputs().get("sleep", 0)))
    for f in tk.input_files():
        shutil.copy(f["path"], os.path.join(output_dir, f["name"]))
    return {"outputs": []}
`

// session starts the steps tool's session anew through API node name and returns the
// tool's id and the session's revision.
func (c *skripCluster) session(t *testing.T, name string) (string, int64) {
	t.Helper()
	cl := c.client(t, name)
	tool, err := cl.ToolOf(context.Background(), "steps")
	if err != nil {
		t.Fatal(err)
	}
	r, err := cl.RunFiles(context.Background(), "steps", nil, map[string]any{}, time.Minute)
	if err != nil || r.Status != "succeeded" || r.StateRev == nil {
		t.Fatalf("initial run: %+v, %v", r, err)
	}
	return tool.ID, *r.StateRev
}

// TestFaults runs the fault tests of issue 17 on one cluster, in turn; each leaves the
// cluster whole for the next.
func TestFaults(t *testing.T) {
	c := startCluster(t)
	t.Run("F1 a worker killed mid-run", func(t *testing.T) { testKillWorker(t, c) })
	t.Run("F4 a worker cut off mid-run, then healed", func(t *testing.T) { testCutWorker(t, c) })
	t.Run("F3 an API node killed while a client waits", func(t *testing.T) { testKillAPI(t, c) })
	t.Run("F2 a NATS node killed mid-upload and mid-run", func(t *testing.T) { testKillNATS(t, c) })
	t.Run("F5 a rolling restart of every worker", func(t *testing.T) { testRollingRestart(t, c) })
	t.Run("F6 an agent sandbox whose worker is killed", func(t *testing.T) { testSandboxLost(t, c) })
	t.Run("F7 an API node killed mid-upload, resumed on the other", func(t *testing.T) { testKillAPIMidUpload(t, c) })
	t.Run("F8 the run queue's NATS leader killed while a run finishes", func(t *testing.T) { testKillStreamLeaderAtFinish(t, c) })
	t.Run("F9 every worker lost at once", func(t *testing.T) { testAllWorkersLost(t, c) })
	t.Run("a token revoked on one API node, refused by the other", func(t *testing.T) { testRevocation(t, c) })
}

// action submits the steps tool's action through node name, sleeping s seconds, at rev.
func (c *skripCluster) action(t *testing.T, name, toolID string, s float64, rev int64) client.Run {
	t.Helper()
	var ar client.ActionResult
	err := c.client(t, name).Do(context.Background(), http.MethodPost, "/api/v1/start_action?wait=0s",
		wire.ActionRequest{ToolID: toolID, Context: "default", ActionID: "work", Input: map[string]any{"sleep": s}, ExpectedStateRev: &rev}, &ar)
	if err != nil {
		t.Fatal(err)
	}
	return ar.Run
}

// F1: kill -9 the worker mid-run: the run finishes on the other worker, as attempt 2,
// with one result and one state_rev step.
func testKillWorker(t *testing.T, c *skripCluster) {
	toolID, rev := c.session(t, "api1")
	r := c.action(t, "api2", toolID, 6, rev)
	w := c.waitRunning(t, r.RunID)
	time.Sleep(2 * time.Second)
	if err := c.workers[w].proc.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s with the run on it", w)
	done, err := c.client(t, "api1").GetRun(context.Background(), r.RunID, 90*time.Second)
	if err != nil || done.Status != "succeeded" || done.Attempts != 2 || done.StateRev == nil || *done.StateRev != rev+1 {
		t.Fatalf("run after its worker was killed: %s (%v), attempts %d, state_rev %v, %v", done.Status, done.ErrorSummary, done.Attempts, done.StateRev, err)
	}
	if holder, _, _ := c.holder(t, r.RunID); holder != other(w) {
		t.Fatalf("the run finished on %s, want %s", holder, other(w))
	}
	sess, err := c.client(t, "api2").SessionOf(context.Background(), "steps", "default")
	if err != nil || sess.StateRev != rev+1 {
		t.Fatalf("session: rev %d, %v; want %d: the state moved once", sess.StateRev, err, rev+1)
	}
	restart(t, c.workers[w])
}

func restart(t *testing.T, n *node) {
	t.Helper()
	if err := n.proc.Restart(); err != nil {
		t.Fatal(err)
	}
	n.waitReady(t)
}

// F4: cut a worker off mid-run, then heal it: the run is retried on the other worker,
// and the cut worker's late result is discarded.
func testCutWorker(t *testing.T, c *skripCluster) {
	toolID, rev := c.session(t, "api2")
	r := c.action(t, "api1", toolID, 8, rev)
	w := c.waitRunning(t, r.RunID)
	time.Sleep(2 * time.Second)
	h := c.workers[w].proc.Host
	ctx := context.Background()
	if err := h.Cut(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("cut %s off with the run on it", w)
	done, err := c.client(t, "api2").GetRun(ctx, r.RunID, 90*time.Second)
	if err != nil || done.Status != "succeeded" || done.Attempts != 2 || done.StateRev == nil || *done.StateRev != rev+1 {
		h.Heal(ctx)
		t.Fatalf("run after its worker was cut off: %s (%v), attempts %d, state_rev %v, %v", done.Status, done.ErrorSummary, done.Attempts, done.StateRev, err)
	}
	if err := h.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	// Back online, the cut worker learns the run is another attempt's: it drops its
	// result or has it refused, and never records it.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(c.workers[w].proc.Log(20000), "another attempt holds") {
		if time.Now().After(deadline) {
			syscall.Kill(c.workers[w].proc.Pid(), syscall.SIGQUIT) // its goroutines, to its log
			time.Sleep(time.Second)
			t.Fatalf("%s did not drop its late result; its log:\n%s", w, c.workers[w].proc.Log(200000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	holder, attempts, status := c.holder(t, r.RunID)
	after, _ := c.client(t, "api1").SessionOf(ctx, "steps", "default")
	if holder != other(w) || attempts != 2 || status != "succeeded" || after.StateRev != rev+1 {
		t.Fatalf("after the heal: run on %s, attempts %d, %s; session at %d, want %d", holder, attempts, status, after.StateRev, rev+1)
	}
	c.workers[w].waitReady(t)
}

// F3: kill -9 the API node a client waits on: the client asks the other node, and sees
// the run finish.
func testKillAPI(t *testing.T, c *skripCluster) {
	r, err := c.client(t, "api1").RunFiles(context.Background(), "copy", nil, map[string]any{"sleep": 5}, 0)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		run client.Run
		err error
	}
	got := make(chan result, 1)
	go func() {
		run, err := c.client(t, "api1").GetRun(context.Background(), r.RunID, 60*time.Second)
		got <- result{run, err}
	}()
	time.Sleep(time.Second)
	if err := c.api["api1"].proc.Kill(); err != nil {
		t.Fatal(err)
	}
	first := <-got
	var unreachable *client.UnreachableError
	if first.err == nil || !errors.As(first.err, &unreachable) {
		t.Fatalf("the wait on the killed node ended with %+v, %v; want a connection error", first.run, first.err)
	}
	done, err := c.client(t, "api2").GetRun(context.Background(), r.RunID, 60*time.Second)
	if err != nil || done.Status != "succeeded" || done.Attempts != 1 {
		t.Fatalf("run on the other node: %s (%v), attempts %d, %v", done.Status, done.ErrorSummary, done.Attempts, err)
	}
	restart(t, c.api["api1"])
}

// randomFile writes n random bytes under dir and returns its path and sha256.
func randomFile(t *testing.T, dir, name string, n int64) (string, string) {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, n); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p, hex.EncodeToString(h.Sum(nil))
}

// F2: kill the NATS node that leads the files bucket mid-upload, while a run with a
// large input and output runs: both complete, and every checksum matches.
func testKillNATS(t *testing.T, c *skripCluster) {
	ctx := context.Background()
	dir := t.TempDir()
	upPath, upSum := randomFile(t, dir, "big.bin", 60<<20)
	inPath, inSum := randomFile(t, dir, "input.bin", 19_000_000)
	nc, err := nats.Connect(c.nats.URLs(), nats.UserInfo("api", "api-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, "OBJ_skrip-files")
	if err != nil {
		t.Fatal(err)
	}
	leader := s.CachedInfo().Cluster.Leader
	var wg sync.WaitGroup
	var up client.FileInfo
	var upErr error
	var run client.Run
	var runErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		f, err := os.Open(upPath)
		if err != nil {
			upErr = err
			return
		}
		defer f.Close()
		up, upErr = c.client(t, "api1").Upload(ctx, "big.bin", f, client.UploadOptions{Key: "files/fault/big.bin"})
	}()
	go func() {
		defer wg.Done()
		run, runErr = c.client(t, "api2").RunFiles(ctx, "copy", []string{inPath}, map[string]any{"sleep": 3}, 2*time.Minute)
	}()
	time.Sleep(700 * time.Millisecond)
	if err := c.nats.Node(leader).Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s, the files bucket's leader, mid-transfer", leader)
	wg.Wait()
	if upErr != nil || runErr != nil {
		t.Logf("what the nodes logged at WARN and above:\n%s", c.warnings())
	}
	if upErr != nil || up.Checksum != "sha256:"+upSum {
		t.Fatalf("upload: %+v, %v; want sha256 %s", up, upErr, upSum)
	}
	if runErr != nil || run.Status != "succeeded" || len(run.Artifacts) != 1 || run.Artifacts[0].SHA256 != inSum {
		t.Fatalf("run: %s (%v), artifacts %+v, %v; want the input's sha256 %s", run.Status, run.ErrorSummary, run.Artifacts, runErr, inSum)
	}
	for _, check := range []struct {
		what string
		get  func(w io.Writer) error
		want string
	}{
		{"the upload", func(w io.Writer) error {
			_, err := c.client(t, "api2").Download(ctx, up.FileKey, func(client.FileInfo) (io.Writer, error) { return w, nil })
			return err
		}, upSum},
		{"the artifact", func(w io.Writer) error { return c.client(t, "api1").DownloadArtifact(ctx, run.Artifacts[0], w) }, inSum},
	} {
		h := sha256.New()
		if err := check.get(h); err != nil || hex.EncodeToString(h.Sum(nil)) != check.want {
			t.Fatalf("%s read back: sha256 %x, %v; want %s", check.what, h.Sum(nil), err, check.want)
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := c.nats.Node(leader).Restart(rctx); err != nil {
		t.Fatal(err)
	}
}

// F5: restart every worker in turn under a steady stream of runs: no run fails.
func testRollingRestart(t *testing.T, c *skripCluster) {
	ctx := context.Background()
	stop := make(chan struct{})
	var mu sync.Mutex
	var ids []string
	var submitErrs []error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(300 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			name := []string{"api1", "api2"}[i%2]
			cl, _ := client.New(c.api[name].base, c.token)
			r, err := cl.RunFiles(ctx, "noop", nil, nil, 0)
			mu.Lock()
			if err != nil {
				submitErrs = append(submitErrs, err)
			} else {
				ids = append(ids, r.RunID)
			}
			mu.Unlock()
		}
	}()
	time.Sleep(2 * time.Second)
	for _, w := range []string{"w1", "w2"} {
		if err := c.workers[w].proc.Stop(30 * time.Second); err != nil {
			t.Errorf("stopping %s: %v", w, err)
		}
		t.Logf("%s stopped", w)
		time.Sleep(time.Second)
		restart(t, c.workers[w])
		t.Logf("%s back", w)
		time.Sleep(2 * time.Second)
	}
	close(stop)
	wg.Wait()
	if len(submitErrs) > 0 {
		t.Fatalf("%d runs were refused during the restart; the first: %v", len(submitErrs), submitErrs[0])
	}
	retried := 0
	for _, id := range ids {
		r, err := c.client(t, "api1").GetRun(ctx, id, 90*time.Second)
		if err != nil || r.Status != "succeeded" {
			t.Fatalf("run %s: %s (%v), %v", id, r.Status, r.ErrorSummary, err)
		}
		if r.Attempts > 1 {
			retried++
		}
	}
	t.Logf("%d runs during the rolling restart, all succeeded; %d of them on a second worker", len(ids), retried)
	if len(ids) < 20 {
		t.Fatalf("only %d runs were submitted", len(ids))
	}
}

// F6: an agent sandbox used through both API nodes, then its worker killed: a clear
// "sandbox lost" answer (410) within the heartbeat's lifetime, for a new call and for
// one under way, and the sandbox leaves the listing.
func testSandboxLost(t *testing.T, c *skripCluster) {
	ctx := context.Background()
	a1, _ := client.New(c.api["api1"].base, adminToken)
	a2, _ := client.New(c.api["api2"].base, adminToken)
	sb, err := a1.CreateSandbox(ctx, client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.SandboxID
	if _, err := a1.WriteSandboxFile(ctx, id, "hello.txt", strings.NewReader("hej"), 3); err != nil {
		t.Fatal(err)
	}
	res, err := a2.Exec(ctx, id, client.ExecRequest{Cmd: []string{"python3", "-c", "print(open('hello.txt').read())"}})
	if err != nil || strings.TrimSpace(res.Stdout) != "hej" {
		t.Fatalf("exec through the other node: %+v, %v", res, err)
	}
	var w string
	if err := c.db.QueryRow("SELECT node FROM sandboxes WHERE id = $1", id).Scan(&w); err != nil || c.workers[w] == nil {
		t.Fatalf("the sandbox's worker: %q, %v", w, err)
	}
	under := make(chan error, 1)
	go func() {
		_, err := a1.Exec(ctx, id, client.ExecRequest{Cmd: []string{"sleep", "120"}, TimeoutS: 150})
		under <- err
	}()
	time.Sleep(time.Second)
	if err := c.workers[w].proc.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed %s, which holds sandbox %s", w, id)
	gone := func(what string, err error) {
		t.Helper()
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusGone || !strings.Contains(apiErr.Message, "lost") {
			t.Fatalf("%s after its worker was killed: %v; want 410 gone, sandbox lost", what, err)
		}
	}
	_, err = a2.Exec(ctx, id, client.ExecRequest{Cmd: []string{"true"}})
	gone("a new exec", err)
	select {
	case err := <-under:
		gone("the exec under way", err)
	case <-time.After(25 * time.Second):
		t.Fatal("the exec under way when the worker was killed still hangs after 25 s")
	}
	if d := time.Since(killed); d > 20*time.Second {
		t.Fatalf("the sandbox was reported lost after %v; want within 20 s", d)
	}
	t.Logf("the sandbox was reported lost %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	list, err := a2.Sandboxes(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.SandboxID == id {
			t.Fatalf("the lost sandbox is still listed: %+v", s)
		}
	}
	restart(t, c.workers[w])
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var found []string
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			found = append(found, f[4])
		}
	}
	for i := len(found) - 1; i >= 0; i-- {
		syscall.Unmount(found[i], syscall.MNT_DETACH)
	}
}

// F8: kill the NATS node that leads the run queue's consumer while a run finishes: its
// worker's progress signals go nowhere during the election and JetStream redelivers the
// run, but its worker is alive, so the run is recorded once, by that worker, and spends
// no retry (issue 31: it was run again on the other worker as attempt 2).
func testKillStreamLeaderAtFinish(t *testing.T, c *skripCluster) {
	// Whether the election outlasts the ack wait is up to the NATS nodes; a try in which
	// it did not tests nothing, so the scenario is tried again (at most three times) until
	// a delivery of the run meets its live holder. Every try must end well.
	for try := 1; ; try++ {
		waited := killStreamLeaderAtFinish(t, c)
		if waited > 0 {
			t.Logf("deliveries that waited for the live holder: %d (try %d)", waited, try)
			return
		}
		if try == 3 {
			t.Logf("warnings: %s", c.warnings())
			t.Fatal("in 3 tries no delivery of the run waited for its live holder: the election never outlasted the ack wait, and the test did not test what it is for")
		}
		t.Logf("try %d: the election ended within the ack wait (no redelivery); trying again", try)
	}
}

// killStreamLeaderAtFinish is one try of F8: it checks that the run ends once, on its
// first attempt, recorded by its worker, and returns how many deliveries waited for it.
func killStreamLeaderAtFinish(t *testing.T, c *skripCluster) int {
	ctx := context.Background()
	nc, err := nats.Connect(c.nats.URLs(), nats.UserInfo("api", "api-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// The workers' consumer decides redeliveries; its leader may be another node than the
	// stream's.
	cons, err := js.Consumer(ctx, "SKRIP_RUNS", "workers")
	if err != nil {
		t.Fatal(err)
	}
	waitedBefore := 0
	for _, n := range c.workers {
		waitedBefore += strings.Count(n.proc.Log(1<<20), "earlier attempt still runs on a live worker")
	}
	r, err := c.client(t, "api1").RunFiles(ctx, "copy", nil, map[string]any{"sleep": 14}, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := c.waitRunning(t, r.RunID)
	time.Sleep(3 * time.Second)
	info, err := cons.Info(ctx)
	if err != nil || info.Cluster == nil || c.nats.Node(info.Cluster.Leader) == nil {
		t.Fatalf("the workers' consumer's leader: %+v, %v", info, err)
	}
	leader := info.Cluster.Leader
	if err := c.nats.Node(leader).Kill(); err != nil {
		t.Fatal(err)
	}
	// A second node down for a while keeps the cluster from electing a leader for longer
	// than the ack wait, as the election of the chaos run took (6.4 s): the new leader then
	// redelivers the run at once, while its worker still runs or records it.
	var second *hosts.NATSNode
	for _, nd := range c.nats.Nodes {
		if nd.Name != leader {
			second = nd
		}
	}
	if err := second.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s, the leader of the run queue's consumer, and %s, as the run on %s finishes", leader, second.Name, w)
	time.Sleep(6 * time.Second)
	rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := second.Restart(rctx); err != nil {
		t.Fatal(err)
	}
	done, err := c.client(t, "api2").GetRun(ctx, r.RunID, 90*time.Second)
	if err != nil || done.Status != "succeeded" || done.Attempts != 1 {
		t.Logf("what the nodes logged at WARN and above:\n%s", c.warnings())
		t.Fatalf("run after its stream leader was killed: %s (%v), attempts %d, %v; want succeeded on its first attempt", done.Status, done.ErrorSummary, done.Attempts, err)
	}
	if holder, _, _ := c.holder(t, r.RunID); holder != w {
		t.Fatalf("the run was recorded by %s, want %s, which ran it", holder, w)
	}
	if err := c.nats.Node(leader).Restart(rctx); err != nil {
		t.Fatal(err)
	}
	// JetStream redelivered the run after the election, if it outlasted the ack wait,
	// while its holder still ran it (14 s: the election takes about 10), and a worker
	// waited for the live holder rather than running it again.
	waited := -waitedBefore
	for _, n := range c.workers {
		waited += strings.Count(n.proc.Log(1<<20), "earlier attempt still runs on a live worker")
	}
	if waited == 0 {
		for _, n := range c.workers {
			for _, l := range strings.Split(n.proc.Log(1<<20), "\n") {
				if strings.Contains(l, r.RunID) && (strings.Contains(l, "WARN") || strings.Contains(l, "ERROR")) {
					t.Logf("worker: %.300s", l)
				}
			}
		}
	}
	return waited
}

// F9: kill every worker while a run runs: no worker is left to take it over, and once
// SKRIP_RUN_WORKER_WAIT (workerWait) has passed it fails as "worker lost", naming it,
// rather than staying "running" (issue 31: 70 s and counting).
func testAllWorkersLost(t *testing.T, c *skripCluster) {
	ctx := context.Background()
	r, err := c.client(t, "api1").RunFiles(ctx, "copy", nil, map[string]any{"sleep": 120}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.waitRunning(t, r.RunID)
	for _, w := range []string{"w1", "w2"} {
		if err := c.workers[w].proc.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	killed := time.Now()
	t.Log("killed every worker")
	wait, _ := time.ParseDuration(workerWait)
	// The heartbeats expire (1.5 s), then the sweep (every ack wait) waits workerWait.
	limit := wait + 30*time.Second
	done, err := c.client(t, "api2").GetRun(ctx, r.RunID, limit)
	if err != nil || done.Status != "failed" || done.ErrorSummary == nil || !strings.Contains(*done.ErrorSummary, "worker lost") ||
		!strings.Contains(*done.ErrorSummary, workerWait) {
		t.Fatalf("run %v after every worker was killed: %s (%v), %v; want failed, worker lost, within %s", time.Since(killed).Round(time.Second), done.Status, done.ErrorSummary, err, limit)
	}
	if d := time.Since(killed); d < wait {
		t.Fatalf("the run failed %v after its worker was lost, before %s", d, workerWait)
	}
	t.Logf("the run failed %v after every worker was killed: %s", time.Since(killed).Round(100*time.Millisecond), *done.ErrorSummary)
	for _, w := range []string{"w1", "w2"} {
		restart(t, c.workers[w])
	}
	// The cluster works again.
	again, err := c.client(t, "api1").RunFiles(ctx, "noop", nil, nil, time.Minute)
	if err != nil || again.Status != "succeeded" {
		t.Fatalf("a run after the workers came back: %s, %v", again.Status, err)
	}
}
