// Command outputfill repeats the probe's output fill of issue 28 against real `skrip
// serve` binaries, one after another in one run, so they can be put side by side: a user
// holding about 990 MB of staged files under a 1 GiB quota runs a tool that writes
// 100 MiB of artifacts, 12 times one after another and then 4 times at once. For each
// binary it reports the bytes the runs added to the store (du of the data dir's blobs)
// and to the user's usage (GET /api/v1/me, where the binary reports it), what the runs
// kept, the server's peak RSS (VmHWM) and the slowest /healthz answer during the runs.
//
//	go run ./bench/outputfill -bin branch=/tmp/skrip -bin base=/tmp/skrip-base
//
// Each -bin is name=path of a built skrip binary; they run in the order given, each with
// a data dir of its own under -dir. The runner is bwrap on -rootfs.
package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/wire"
)

const (
	token = "skr_benchmark-admin-token"
	quota = 1 << 30 // SKRIP_FILES_USER_QUOTA_BYTES, the default
	// staged is what the user holds before the runs: 10 files of 99 MB.
	stagedFiles, stagedFileBytes = 10, 99_000_000
	// The tool writes 4 files of 25 MiB: 100 MiB of artifacts per run, in pieces, so a
	// quota that keeps what fits has something to keep.
	fillTool = `import os

def run_tool(input_dir, output_dir):
    for i in range(4):
        with open(os.path.join(output_dir, "part%d.bin" % i), "wb") as f:
            for _ in range(25):
                f.write(os.urandom(1 << 20))
    return "wrote 100 MiB"
`
)

type bins []string

func (b *bins) String() string     { return strings.Join(*b, ",") }
func (b *bins) Set(v string) error { *b = append(*b, v); return nil }

var (
	dir    = flag.String("dir", "", "where the servers' data dirs go (default: a new temporary directory, removed after)")
	rootfs = flag.String("rootfs", cmp.Or(os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"), "/var/cache/skrip/runner-rootfs-13"),
		"the bwrap runner's root (SKRIP_BWRAP_ROOTFS)")
	sequential = flag.Int("seq", 12, "runs one after another")
	parallel   = flag.Int("par", 4, "runs at once, after those")
)

// result is what one binary did.
type result struct {
	name                      string
	seqStore, seqUsage        int64 // bytes the sequential runs added: to the blobs on disk, to the user's usage (-1: not reported)
	seqKept                   int64 // artifact bytes the sequential runs report kept
	seqTime                   time.Duration
	parStore, parUsage        int64
	parKept                   int64
	parTime                   time.Duration
	failed                    int // runs that did not succeed
	notices                   int // runs that said they dropped artifacts
	usageAfter                int64
	rssStaged, rssAfter       int64 // VmHWM after staging and after the runs
	healthMax                 time.Duration
	healthChecks, healthSlow  int // /healthz answers during the runs, and those over 1 s
	firstNotice, stagedReport string
}

func main() {
	var bs bins
	flag.Var(&bs, "bin", "name=path of a skrip binary to measure (repeat)")
	flag.Parse()
	if len(bs) == 0 {
		log.Fatal("name at least one binary: -bin name=path")
	}
	base := *dir
	if base == "" {
		d, err := os.MkdirTemp("", "outputfill-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		base = d
	}
	var results []result
	for _, b := range bs {
		name, path, ok := strings.Cut(b, "=")
		if !ok {
			log.Fatalf("-bin %q: want name=path", b)
		}
		results = append(results, measure(name, path, filepath.Join(base, name)))
	}
	report(results)
}

// measure starts bin in dir and runs the fill against it.
func measure(name, bin, dir string) result {
	ctx := context.Background()
	res := result{name: name}
	srv := serve(bin, dir)
	defer srv.stop()
	admin, err := client.New("http://"+srv.addr, token)
	if err != nil {
		log.Fatal(err)
	}
	if _, _, err := admin.CreateTool(ctx, "fill", "Fill", "", fillTool, true); err != nil {
		log.Fatalf("%s: creating the tool: %v", name, err)
	}
	u, err := admin.CreateUser(ctx, "filler", "user", "")
	if err != nil {
		log.Fatalf("%s: creating the user: %v", name, err)
	}
	c, err := client.New("http://"+srv.addr, u.Token)
	if err != nil {
		log.Fatal(err)
	}
	for i := range stagedFiles {
		src := rand.NewChaCha8([32]byte{byte(i), 28})
		if _, err := c.Upload(ctx, "staged.bin", io.LimitReader(src, stagedFileBytes), client.UploadOptions{Key: fmt.Sprintf("files/staged-%02d.bin", i)}); err != nil {
			log.Fatalf("%s: staging file %d: %v", name, i, err)
		}
	}
	blobs := filepath.Join(dir, "data", "blobs")
	res.rssStaged = hwm(srv.pid())
	res.stagedReport = fmt.Sprintf("%d MB on disk, usage %s", du(blobs)/1_000_000, mb(usage(ctx, c)))

	stopProbe := make(chan struct{})
	probed := make(chan struct{})
	go func() { probe(srv.addr, stopProbe, &res); close(probed) }()

	runs := func(n int, at0 bool) (added, usageAdded, kept int64, took time.Duration) {
		d0, u0 := du(blobs), usage(ctx, c)
		var mu sync.Mutex
		one := func() {
			r, err := c.RunFiles(ctx, "fill", nil, nil, 5*time.Minute)
			if err == nil && !r.Done() {
				r, err = c.WaitRun(ctx, r)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil || r.Status != "succeeded" {
				res.failed++
				log.Printf("%s: a run: %v %s %v", name, err, r.Status, r.ErrorSummary)
				return
			}
			for _, a := range r.Artifacts {
				kept += a.Bytes
			}
			for _, o := range r.Outputs {
				if o.Kind == "notice" && strings.Contains(o.Message, "dropped") {
					res.notices++
					if res.firstNotice == "" {
						res.firstNotice = o.Message
					}
				}
			}
		}
		took = timed(func() {
			if !at0 {
				for range n {
					one()
				}
				return
			}
			var wg sync.WaitGroup
			for range n {
				wg.Go(one)
			}
			wg.Wait()
		})
		u1 := usage(ctx, c)
		usageAdded = -1
		if u0 >= 0 && u1 >= 0 {
			usageAdded = u1 - u0
		}
		return du(blobs) - d0, usageAdded, kept, took
	}
	res.seqStore, res.seqUsage, res.seqKept, res.seqTime = runs(*sequential, false)
	res.parStore, res.parUsage, res.parKept, res.parTime = runs(*parallel, true)
	close(stopProbe)
	<-probed
	res.usageAfter = usage(ctx, c)
	res.rssAfter = hwm(srv.pid())
	return res
}

// usage is the user's total usage by GET /api/v1/me, or -1 when the binary does not
// report one.
func usage(ctx context.Context, c *client.Client) int64 {
	var me struct {
		Usage *wire.Usage `json:"usage"`
	}
	if err := c.Do(ctx, http.MethodGet, "/api/v1/me", nil, &me); err != nil {
		log.Fatalf("GET /api/v1/me: %v", err)
	}
	if me.Usage == nil {
		return -1
	}
	return me.Usage.Total
}

// probe asks /healthz every 100 ms until stop is closed, keeping the slowest answer.
func probe(addr string, stop chan struct{}, res *result) {
	hc := &http.Client{Timeout: time.Minute}
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		start := time.Now()
		resp, err := hc.Get("http://" + addr + "/healthz")
		d := time.Since(start)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			log.Printf("/healthz: %v", err)
		}
		res.healthChecks++
		if d > time.Second {
			res.healthSlow++
		}
		res.healthMax = max(res.healthMax, d)
	}
}

// server is one `skrip serve` the benchmark started.
type server struct {
	cmd  *exec.Cmd
	addr string
	log  string
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// serve starts `bin serve` on a free port with its data dir under dir and the settings
// of the probe (the defaults, bwrap), and waits until it is ready.
func serve(bin, dir string) *server {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	addr := benchutil.FreeAddr()
	logPath := filepath.Join(dir, "serve.log")
	f, err := os.Create(logPath)
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(benchutil.BaseEnv(), "SKRIP_ADDR="+addr, "SKRIP_DATA_DIR="+filepath.Join(dir, "data"), "SKRIP_BOOTSTRAP_ADMIN_TOKEN="+token,
		"SKRIP_RUNNER=bwrap", "SKRIP_BWRAP_ROOTFS="+*rootfs, "SKRIP_LOG_LEVEL=warn", "SKRIP_SHUTDOWN_GRACE=5s",
		"SKRIP_FILES_USER_QUOTA_BYTES="+strconv.Itoa(quota), "SKRIP_RUNNER_CONCURRENCY=4")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		log.Fatalf("starting %s: %v", bin, err)
	}
	s := &server{cmd: cmd, addr: addr, log: logPath}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
	}
	s.stop()
	b, _ := os.ReadFile(logPath)
	log.Fatalf("%s was not ready within a minute; its log:\n%s", bin, b)
	return nil
}

// du is the disk usage of the tree at path, in bytes (du -sB1).
func du(path string) int64 {
	out, err := exec.Command("du", "-sB1", path).Output()
	if err != nil {
		log.Fatalf("du %s: %v", path, err)
	}
	n, err := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	if err != nil {
		log.Fatalf("du %s: %q", path, out)
	}
	return n
}

// hwm is process pid's peak resident set (VmHWM), in bytes.
func hwm(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Fatal(err)
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func timed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// mb is n bytes in MB (10^6), or "—" for -1 (not reported).
func mb(n int64) string {
	if n < 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MB", float64(n)/1e6)
}

func report(rs []result) {
	row := func(label string, f func(r result) string) {
		cells := []string{label}
		for _, r := range rs {
			cells = append(cells, f(r))
		}
		fmt.Println("| " + strings.Join(cells, " | ") + " |")
	}
	head := []string{""}
	sep := []string{"---"}
	for _, r := range rs {
		head, sep = append(head, r.name), append(sep, "---")
	}
	fmt.Println("| " + strings.Join(head, " | ") + " |")
	fmt.Println("|" + strings.Join(sep, "|") + "|")
	row("before the runs", func(r result) string { return r.stagedReport })
	row(fmt.Sprintf("%d runs one after another: added to the store (du)", *sequential), func(r result) string { return mb(r.seqStore) })
	row("… to the user's usage (GET /me)", func(r result) string { return mb(r.seqUsage) })
	row("… artifacts the runs kept", func(r result) string { return mb(r.seqKept) })
	row("… took", func(r result) string { return r.seqTime.Round(100 * time.Millisecond).String() })
	row(fmt.Sprintf("%d runs at once: added to the store (du)", *parallel), func(r result) string { return mb(r.parStore) })
	row("… to the user's usage (GET /me)", func(r result) string { return mb(r.parUsage) })
	row("… artifacts the runs kept", func(r result) string { return mb(r.parKept) })
	row("… took", func(r result) string { return r.parTime.Round(100 * time.Millisecond).String() })
	row("user's usage after (quota 1074 MB)", func(r result) string { return mb(r.usageAfter) })
	row("runs that failed / said they dropped artifacts", func(r result) string { return fmt.Sprintf("%d / %d", r.failed, r.notices) })
	row("server peak RSS (VmHWM): after staging, after the runs", func(r result) string {
		return fmt.Sprintf("%d MiB, %d MiB", r.rssStaged>>20, r.rssAfter>>20)
	})
	row("/healthz during the runs: slowest (answers, over 1 s)", func(r result) string {
		return fmt.Sprintf("%s (%d, %d)", r.healthMax.Round(time.Millisecond), r.healthChecks, r.healthSlow)
	})
	for _, r := range rs {
		if r.firstNotice != "" {
			fmt.Printf("\n%s's first notice: %s\n", r.name, r.firstNotice)
		}
	}
}
