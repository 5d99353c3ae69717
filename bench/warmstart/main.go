// Command warmstart measures tool runs through skrip's API on the bwrap runner with the
// runner rootfs, started cold (SKRIP_RUNNER_WARM_MEMORY=0: every run starts Python) and
// warm (a parked interpreter with the tool's modules imported serves each run), beside
// the same work done by `python3 -c` in a bare bwrap sandbox on the same rootfs (the
// floor). Two servers in this process; runs alternate between them, and before each one
// the warm server's next interpreter is parked and ready, so nothing imports beside a
// run being measured: a teacher's clicks are seconds apart. It prints markdown for
// docs/BENCHMARKS.md, with the memory the parked interpreters held.
//
//	go run ./bench/warmstart -n 8
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
)

// tools: each with the same work as a bare `python3 -c` (work) and as a tool (source).
var tools = []struct{ slug, title, work, source string }{
	{"noop", "no-op", "pass", "def run_tool(input_dir, output_dir):\n    return 'ok'\n"},
	{"pandas", "`import pandas`, one small table",
		"import pandas\ndf = pandas.DataFrame({'namn': ['Ada', 'Bo'], 'poäng': [3, 4]})\nhtml = df.to_html()",
		"import pandas\ndef run_tool(input_dir, output_dir):\n    df = pandas.DataFrame({'namn': ['Ada', 'Bo'], 'poäng': [3, 4]})\n    return df.to_html()\n"},
	{"weasyprint", "WeasyPrint, one-page PDF",
		"import weasyprint\nweasyprint.HTML(string='<h1>Rubrik</h1><p>Hej världen.</p>').write_pdf('/tmp/a.pdf')",
		"import os, weasyprint\ndef run_tool(input_dir, output_dir):\n    weasyprint.HTML(string='<h1>Rubrik</h1><p>Hej världen.</p>').write_pdf(os.path.join(output_dir, 'a.pdf'))\n    return 'ok'\n"},
	{"docx", "python-docx, one paragraph",
		"import docx\nd = docx.Document()\nd.add_paragraph('Hej världen.')\nd.save('/tmp/a.docx')",
		"import os, docx\ndef run_tool(input_dir, output_dir):\n    d = docx.Document()\n    d.add_paragraph('Hej världen.')\n    d.save(os.path.join(output_dir, 'a.docx'))\n    return 'ok'\n"},
}

type server struct {
	name string
	c    *client.Client
	lat  map[string][]time.Duration
}

func main() {
	n := flag.Int("n", 8, "measured runs of each tool on each server")
	dir := flag.String("rootfs", rootfs.DefaultDir, "the runner rootfs")
	flag.Parse()
	if st, err := rootfs.Inspect(*dir); err != nil || !st.Complete {
		log.Fatalf("%s is not a finished runner rootfs (%v); build it with scripts/runner-image.sh", *dir, err)
	}
	tmp, err := os.MkdirTemp("", "skrip-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()

	var servers []*server
	for _, s := range []struct {
		name string
		warm int64
	}{{"cold", 0}, {"warm", 512 << 20}} {
		cfg := benchutil.Defaults(filepath.Join(tmp, s.name))
		cfg.BwrapRootfs = *dir
		cfg.RunnerWarmMemory = s.warm
		c, stop := benchutil.Serve(ctx, cfg)
		defer stop()
		for _, t := range tools {
			if _, _, err := c.CreateTool(ctx, t.slug, t.title, "", t.source, true); err != nil {
				log.Fatal(err)
			}
		}
		servers = append(servers, &server{name: s.name, c: c, lat: map[string][]time.Duration{}})
	}
	br, err := bwrap.New(bwrap.Config{WorkDir: filepath.Join(tmp, "floor"), Rootfs: *dir}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		log.Fatal(err)
	}
	defer br.Close()
	floor := map[string][]time.Duration{}

	run := func(s *server, slug string) {
		start := time.Now()
		r, err := s.c.RunFiles(ctx, slug, nil, nil, time.Minute)
		d := time.Since(start)
		if err != nil || r.Status != "succeeded" {
			log.Fatalf("%s on %s: %v %+v", slug, s.name, err, r)
		}
		s.lat[slug] = append(s.lat[slug], d)
		if s.name == "warm" {
			waitParked(s.c)
		}
	}
	bare := func(slug, work string) {
		cmd := br.FloorPython(work)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("bare %s: %v %s", slug, err, out)
		}
		floor[slug] = append(floor[slug], time.Since(start))
	}
	// One unmeasured round: the first warm run of a tool is cold (nothing was parked for
	// its modules yet), and page caches fill.
	for _, t := range tools {
		for _, s := range servers {
			run(s, t.slug)
		}
		bare(t.slug, t.work)
	}
	for _, s := range servers {
		clear(s.lat)
	}
	clear(floor)
	var parkedBytes []float64
	for range *n {
		for _, t := range tools {
			for _, s := range servers {
				run(s, t.slug)
			}
			bare(t.slug, t.work)
			parkedBytes = append(parkedBytes, metric(servers[1].c, "skrip_runner_parked_bytes"))
		}
	}
	warm, cold := metric(servers[1].c, "skrip_runner_warm_starts_total"), metric(servers[1].c, "skrip_runner_cold_starts_total")

	host, _ := os.Hostname()
	fmt.Printf("%s, %d cores, %s. %d runs of each tool on each server, through the API, alternating; bwrap runner on %s, SQLite, fs blobs; the warm server served %.0f runs warm and %.0f cold (the first of each tool).\n\n",
		host, runtime.NumCPU(), time.Now().Format("2006-01-02"), *n, *dir, warm, cold)
	fmt.Println("| tool | cold median | warm median | warm p95 | bare `python3 -c` median | warm / bare |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, t := range tools {
		w, b := pct(servers[1].lat[t.slug], 50), pct(floor[t.slug], 50)
		fmt.Printf("| %s | %s | %s | %s | %s | %.2f× |\n", t.title, ms(pct(servers[0].lat[t.slug], 50)), ms(w), ms(pct(servers[1].lat[t.slug], 95)), ms(b), float64(w)/float64(b))
	}
	sort.Float64s(parkedBytes)
	fmt.Printf("\nThe warm server's parked interpreters, one per tool, held %s together at the end (%s at the least while these ran).\n",
		runner.HumanBytes(int64(parkedBytes[len(parkedBytes)-1])), runner.HumanBytes(int64(parkedBytes[0])))
}

// waitParked waits until the server has an interpreter parked and ready, and none
// being parked.
func waitParked(c *client.Client) {
	for deadline := time.Now().Add(time.Minute); metric(c, "skrip_runner_parked_interpreters") < 1 || metric(c, "skrip_runner_parking_interpreters") > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			log.Fatal("no interpreter was parked within a minute of a run")
		}
	}
}

// metric reads one sample of the server's /metrics.
func metric(c *client.Client, name string) float64 {
	req, _ := http.NewRequest("GET", c.URL("/metrics"), nil)
	req.Header.Set("Authorization", "Bearer skr_benchmark-admin-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
