// Command cluster measures skrip scaled out (issue 17, docs/cluster.md) against the
// all-in-one server, in one run on one machine, with real processes: nats-server with
// JetStream, `skrip serve` and `skrip worker` built from this tree, and the machine's
// PostgreSQL (a fresh schema, dropped at the end). For each setup, the all-in-one
// server (SQLite and fs blobs; PostgreSQL and embedded NATS) and the cluster with one,
// then two workers, it measures a no-op run's latency through the HTTP API with ?wait
// (sequential) and runs/s under concurrent clients, with each process's CPU from
// /proc. Then it measures each shared resource of the cluster alone (the run queue's
// stream, the work bucket, PostgreSQL's per-run transactions) and projects 10 and 100
// workers from what one run uses of each. It prints markdown for docs/BENCHMARKS.md.
//
//	go run ./bench/cluster -n 100 -clients 12 -duration 15s
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/client"
)

const (
	noop  = "def run_tool(input_dir, output_dir):\n    return 'ok'\n"
	token = "skr_benchmark-admin-token"
)

var (
	n        = flag.Int("n", 100, "sequential runs for the latency figures")
	clients  = flag.Int("clients", 12, "concurrent clients of the throughput phase")
	duration = flag.Duration("duration", 15*time.Second, "length of the throughput phase")
	opsFor   = flag.Duration("ops-duration", 3*time.Second, "length of each resource measurement")
	dbURL    = flag.String("db", cmp.Or(os.Getenv("SKRIP_TEST_DATABASE_URL"), "postgres://skrip:skrip@127.0.0.1:5432/skrip_test"),
		"PostgreSQL database; the benchmark works in fresh schemas of it, dropped at the end")
	rootfs = flag.String("rootfs", cmp.Or(os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"), "/var/cache/skrip/runner-rootfs-13"),
		"the bwrap runner's root (SKRIP_BWRAP_ROOTFS)")
	aged    = flag.Int("aged", 20000, "runs' leftovers put in the work bucket before the cluster is measured again (0: not)")
	ackWait = flag.String("ack-wait", "", "SKRIP_RUN_ACK_WAIT of the cluster's API node and workers; empty: their default")
	keep    = flag.Bool("keep", false, "keep the temporary directory with every process's log")
)

// cleanups run at exit, fatal or not, last first.
var (
	cleanMu  sync.Mutex
	cleanups []func()
)

func atExit(f func()) {
	cleanMu.Lock()
	defer cleanMu.Unlock()
	cleanups = append(cleanups, f)
}

func cleanup() {
	cleanMu.Lock()
	fs := cleanups
	cleanups = nil
	cleanMu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func fatalf(format string, args ...any) {
	log.Printf(format, args...)
	cleanup()
	os.Exit(1)
}

func main() {
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "skrip-bench-cluster-")
	if err != nil {
		log.Fatal(err)
	}
	if *keep {
		log.Printf("logs in %s", dir)
	} else {
		atExit(func() { os.RemoveAll(dir) })
	}
	defer cleanup()

	skrip, natsBin := filepath.Join(dir, "skrip"), filepath.Join(dir, "nats-server")
	for _, b := range []struct{ out, pkg string }{{skrip, "github.com/skrip-dev/skrip/cmd/skrip"}, {natsBin, "github.com/nats-io/nats-server/v2"}} {
		if out, err := exec.Command("go", "build", "-o", b.out, b.pkg).CombinedOutput(); err != nil {
			fatalf("building %s: %v\n%s", b.pkg, err, out)
		}
	}

	admin, err := sql.Open("pgx", *dbURL)
	if err != nil {
		fatalf("-db: %v", err)
	}
	if err := admin.PingContext(ctx); err != nil {
		fatalf("PostgreSQL at -db: %v", err)
	}
	atExit(func() { admin.Close() })
	suffix := make([]byte, 4)
	rand.Read(suffix)
	schema := func(name string) string {
		s := "bench_" + hex.EncodeToString(suffix) + "_" + name
		if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+s); err != nil {
			fatalf("creating schema %s: %v", s, err)
		}
		atExit(func() { admin.Exec("DROP SCHEMA " + s + " CASCADE") })
		return s
	}
	load1 := loadAvg()
	idle := idleBusy()

	var results []result
	// The all-in-one server, SQLite and fs blobs (the default).
	{
		p := serve(skrip, filepath.Join(dir, "aio-sqlite"), "aio", nil)
		t := target{name: "all-in-one (SQLite, fs)", api: p}
		results = append(results, t.measure(ctx))
		p.stop()
	}
	// The all-in-one server on PostgreSQL and the embedded NATS server.
	{
		s := schema("aio")
		app := "skrip-bench-aio"
		p := serve(skrip, filepath.Join(dir, "aio-pg"), "aio", []string{"SKRIP_DATABASE_URL=" + schemaURL(*dbURL, s, app), "SKRIP_BLOB=nats"})
		t := target{name: "all-in-one (PostgreSQL, embedded NATS)", api: p, pg: admin, pgApp: app, schema: s}
		results = append(results, t.measure(ctx))
		p.stop()
	}
	// The cluster: nats-server, an API node that runs nothing itself, one worker, then two.
	natsAddr, monAddr := benchutil.FreeAddr(), benchutil.FreeAddr()
	port := func(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
	nats := startProc("nats-server", natsBin, filepath.Join(dir, "nats"), natsAddr,
		[]string{"-a", "127.0.0.1", "-p", port(natsAddr), "-m", port(monAddr), "-js", "-sd", filepath.Join(dir, "nats", "js")}, nil)
	nats.mon = monAddr
	atExit(nats.stop)
	nats.waitTCP(10 * time.Second)
	natsURL := "nats://" + natsAddr
	cs := schema("cluster")
	clusterURL := schemaURL(*dbURL, cs, "skrip-bench-api")
	api := serve(skrip, filepath.Join(dir, "api"), "api", []string{"SKRIP_DATABASE_URL=" + clusterURL, "SKRIP_BLOB=nats",
		"SKRIP_NATS_URL=" + natsURL, "SKRIP_RUNNER_CONCURRENCY=0", "SKRIP_RUN_ACK_WAIT=" + *ackWait})
	atExit(api.stop)
	var workers []*proc
	for i, name := range []string{"cluster, 1 worker", "cluster, 2 workers"} {
		w := worker(skrip, filepath.Join(dir, fmt.Sprintf("worker%d", i+1)), fmt.Sprintf("w%d", i+1), natsURL)
		atExit(w.stop)
		workers = append(workers, w)
		t := target{name: name, api: api, workers: workers, nats: nats, pg: admin, pgApp: "skrip-bench-api", schema: cs}
		results = append(results, t.measure(ctx))
	}
	if *aged > 0 {
		log.Printf("leaving %d runs' leftovers in the work bucket", *aged)
		age(ctx, natsURL, *aged)
		t := target{name: fmt.Sprintf("cluster, 2 workers, %d runs later", *aged), api: api, workers: workers, nats: nats, pg: admin,
			pgApp: "skrip-bench-api", schema: cs}
		results = append(results, t.measure(ctx))
	}
	for _, w := range workers {
		w.stop()
	}
	api.stop()

	res := measureResources(ctx, natsURL, clusterURL, admin)
	load2 := loadAvg()
	report(results, res, load1, load2, idle)
}

// serve starts `skrip serve` in dir with env added to the settings every server here
// has, and waits until it is ready.
func serve(bin, dir, name string, env []string) *proc {
	addr := benchutil.FreeAddr()
	p := startProc(name, bin, dir, addr, []string{"serve"}, append([]string{
		"SKRIP_ADDR=" + addr, "SKRIP_DATA_DIR=" + filepath.Join(dir, "data"), "SKRIP_BOOTSTRAP_ADMIN_TOKEN=" + token,
		"SKRIP_RUNNER=bwrap", "SKRIP_BWRAP_ROOTFS=" + *rootfs, "SKRIP_LOG_LEVEL=warn", "SKRIP_SHUTDOWN_GRACE=5s",
	}, env...))
	atExit(p.stop)
	p.waitHTTP(60 * time.Second)
	return p
}

// worker starts `skrip worker` named id in dir, on the NATS server at natsURL.
func worker(bin, dir, id, natsURL string) *proc {
	addr := benchutil.FreeAddr()
	p := startProc(id, bin, dir, addr, []string{"worker"}, []string{
		"SKRIP_ADDR=" + addr, "SKRIP_DATA_DIR=" + filepath.Join(dir, "data"), "SKRIP_NATS_URL=" + natsURL, "SKRIP_WORKER_ID=" + id,
		"SKRIP_RUNNER=bwrap", "SKRIP_BWRAP_ROOTFS=" + *rootfs, "SKRIP_LOG_LEVEL=warn", "SKRIP_SHUTDOWN_GRACE=5s", "SKRIP_RUN_ACK_WAIT=" + *ackWait,
	})
	p.waitHTTP(60 * time.Second)
	return p
}

// schemaURL is base with search_path set to schema, and application_name to app so
// that the backends serving it can be told apart in pg_stat_activity.
func schemaURL(base, schema, app string) string {
	u, err := url.Parse(base)
	if err != nil {
		fatalf("-db: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// target is one setup under measure: its API node (one), workers, NATS server and
// PostgreSQL backends, each read for CPU.
type target struct {
	name    string
	api     *proc
	workers []*proc
	nats    *proc
	pg      *sql.DB // the admin connection, for pg_stat_activity and table statistics
	pgApp   string  // application_name of the API node's connections; "" without PostgreSQL
	schema  string
}

// usage is the CPU each part of a setup used.
type usage struct {
	api, workers, sandboxes, nats, pg time.Duration
}

// result is what one setup measured.
type result struct {
	name      string
	workers   int
	p50, p95  time.Duration
	loadP50   time.Duration // latency under the throughput phase's load
	rate      float64       // runs/s
	runs      int
	failed    int
	firstErr  string
	cpu       usage // per run
	dbScans   float64
	dbWrites  float64
	hasDBStat bool
	busy      float64 // the machine's CPU busy in the throughput phase, 0–1
	natsMsgs  float64 // messages into nats-server per run
	natsAPI   float64 // JetStream API requests per run
	loadP95   time.Duration
	loadMax   time.Duration
	retried   int64  // runs of the phase that took a second attempt
	workKeys  uint64 // keys in the work bucket when the phase began
}

type sample struct {
	api     cpu
	workers []cpu
	nats    cpu
	pg      map[int]cpu
}

func (t target) sample(ctx context.Context) sample {
	s := sample{api: cpuOf(t.api.cmd.Process.Pid), pg: pgBackends(ctx, t.pg, t.pgApp)}
	for _, w := range t.workers {
		s.workers = append(s.workers, cpuOf(w.cmd.Process.Pid))
	}
	if t.nats != nil {
		s.nats = cpuOf(t.nats.cmd.Process.Pid)
	}
	return s
}

// tableStats sums, over the tables of the setup's schema, the scans (sequential and
// by index: about one per statement that reads or changes a row by its key) and the
// rows inserted, updated and deleted. PostgreSQL 15 flushes a backend's counts within
// a second while it works and within 10 s once idle: read them after a pause.
func (t target) tableStats(ctx context.Context) (scans, writes int64) {
	if t.schema == "" {
		return 0, 0
	}
	t.pg.QueryRowContext(ctx, `SELECT COALESCE(SUM(COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0)), 0),
		COALESCE(SUM(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables WHERE schemaname = $1`, t.schema).Scan(&scans, &writes)
	return scans, writes
}

func (t target) measure(ctx context.Context) result {
	log.Printf("measuring %s", t.name)
	c, err := client.New("http://"+t.api.addr, token)
	if err != nil {
		fatalf("%v", err)
	}
	if _, _, err := c.CreateTool(ctx, "noop", "No-op", "", noop, true); err != nil && !client.IsCode(err, "conflict") {
		fatalf("%s: creating the tool: %v", t.name, err)
	}
	run := func() (time.Duration, error) {
		start := time.Now()
		r, err := c.RunFiles(ctx, "noop", nil, nil, time.Minute)
		if err == nil && r.Status != "succeeded" {
			err = fmt.Errorf("run %s ended %s: %v", r.RunID, r.Status, r.ErrorSummary)
		}
		return time.Since(start), err
	}
	for range 5 { // warm up: the worker's cache, connections
		if _, err := run(); err != nil {
			fatalf("%s: a warm-up run: %v\n%s", t.name, err, t.logs())
		}
	}
	var lat []time.Duration
	for range *n {
		d, err := run()
		if err != nil {
			fatalf("%s: a sequential run: %v\n%s", t.name, err, t.logs())
		}
		lat = append(lat, d)
	}
	res := result{name: t.name, workers: len(t.workers), p50: pct(lat, 50), p95: pct(lat, 95), hasDBStat: t.schema != ""}

	if t.schema != "" {
		time.Sleep(11 * time.Second)
	}
	scans0, writes0 := t.tableStats(ctx)
	retried0 := t.retried(ctx)
	if t.nats != nil {
		res.workKeys = workKeys(ctx, "nats://"+t.nats.addr)
	}
	before := t.sample(ctx)
	busy0, total0 := machineBusy()
	msgs0, api0 := t.nats.natsCounts()
	var mu sync.Mutex
	var loadLat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(*duration)
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				d, err := run()
				mu.Lock()
				if err != nil {
					res.failed++
					if res.firstErr == "" {
						res.firstErr = err.Error()
					}
				} else {
					res.runs++
					loadLat = append(loadLat, d)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := t.sample(ctx)
	busy1, total1 := machineBusy()
	msgs1, api1 := t.nats.natsCounts()
	res.natsMsgs = float64(msgs1-msgs0) / float64(max(res.runs, 1))
	res.natsAPI = float64(api1-api0) / float64(max(res.runs, 1))
	res.busy = float64(busy1-busy0) / float64(max(total1-total0, 1))
	if t.schema != "" {
		time.Sleep(11 * time.Second)
	}
	scans1, writes1 := t.tableStats(ctx)
	res.rate = float64(res.runs) / elapsed.Seconds()
	res.loadP50, res.loadP95, res.loadMax = pct(loadLat, 50), pct(loadLat, 95), pct(loadLat, 100)
	res.retried = t.retried(ctx) - retried0
	per := func(d time.Duration) time.Duration { return d / time.Duration(max(res.runs, 1)) }
	api := after.api.sub(before.api)
	res.cpu.api = per(api.self)
	sandboxes := api.children
	for i := range after.workers {
		d := after.workers[i].sub(before.workers[i])
		res.cpu.workers += per(d.self)
		sandboxes += d.children
	}
	res.cpu.sandboxes = per(sandboxes)
	res.cpu.nats = per(after.nats.sub(before.nats).self)
	res.cpu.pg = per(pgDelta(before.pg, after.pg))
	res.dbScans = float64(scans1-scans0) / float64(max(res.runs, 1))
	res.dbWrites = float64(writes1-writes0) / float64(max(res.runs, 1))
	if res.failed > 0 {
		log.Printf("%s: %d runs failed; the first: %s", t.name, res.failed, res.firstErr)
	}
	for _, p := range append([]*proc{t.api, t.nats}, t.workers...) {
		if p == nil {
			continue
		}
		if gone, err := p.exited(); gone {
			fatalf("%s exited during the measurement (%v):\n%s", p.name, err, tail(p.log))
		}
	}
	return res
}

// retried counts the setup's runs that took more than one attempt.
func (t target) retried(ctx context.Context) int64 {
	if t.schema == "" {
		return 0
	}
	var n int64
	t.pg.QueryRowContext(ctx, "SELECT count(*) FROM "+t.schema+".runs WHERE attempts > 1").Scan(&n)
	return n
}

// idleBusy is how busy the machine's CPUs were over 3 s before the benchmark started
// anything: what others ran meanwhile.
func idleBusy() float64 {
	b0, t0 := machineBusy()
	time.Sleep(3 * time.Second)
	b1, t1 := machineBusy()
	return float64(b1-b0) / float64(max(t1-t0, 1))
}

// logs is the end of each process's log, for a failure.
func (t target) logs() string {
	var b strings.Builder
	for _, p := range append([]*proc{t.api, t.nats}, t.workers...) {
		if p != nil {
			fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.name, p.log, tail(p.log))
		}
	}
	return b.String()
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func cpuMS(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(d)/1e6)
}
