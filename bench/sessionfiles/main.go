// Command sessionfiles measures the latency of an action run whose session holds 1 KiB
// of files against one whose session holds 50 MB, side by side in one run: on the local
// blob store the snapshot is hard links, so the bytes are never copied.
//
//	go run ./bench/sessionfiles -n 30
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
	t, _, err := c.CreateTool(ctx, "files", "Files", "", tool, true)
	if err != nil {
		log.Fatal(err)
	}
	measure := func(size int) (time.Duration, time.Duration) {
		path := filepath.Join(dir, fmt.Sprintf("f%d.bin", size))
		b := make([]byte, size)
		rand.Read(b)
		os.WriteFile(path, b, 0o644)
		r, err := c.RunFiles(ctx, "files", []string{path}, nil, time.Minute)
		if err != nil || r.StateRev == nil {
			log.Fatalf("initial run: %v %+v", err, r)
		}
		rev := *r.StateRev
		var ds []time.Duration
		for range *n + 2 {
			start := time.Now()
			res, err := c.StartAction(ctx, t.ID, "default", "next", nil, rev)
			if err != nil || res.Run.Status != "succeeded" {
				log.Fatalf("action: %v %+v", err, res)
			}
			ds = append(ds, time.Since(start))
			rev = *res.StateRev
		}
		ds = ds[2:] // warm-up
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2], ds[(len(ds)-1)*95/100]
	}
	smallMed, smallP95 := measure(1024)
	bigMed, bigP95 := measure(50_000_000)
	fmt.Printf("Action runs through the API, %d each, blob backend %s.\n\n", *n, *blobBackend)
	fmt.Println("| session files | median | p95 |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| 1 KiB | %.1f ms | %.1f ms |\n", ms(smallMed), ms(smallP95))
	fmt.Printf("| 50 MB | %.1f ms | %.1f ms |\n", ms(bigMed), ms(bigP95))
	fmt.Printf("| difference | %+.1f ms | %+.1f ms |\n", ms(bigMed-smallMed), ms(bigP95-smallP95))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
