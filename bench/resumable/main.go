// Command resumable measures resumable uploads (tus, /api/v1/uploads/) against the plain
// raw PUT of the same file, side by side in one run on each blob backend, and the cost of
// a resume: an upload whose connection drops halfway, then HEAD and the rest. It prints a
// markdown table for docs/BENCHMARKS.md.
//
//	go run ./bench/resumable -size 100MiB -runs 5
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/config"
)

func main() {
	sizeFlag := flag.String("size", "100MiB", "file size")
	runs := flag.Int("runs", 5, "repetitions; the median is reported")
	backends := flag.String("backends", "fs,nats", "the blob backends to measure, comma-separated")
	flag.Parse()
	size, err := config.ParseBytes(*sizeFlag)
	if err != nil {
		log.Fatal(err)
	}
	os.MkdirAll("bench-work", 0o755)
	dir, err := os.MkdirTemp("bench-work", "resumable-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "src.bin")
	writeRandom(src, size)

	fmt.Printf("%s of random bytes, median of %d runs; every row of a backend measured in this one run, alternating.\n\n", *sizeFlag, *runs)
	fmt.Println("| backend | path | time | MB/s | ÷ raw PUT | bytes re-sent |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, b := range strings.Split(*backends, ",") {
		for _, r := range measure(b, src, dir, size, *runs) {
			fmt.Println(r)
		}
	}
}

type bench struct {
	base  string
	token string
	src   string
	size  int64
}

// measure runs every path on one backend, alternating them run by run.
func measure(backend, src, dir string, size int64, runs int) []string {
	data, _ := os.MkdirTemp(dir, "data-")
	cfg := benchutil.Defaults(data)
	cfg.Blob = backend
	cfg.FilesMaxFileBytes, cfg.FilesUserQuotaBytes, cfg.FilesMaxTotalBytes = 1<<40, 1<<40, 1<<40
	c, stop := benchutil.Serve(context.Background(), cfg)
	defer stop()
	b := bench{base: strings.TrimSuffix(c.URL(""), "/"), token: cfg.BootstrapAdminToken, src: src, size: size}

	paths := []struct {
		name string
		f    func() (time.Duration, int64)
	}{
		{"raw PUT", b.put},
		{"tus, one PATCH", func() (time.Duration, int64) { return b.tus(1, 0) }},
		{"tus, 4 PATCHes", func() (time.Duration, int64) { return b.tus(4, 0) }},
		{"tus, cut at 50 %, HEAD, rest", func() (time.Duration, int64) { return b.tus(1, size/2) }},
	}
	times := make([][]time.Duration, len(paths))
	resent := make([][]int64, len(paths))
	for range runs {
		for i, p := range paths {
			d, n := p.f()
			times[i] = append(times[i], d)
			resent[i] = append(resent[i], n)
		}
	}
	put := median(times[0])
	var rows []string
	for i, p := range paths {
		d := median(times[i])
		rs := "–"
		if i == len(paths)-1 {
			slices.Sort(resent[i])
			rs = fmt.Sprintf("%s (min %s, max %s)", kib(resent[i][len(resent[i])/2]), kib(resent[i][0]), kib(resent[i][len(resent[i])-1]))
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %.0f ms | %.0f | %.2f | %s |", backend, p.name, d.Seconds()*1000,
			float64(size)/1e6/d.Seconds(), put.Seconds()/d.Seconds(), rs))
	}
	return rows
}

func kib(n int64) string { return fmt.Sprintf("%.0f KiB", float64(n)/1024) }

func (b bench) do(req *http.Request) *http.Response {
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// put is PUT /api/v1/files/{key} of the file.
func (b bench) put() (time.Duration, int64) {
	f, _ := os.Open(b.src)
	defer f.Close()
	return benchutil.Timed(func() {
		req, _ := http.NewRequest("PUT", b.base+"/api/v1/files/files/put.bin", f)
		req.ContentLength = b.size
		if resp := b.do(req); resp.StatusCode != 201 {
			log.Fatalf("PUT: %s", resp.Status)
		}
	}), 0
}

// tus creates an upload and sends the file in n PATCHes. With cut > 0 the first PATCH
// carries the whole file but its connection drops after cut bytes; the client then asks
// for the offset and sends the rest. It returns the time and the bytes sent twice.
func (b bench) tus(n int, cut int64) (time.Duration, int64) {
	f, _ := os.Open(b.src)
	defer f.Close()
	var resent int64
	d := benchutil.Timed(func() {
		req, _ := http.NewRequest("POST", b.base+"/api/v1/uploads/", nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Length", strconv.FormatInt(b.size, 10))
		req.Header.Set("Upload-Metadata", "key ZmlsZXMvdHVzLmJpbg==")
		resp := b.do(req)
		if resp.StatusCode != 201 {
			log.Fatalf("POST: %s", resp.Status)
		}
		loc := resp.Header.Get("Location")
		if cut > 0 {
			sent := b.patch(loc, 0, &cutReader{r: io.NewSectionReader(f, 0, b.size), left: cut}, b.size, true)
			off := b.offset(loc)
			resent = sent - off
			b.patch(loc, off, io.NewSectionReader(f, off, b.size-off), b.size-off, false)
			return
		}
		step := (b.size + int64(n) - 1) / int64(n)
		for off := int64(0); off < b.size; off += step {
			m := min(step, b.size-off)
			b.patch(loc, off, io.NewSectionReader(f, off, m), m, false)
		}
	})
	return d, resent
}

// patch sends length bytes of r at off, and returns how many bytes it handed over.
func (b bench) patch(loc string, off int64, r io.Reader, length int64, mayFail bool) int64 {
	cr := &countReader{r: r}
	req, _ := http.NewRequest("PATCH", loc, cr)
	req.ContentLength = length
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", strconv.FormatInt(off, 10))
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if !mayFail {
			log.Fatal(err)
		}
		return cr.n
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 204 {
		log.Fatalf("PATCH: %s", resp.Status)
	}
	return cr.n
}

// offset asks for the upload's offset (HEAD) until the server has seen the dropped
// request end.
func (b bench) offset(loc string) int64 {
	var last int64 = -1
	for {
		req, _ := http.NewRequest("HEAD", loc, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		resp := b.do(req)
		off, _ := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
		if off == last && off > 0 {
			return off
		}
		last = off
		time.Sleep(20 * time.Millisecond)
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// cutReader gives left bytes of r, then fails: the connection goes down.
type cutReader struct {
	r    io.Reader
	left int64
}

func (c *cutReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("cut")
	}
	n, err := c.r.Read(p[:min(int64(len(p)), c.left)])
	c.left -= int64(n)
	return n, err
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
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
