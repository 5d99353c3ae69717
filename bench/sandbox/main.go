// Command sandbox measures agent sandboxes through skrip's HTTP API on each runner: the
// latency of `exec true` (the whole request: API, a fresh bwrap or a Docker exec, the
// answer) beside the bare mechanism it is built on (`bwrap --ro-bind / / true`, or one
// exec of `true` through the Engine API in the same container), and the throughput of
// staging a 100 MiB file into a workspace and publishing it back out, with `cp` of the
// same file on the same disk as the baseline. It prints a markdown table for
// docs/BENCHMARKS.md.
//
//	go run ./bench/sandbox -execs 50 -size 100MiB -runs 5
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	mobyclient "github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
)

func main() {
	execs := flag.Int("execs", 50, "`exec true` calls per runner")
	sizeFlag := flag.String("size", "100MiB", "size of the staged and published file")
	runs := flag.Int("runs", 5, "stage and publish repetitions; the median is reported")
	runners := flag.String("runners", "bwrap,docker", "runners to measure")
	flag.Parse()
	size, err := config.ParseBytes(*sizeFlag)
	if err != nil {
		log.Fatal(err)
	}
	os.MkdirAll("bench-work", 0o755)
	dir, err := os.MkdirTemp("bench-work", "sandbox-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "src.bin")
	writeRandom(src, size)
	cpTime := median(*runs, func() time.Duration {
		dst := filepath.Join(dir, "cp.bin")
		defer os.Remove(dst)
		return benchutil.Timed(func() {
			if out, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
				log.Fatalf("cp: %v %s", err, out)
			}
		})
	})

	fmt.Printf("| runner | exec `true` p50 | p90 | max | bare mechanism p50 | stage %s | publish %s | cp baseline |\n|---|---|---|---|---|---|---|---|\n", *sizeFlag, *sizeFlag)
	for _, name := range strings.Split(*runners, ",") {
		cfg := benchutil.Defaults(filepath.Join(dir, "data-"+name))
		cfg.Runner = name
		cfg.FilesMaxFileBytes = max(cfg.FilesMaxFileBytes, size)
		cfg.FilesUserQuotaBytes = max(cfg.FilesUserQuotaBytes, 4*size)
		measure(context.Background(), cfg, src, size, *execs, *runs, cpTime)
	}
}

func measure(ctx context.Context, cfg config.Config, src string, size int64, execs, runs int, cpTime time.Duration) {
	c, stop := benchutil.Serve(ctx, cfg)
	defer stop()
	sb, err := c.CreateSandbox(ctx, client.SandboxOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.DeleteSandbox(ctx, sb.SandboxID)
	// Warm up: the first exec pays for page cache and, on Docker, the engine's exec setup.
	for range 3 {
		c.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"true"}})
	}
	var lat []time.Duration
	for range execs {
		lat = append(lat, benchutil.Timed(func() {
			res, err := c.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				log.Fatalf("exec true: %+v %v", res, err)
			}
		}))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	bare := bareLatency(ctx, cfg.Runner, sb.SandboxID, execs)

	f, err := os.Open(src)
	if err != nil {
		log.Fatal(err)
	}
	up, err := c.Upload(ctx, "src.bin", f, client.UploadOptions{})
	f.Close()
	if err != nil {
		log.Fatal(err)
	}
	stage := median(runs, func() time.Duration {
		return benchutil.Timed(func() {
			if _, err := c.StageFile(ctx, sb.SandboxID, up.FileKey, "in.bin"); err != nil {
				log.Fatal(err)
			}
		})
	})
	publish := median(runs, func() time.Duration {
		var key string
		d := benchutil.Timed(func() {
			p, err := c.PublishFile(ctx, sb.SandboxID, "in.bin", "", "")
			if err != nil {
				log.Fatal(err)
			}
			if p.Checksum != up.Checksum {
				log.Fatalf("published %s, staged %s", p.Checksum, up.Checksum)
			}
			key = p.FileKey
		})
		c.DeleteFile(ctx, key)
		return d
	})
	fmt.Printf("| %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %s (%s) |\n", cfg.Runner,
		ms(lat[len(lat)/2]), ms(lat[len(lat)*9/10]), ms(lat[len(lat)-1]), ms(bare),
		ms(stage), rate(size, stage), ms(publish), rate(size, publish), ms(cpTime), rate(size, cpTime))
}

// bareLatency is the median time of the mechanism an exec stands on, without skrip:
// starting bwrap on the host, or one Engine API exec of `true` in the sandbox's container.
func bareLatency(ctx context.Context, runnerName, id string, n int) time.Duration {
	if runnerName == "bwrap" {
		return median(n, func() time.Duration {
			return benchutil.Timed(func() {
				if out, err := exec.Command("bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true").CombinedOutput(); err != nil {
					log.Fatalf("bwrap: %v %s", err, out)
				}
			})
		})
	}
	cli, err := mobyclient.New(mobyclient.FromEnv, mobyclient.WithAPIVersionNegotiation())
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	return median(n, func() time.Duration {
		return benchutil.Timed(func() {
			ex, err := cli.ExecCreate(ctx, "skrip-sbx-"+id, mobyclient.ExecCreateOptions{Cmd: []string{"true"}, User: "65534:65534", AttachStdout: true, AttachStderr: true})
			if err != nil {
				log.Fatal(err)
			}
			att, err := cli.ExecAttach(ctx, ex.ID, mobyclient.ExecAttachOptions{})
			if err != nil {
				log.Fatal(err)
			}
			io.Copy(io.Discard, att.Reader)
			att.Close()
			if insp, err := cli.ExecInspect(ctx, ex.ID, mobyclient.ExecInspectOptions{}); err != nil || insp.ExitCode != 0 {
				log.Fatalf("exec true: %+v %v", insp, err)
			}
		})
	})
}

func median(n int, f func() time.Duration) time.Duration {
	var ds []time.Duration
	for range n {
		ds = append(ds, f())
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func rate(n int64, d time.Duration) string {
	return fmt.Sprintf("%.0f MiB/s", float64(n)/(1<<20)/d.Seconds())
}

func writeRandom(path string, n int64) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, n); err != nil {
		log.Fatal(err)
	}
}
