// Command filestage measures 100 MiB upload and download throughput through skrip's
// files API on each blob backend, side by side in one run with the baselines the issue
// names: `cp` of the same file on the same disk (fsblob), and a direct nats.go Object
// Store Put/Get of the same bytes on the same nats-server (natsblob). It prints a
// markdown table for docs/BENCHMARKS.md.
//
//	go run ./bench/filestage -size 100MiB -runs 5
//	go run ./bench/filestage -backends fs -runs 7   # fsblob only
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
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/natsserver"
)

func main() {
	sizeFlag := flag.String("size", "100MiB", "file size")
	runs := flag.Int("runs", 5, "repetitions; the median is reported")
	dirFlag := flag.String("dir", "", "working directory (default: a temp dir under ./bench-work)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
	backends := flag.String("backends", "fs,nats", "the blob backends to measure, comma-separated")
	cpuLog := flag.Bool("cpulog", false, "print each operation's wall time and CPU time (this process and its children) to stderr")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	size, err := config.ParseBytes(*sizeFlag)
	if err != nil {
		log.Fatal(err)
	}
	dir := *dirFlag
	if dir == "" {
		os.MkdirAll("bench-work", 0o755)
		if dir, err = os.MkdirTemp("bench-work", "filestage-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	src := filepath.Join(dir, "src.bin")
	writeRandom(src, size)
	ctx := context.Background()
	logCPU = *cpuLog

	var rows [][]string
	mb := float64(size) / 1e6
	rate := func(d time.Duration) string { return fmt.Sprintf("%.0f MB/s", mb/d.Seconds()) }
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2f", b.Seconds()/a.Seconds()) }

	if slices.Contains(strings.Split(*backends, ","), "fs") {
		rows = append(rows, fsRows(ctx, src, dir, *runs, rate, ratio)...)
	}
	if slices.Contains(strings.Split(*backends, ","), "nats") {
		rows = append(rows, natsRows(ctx, src, dir, size, *runs, rate, ratio)...)
	}

	fmt.Printf("%s of random bytes, median of %d runs, each pair measured in this one run.\n\n", *sizeFlag, *runs)
	fmt.Println("| backend | path | skrip | baseline | ratio | baseline 2 | ratio 2 |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", r[0], r[1], r[2], r[3], r[4], r[5], r[6])
	}
}

// fsRows measures fsblob against cp (and cp plus sync -f) of the same file.
func fsRows(ctx context.Context, src, dir string, runs int, rate func(time.Duration) string, ratio func(a, b time.Duration) string) [][]string {
	cp := median(runs, func(i int) time.Duration {
		return timed("cp", func() { run("cp", src, filepath.Join(dir, "cp.bin")) })
	})
	cpSync := median(runs, func(i int) time.Duration {
		return timed("cp+fsync", func() {
			run("cp", src, filepath.Join(dir, "cps.bin"))
			run("sync", "-f", filepath.Join(dir, "cps.bin"))
		})
	})
	c, stop := serve(ctx, dir, "fs", "")
	up, down := apiRoundTrips(ctx, "fs", c, src, dir, runs)
	put := rawPuts(ctx, "fs", c, src, runs)
	stop()
	return [][]string{
		{"fs", "upload (API, multipart POST)", rate(up), "cp " + rate(cp), ratio(up, cp), "cp+fsync " + rate(cpSync), ratio(up, cpSync)},
		{"fs", "upload (API, raw PUT)", rate(put), "cp " + rate(cp), ratio(put, cp), "cp+fsync " + rate(cpSync), ratio(put, cpSync)},
		{"fs", "download (API)", rate(down), "cp " + rate(cp), ratio(down, cp), "cp+fsync " + rate(cpSync), ratio(down, cpSync)},
	}
}

// natsRows measures natsblob against a direct Object Store Put and Get on the same
// nats-server.
func natsRows(ctx context.Context, src, dir string, size int64, runs int, rate func(time.Duration) string, ratio func(a, b time.Duration) string) [][]string {
	ns, err := natsserver.Start(filepath.Join(dir, "nats"), natsserver.WithMaxStore(8*size), natsserver.WithListen("127.0.0.1", -1))
	if err != nil {
		log.Fatal(err)
	}
	defer ns.Shutdown()

	// natsblob against direct Object Store Put/Get on the same server.
	nc, err := ns.Connect()
	if err != nil {
		log.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "direct"})
	if err != nil {
		log.Fatal(err)
	}
	dPut := median(runs, func(i int) time.Duration {
		f, _ := os.Open(src)
		defer f.Close()
		return timed("nats ObjectStore.Put", func() {
			if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: "direct"}, f); err != nil {
				log.Fatal(err)
			}
		})
	})
	dGet := median(runs, func(i int) time.Duration {
		out, _ := os.Create(filepath.Join(dir, "direct.bin"))
		defer out.Close()
		return timed("nats ObjectStore.Get", func() {
			r, err := obs.Get(ctx, "direct")
			if err != nil {
				log.Fatal(err)
			}
			if _, err := io.Copy(out, r); err != nil {
				log.Fatal(err)
			}
			r.Close()
		})
	})
	nc.Close()
	c, stop := serve(ctx, dir, "nats", ns.ClientURL())
	up, down := apiRoundTrips(ctx, "nats", c, src, dir, runs)
	put := rawPuts(ctx, "nats", c, src, runs)
	stop()
	return [][]string{
		{"nats", "upload (API, multipart POST)", rate(up), "ObjectStore.Put " + rate(dPut), ratio(up, dPut), "", ""},
		{"nats", "upload (API, raw PUT)", rate(put), "ObjectStore.Put " + rate(dPut), ratio(put, dPut), "", ""},
		{"nats", "download (API)", rate(down), "ObjectStore.Get " + rate(dGet), ratio(down, dGet), "", ""},
	}
}

// serve starts a skrip server in-process on a fresh data dir.
func serve(ctx context.Context, dir, blob, natsURL string) (*client.Client, func()) {
	data, _ := os.MkdirTemp(dir, "data-")
	cfg := benchutil.Defaults(data)
	cfg.Blob, cfg.NATSURL = blob, natsURL
	cfg.FilesMaxFileBytes, cfg.FilesUserQuotaBytes, cfg.FilesMaxTotalBytes = 1<<40, 1<<40, 1<<40
	return benchutil.Serve(ctx, cfg)
}

// apiRoundTrips uploads src from disk and downloads it back to disk runs times.
func apiRoundTrips(ctx context.Context, backend string, c *client.Client, src, dir string, runs int) (up, down time.Duration) {
	up = median(runs, func(i int) time.Duration {
		f, _ := os.Open(src)
		defer f.Close()
		return timed(backend+" multipart", func() {
			if _, err := c.Upload(ctx, "src.bin", f, client.UploadOptions{Key: "files/bench"}); err != nil {
				log.Fatal(err)
			}
		})
	})
	down = median(runs, func(i int) time.Duration {
		out, _ := os.Create(filepath.Join(dir, "down.bin"))
		defer out.Close()
		return timed(backend+" download", func() {
			if _, err := c.Download(ctx, "files/bench", func(client.FileInfo) (io.Writer, error) { return out, nil }); err != nil {
				log.Fatal(err)
			}
		})
	})
	return up, down
}

// rawPuts uploads src with PUT /api/v1/files/{key}, runs times.
func rawPuts(ctx context.Context, backend string, c *client.Client, src string, runs int) time.Duration {
	return median(runs, func(i int) time.Duration {
		f, _ := os.Open(src)
		defer f.Close()
		st, _ := f.Stat()
		return timed(backend+" put", func() {
			if err := c.Put(ctx, "files/bench-put", f, st.Size(), ""); err != nil {
				log.Fatal(err)
			}
		})
	})
}

// logCPU is the -cpulog flag.
var logCPU bool

// timed runs f and returns how long it took. With -cpulog it also prints the CPU time f
// took in this process (the server and the client both) and in child processes (cp): on
// a shared machine that moves less than the wall time.
func timed(label string, f func()) time.Duration {
	var s0, c0, s1, c1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &s0)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c0)
	d := benchutil.Timed(f)
	if logCPU {
		syscall.Getrusage(syscall.RUSAGE_SELF, &s1)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c1)
		cpu := func(a, b syscall.Rusage) time.Duration {
			return time.Duration(b.Utime.Nano() - a.Utime.Nano() + b.Stime.Nano() - a.Stime.Nano())
		}
		fmt.Fprintf(os.Stderr, "cpulog %s wall_ms=%.1f cpu_ms=%.1f\n", label, d.Seconds()*1000, (cpu(s0, s1)+cpu(c0, c1)).Seconds()*1000)
	}
	return d
}

func median(n int, f func(int) time.Duration) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		ds[i] = f(i)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2]
}

func run(name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		log.Fatalf("%s: %v\n%s", name, err, out)
	}
}

func writeRandom(path string, size int64) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		log.Fatal(err)
	}
}
