// Command dockerlatency measures, side by side in one run, the median latency of a no-op
// tool run through skrip's API on the Docker runner and on bubblewrap, and the median of
// a bare `docker run --rm <runner image> true` from the docker CLI.
//
//	go run ./bench/dockerlatency -n 20
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/runner/docker"
)

func main() {
	n := flag.Int("n", 20, "runs per measure")
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "skrip-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	median := func(f func()) time.Duration {
		f() // warm-up
		var ds []time.Duration
		for range *n {
			s := time.Now()
			f()
			ds = append(ds, time.Since(s))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	api := func(runnerName string) time.Duration {
		cfg := benchutil.Defaults(filepath.Join(dir, runnerName))
		cfg.Runner = runnerName
		c, stop := benchutil.Serve(ctx, cfg)
		defer stop()
		if _, _, err := c.CreateTool(ctx, "noop", "No-op", "", "def run_tool(i, o):\n    return 'ok'\n", true); err != nil {
			log.Fatal(err)
		}
		return median(func() {
			r, err := c.RunFiles(ctx, "noop", nil, nil, time.Minute)
			if err != nil || r.Status != "succeeded" {
				log.Fatalf("%s run: %v %+v", runnerName, err, r)
			}
		})
	}
	dockerAPI := api("docker")
	bwrapAPI := api("bwrap")
	bare := median(func() {
		if out, err := exec.Command("docker", "run", "--rm", "--network", "none", docker.DefaultImage(), "true").CombinedOutput(); err != nil {
			log.Fatalf("docker run: %v %s", err, out)
		}
	})
	fmt.Printf("No-op tool, median of %d runs each, after one warm-up; image %s.\n\n", *n, docker.DefaultImage())
	fmt.Println("| measure | median |")
	fmt.Println("|---|---|")
	fmt.Printf("| skrip run through the API, docker runner | %.0f ms |\n", ms(dockerAPI))
	fmt.Printf("| skrip run through the API, bwrap runner | %.0f ms |\n", ms(bwrapAPI))
	fmt.Printf("| `docker run --rm --network none %s true` (CLI) | %.0f ms |\n", docker.DefaultImage(), ms(bare))
	fmt.Printf("| docker runner ÷ bare docker run | %.2f |\n", float64(dockerAPI)/float64(bare))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
