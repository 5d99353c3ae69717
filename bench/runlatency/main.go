// Command runlatency measures a no-op tool run end to end through skrip's API (upload,
// queue, sandbox, result.json, database) beside three loops launched from Go in the same
// process, on the same root (SKRIP_BWRAP_ROOTFS, else the runner rootfs when built, else
// the host's /usr) and as the same sandbox uid:
//
//   - the bare loop: the runner's own bwrap command line (the same mounts, filter,
//     environment and shim) with no limits;
//   - the bare loop with limits: the same command line under the run's limits, as the
//     runner applies them (cgroups, rlimits, wall time, captured output);
//   - the floor: `bwrap --unshare-all … python3 -c pass`, the least a sandboxed Python
//     costs here.
//
// Latency (median, p95) and CPU time per run (this process's and its children's, which a
// loaded machine does not inflate as it does wall time) come from sequential runs with the
// four kinds interleaved; runs per second at concurrency 1, 2 and 4 from k runs of each
// kind per point. It prints markdown for docs/BENCHMARKS.md.
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
	"runtime/pprof"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
)

const noop = "def run_tool(input_dir, output_dir):\n    return 'ok'\n"

// kinds of run, in the order of the table's columns.
var kinds = []string{"skrip API", "bare loop with limits", "bare loop", "floor"}

func main() {
	n := flag.Int("n", 60, "sequential runs of each kind for the latency figures")
	k := flag.Int("k", 40, "runs of each kind per throughput point")
	apiProfile := flag.String("cpuprofile", "", "write a CPU profile of API runs alone (after the table) to this file")
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

	bc := app.BwrapConfig(cfg)
	bc.WorkDir = filepath.Join(dir, "bare")
	br, err := bwrap.New(bc, slog.New(slog.DiscardHandler))
	if err != nil {
		log.Fatal(err)
	}
	defer br.Close()
	in := filepath.Join(dir, "bare-input")
	if err := os.MkdirAll(in, 0o755); err != nil {
		log.Fatal(err)
	}
	var seq sync.Mutex
	next := 0
	// spec is a fresh run of the no-op tool for the bare loops, with its scratch dir.
	spec := func() (runner.Spec, string) {
		seq.Lock()
		next++
		id := fmt.Sprintf("b%d", next)
		seq.Unlock()
		scratch := filepath.Join(dir, "scratch", id)
		if err := os.MkdirAll(filepath.Join(scratch, "output"), 0o755); err != nil {
			log.Fatal(err)
		}
		return runner.Spec{ID: id, Script: []byte(noop), InputDir: in, Env: contract.Env(contract.Manifest{}, nil, nil), Limits: app.RunLimits(cfg)}, scratch
	}
	// run runs one of the kind and returns how long it took, not counting the setup
	// the runner does before it starts bwrap for the bare loops (as before issue 18).
	run := func(kind string) time.Duration {
		switch kind {
		case "skrip API":
			start := time.Now()
			r, err := c.RunFiles(ctx, "noop", nil, nil, time.Minute)
			if err != nil || r.Status != "succeeded" {
				log.Fatalf("run: %v %+v", err, r)
			}
			return time.Since(start)
		case "bare loop":
			s, scratch := spec()
			defer os.RemoveAll(scratch)
			cmd, done, err := br.BareCommand(s, scratch)
			if err != nil {
				log.Fatalf("bare command: %v", err)
			}
			defer done()
			start := time.Now()
			if err := cmd.Run(); err != nil {
				log.Fatalf("bare run: %v", err)
			}
			return time.Since(start)
		case "bare loop with limits":
			s, scratch := spec()
			defer os.RemoveAll(scratch)
			exec, done, err := br.BareLimited(s, scratch)
			if err != nil {
				log.Fatalf("bare command: %v", err)
			}
			defer done()
			start := time.Now()
			if res, err := exec(ctx); err != nil || res.ExitCode != 0 {
				log.Fatalf("bare run with limits: %v %+v", err, res)
			}
			return time.Since(start)
		default:
			cmd := br.FloorCommand()
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				log.Fatalf("floor: %v %s", err, out)
			}
			return time.Since(start)
		}
	}
	for range 3 { // warm up
		for _, kind := range kinds {
			run(kind)
		}
	}

	lat, cpu := map[string][]time.Duration{}, map[string][]time.Duration{}
	for range *n {
		for _, kind := range kinds {
			before := cpuTime()
			lat[kind] = append(lat[kind], run(kind))
			cpu[kind] = append(cpu[kind], cpuTime()-before)
		}
	}
	rate := map[string]map[int]float64{}
	concs := []int{1, 2, 4}
	for _, conc := range concs {
		for _, kind := range kinds {
			start := time.Now()
			var wg sync.WaitGroup
			for i := range conc {
				wg.Go(func() {
					for j := i; j < *k; j += conc {
						run(kind)
					}
				})
			}
			wg.Wait()
			if rate[kind] == nil {
				rate[kind] = map[int]float64{}
			}
			rate[kind][conc] = float64(*k) / time.Since(start).Seconds()
		}
	}

	if *apiProfile != "" {
		f, err := os.Create(*apiProfile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		for range *n {
			run("skrip API")
		}
		pprof.StopCPUProfile()
		f.Close()
	}

	root := cmp.Or(app.BwrapConfig(cfg).Rootfs, "the host's /usr")
	fmt.Printf("No-op tool, %d sequential runs of each kind (interleaved); throughput from %d runs of each kind per point. Server: SQLite, fs blobs, bwrap with %s limits, %d workers, root %s.\n\n",
		*n, *k, br.Limiter(), cfg.RunnerConcurrency, root)
	fmt.Println("| measure | " + kinds[0] + " | " + kinds[1] + " | " + kinds[2] + " | " + kinds[3] + " | API − bare | API − bare with limits | API ÷ floor |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, p := range []int{50, 95} {
		name := map[int]string{50: "median latency", 95: "p95 latency"}[p]
		v := map[string]time.Duration{}
		fmt.Printf("| %s |", name)
		for _, kind := range kinds {
			v[kind] = pct(lat[kind], p)
			fmt.Printf(" %s |", ms(v[kind]))
		}
		api := v["skrip API"]
		fmt.Printf(" %+.1f ms | %+.1f ms | %.2f× |\n", float64(api-v["bare loop"])/1e6, float64(api-v["bare loop with limits"])/1e6, float64(api)/float64(v["floor"]))
	}
	fmt.Print("| CPU per run (median) |")
	v := map[string]time.Duration{}
	for _, kind := range kinds {
		v[kind] = pct(cpu[kind], 50)
		fmt.Printf(" %s |", ms(v[kind]))
	}
	fmt.Printf(" %+.1f ms | %+.1f ms | %.2f× |\n", float64(v["skrip API"]-v["bare loop"])/1e6, float64(v["skrip API"]-v["bare loop with limits"])/1e6, float64(v["skrip API"])/float64(v["floor"]))
	for _, conc := range concs {
		fmt.Printf("| runs/s at concurrency %d |", conc)
		for _, kind := range kinds {
			fmt.Printf(" %.1f |", rate[kind][conc])
		}
		api := rate["skrip API"][conc]
		fmt.Printf(" ratio %.2f | ratio %.2f | ratio %.2f |\n", api/rate["bare loop"][conc], api/rate["bare loop with limits"][conc], api/rate["floor"][conc])
	}
}

// cpuTime is the CPU time, user and system, this process and the children it waited for
// have used: the server, the client and the sandboxes, which a loaded machine does not
// inflate as it does wall time.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	var total time.Duration
	for _, ru := range []syscall.Rusage{self, children} {
		total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return total
}

func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
