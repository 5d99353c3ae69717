// Command sessionfiles measures the latency of an action run whose session holds 1 KiB
// of files against one whose session holds 50 MB, side by side in one run: the two
// sessions' action runs alternate, so that a load that changes meanwhile weighs on both
// alike. On the local blob store the snapshot is hard links to the store's objects; on
// NATS, hard links of the server's cache of session files. Beside the wall time it
// reports the CPU time the server process spent per action run (the sandbox's own is
// not in it), which a shared machine disturbs less.
//
//	go run ./bench/sessionfiles -n 30 -blob nats
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
)

const tool = `
import skrip_toolkit as tk
A = [{"action_id": "next", "label": "Next", "kind": "form", "fields": []}]
def run_tool(input_dir, output_dir):
    names = [f["name"] for f in tk.input_files()]
    return {"outputs": [{"kind": "notice", "level": "info", "message": ", ".join(names)}], "next_actions": A, "state": {}}
`

// session is one tool's session, with its files' size and what its action runs took.
type session struct {
	size   int
	toolID string
	rev    int64
	wall   []time.Duration
	cpu    []time.Duration
}

func main() {
	n := flag.Int("n", 30, "action runs per case")
	blobBackend := flag.String("blob", "fs", "blob backend: fs or nats")
	flag.Parse()
	dir, err := os.MkdirTemp("", "skrip-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	cfg := benchutil.Defaults(filepath.Join(dir, "data"))
	cfg.Blob = *blobBackend
	cfg.UploadMaxFileBytes, cfg.UploadMaxTotalBytes = 60_000_000, 60_000_000
	c, stop := benchutil.Serve(ctx, cfg)
	defer stop()
	sessions := []*session{{size: 1024}, {size: 50_000_000}}
	for _, s := range sessions {
		slug := fmt.Sprintf("files-%d", s.size)
		t, _, err := c.CreateTool(ctx, slug, "Files", "", tool, true)
		if err != nil {
			log.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("f%d.bin", s.size))
		b := make([]byte, s.size)
		rand.Read(b)
		os.WriteFile(path, b, 0o644)
		r, err := c.RunFiles(ctx, slug, []string{path}, nil, time.Minute)
		if err != nil || r.StateRev == nil {
			log.Fatalf("initial run: %v %+v", err, r)
		}
		s.toolID, s.rev = t.ID, *r.StateRev
	}
	for i := range *n + 2 {
		for _, s := range sessions {
			cpu0, start := cpuTime(), time.Now()
			res, err := c.StartAction(ctx, s.toolID, "default", "next", nil, s.rev)
			if err != nil || res.Run.Status != "succeeded" {
				log.Fatalf("action: %v %+v", err, res)
			}
			wall, cpu := time.Since(start), cpuTime()-cpu0
			s.rev = *res.StateRev
			if i >= 2 { // the first two warm up
				s.wall, s.cpu = append(s.wall, wall), append(s.cpu, cpu)
			}
		}
	}
	small, big := sessions[0], sessions[1]
	fmt.Printf("Action runs through the API, %d each, alternating, blob backend %s.\n\n", *n, *blobBackend)
	fmt.Println("| session files | median | p95 | server CPU per run (median) |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| 1 KiB | %.1f ms | %.1f ms | %.1f ms |\n", ms(median(small.wall)), ms(p95(small.wall)), ms(median(small.cpu)))
	fmt.Printf("| 50 MB | %.1f ms | %.1f ms | %.1f ms |\n", ms(median(big.wall)), ms(p95(big.wall)), ms(median(big.cpu)))
	fmt.Printf("| difference | %+.1f ms | %+.1f ms | %+.1f ms |\n", ms(median(big.wall)-median(small.wall)),
		ms(p95(big.wall)-p95(small.wall)), ms(median(big.cpu)-median(small.cpu)))
}

// cpuTime is the user and system time this process (the server, in it) has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sorted(ds []time.Duration) []time.Duration {
	out := append([]time.Duration(nil), ds...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func median(ds []time.Duration) time.Duration { return sorted(ds)[len(ds)/2] }
func p95(ds []time.Duration) time.Duration    { s := sorted(ds); return s[(len(s)-1)*95/100] }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
