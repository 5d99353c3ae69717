// Command runlatency measures a no-op tool run end to end through skrip's API (upload,
// queue, sandbox, result.json, database) beside the same shim launched under the same
// bwrap command line from a Go loop, in one run on one machine: latency (median, p95)
// and runs per second at concurrency 1, 2 and 4. Both use the root the bwrap runner
// would (SKRIP_BWRAP_ROOTFS, else the runner rootfs when built, else the host's /usr).
// It prints markdown for docs/BENCHMARKS.md.
//
//	go run ./bench/runlatency -n 60 -k 40
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
)

const noop = "def run_tool(input_dir, output_dir):\n    return 'ok'\n"

func main() {
	n := flag.Int("n", 60, "sequential runs for the latency figures")
	k := flag.Int("k", 40, "runs per throughput point")
	flag.Parse()
	dir, err := os.MkdirTemp("", "skrip-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	cfg := benchutil.Defaults(filepath.Join(dir, "data"))
	cfg.RunnerConcurrency, cfg.RunnerQueue = 4, 256
	c, stop := benchutil.Serve(ctx, cfg)
	defer stop()
	if _, _, err := c.CreateTool(ctx, "noop", "No-op", "", noop, true); err != nil {
		log.Fatal(err)
	}
	apiRun := func() time.Duration {
		start := time.Now()
		r, err := c.RunFiles(ctx, "noop", nil, nil, time.Minute)
		if err != nil || r.Status != "succeeded" {
			log.Fatalf("run: %v %+v", err, r)
		}
		return time.Since(start)
	}
	apiRun() // warm up

	// The bare baseline: the runner's own bwrap command line, launched from a Go loop
	// without the cgroup and rlimit wrappers.
	bc := app.BwrapConfig(cfg)
	bc.WorkDir = filepath.Join(dir, "bare")
	br, err := bwrap.New(bc, slog.New(slog.DiscardHandler))
	if err != nil {
		log.Fatal(err)
	}
	defer br.Close()
	bare := func(loops int, id string) []time.Duration {
		scratch, in := filepath.Join(dir, "bare-"+id), filepath.Join(dir, "bare-"+id+"-input")
		os.MkdirAll(filepath.Join(scratch, "output"), 0o755)
		os.MkdirAll(in, 0o755)
		spec := runner.Spec{ID: id, Script: []byte(noop), InputDir: in, Env: contract.Env(contract.Manifest{}, nil, nil), Limits: app.RunLimits(cfg)}
		var ds []time.Duration
		for range loops {
			cmd, done, err := br.BareCommand(spec, scratch)
			if err != nil {
				log.Fatalf("bare command: %v", err)
			}
			start := time.Now()
			err = cmd.Run()
			ds = append(ds, time.Since(start))
			done()
			if err != nil {
				log.Fatalf("bare run: %v", err)
			}
		}
		return ds
	}
	bare(3, "warm")

	var apiLat []time.Duration
	for range *n {
		apiLat = append(apiLat, apiRun())
	}
	bareLat := bare(*n, "lat")

	root := cmp.Or(app.BwrapConfig(cfg).Rootfs, "the host's /usr")
	fmt.Printf("No-op tool, %d sequential runs each; throughput from %d runs per point. Server: SQLite, fs blobs, bwrap with cgroup v1 limits, %d workers, root %s.\n\n", *n, *k, cfg.RunnerConcurrency, root)
	fmt.Println("| measure | skrip API | bare bwrap loop | difference |")
	fmt.Println("|---|---|---|---|")
	am, ap := pct(apiLat, 50), pct(apiLat, 95)
	bm, bp := pct(bareLat, 50), pct(bareLat, 95)
	fmt.Printf("| median latency | %s | %s | %+.1f ms |\n", ms(am), ms(bm), float64(am-bm)/1e6)
	fmt.Printf("| p95 latency | %s | %s | %+.1f ms |\n", ms(ap), ms(bp), float64(ap-bp)/1e6)
	for _, conc := range []int{1, 2, 4} {
		start := time.Now()
		var wg sync.WaitGroup
		for i := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := i; j < *k; j += conc {
					apiRun()
				}
			}()
		}
		wg.Wait()
		apiRate := float64(*k) / time.Since(start).Seconds()
		start = time.Now()
		for i := range conc {
			wg.Add(1)
			go func() { defer wg.Done(); bare(*k/conc, fmt.Sprintf("tp%d-%d", conc, i)) }()
		}
		wg.Wait()
		bareRate := float64(*k/conc*conc) / time.Since(start).Seconds()
		fmt.Printf("| runs/s at concurrency %d | %.1f | %.1f | ratio %.2f |\n", conc, apiRate, bareRate, apiRate/bareRate)
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
