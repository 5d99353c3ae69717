// Command runtimelatency measures tool runs through skrip's API on the bwrap runner with
// the runner rootfs (docs/spec.md §5b) as the sandbox's root, beside the host's /usr fallback, in
// one run on one machine: two servers in this process, their runs interleaved so that both
// see the same machine. Tools: a no-op, a one-page WeasyPrint PDF (both roots can run
// them), and imports of the whole runtime (the rootfs only: the host lacks most of it).
// It prints markdown for docs/BENCHMARKS.md.
//
//	go run ./bench/runtimelatency -n 40 -rootfs /var/cache/skrip/runner-rootfs-13
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
)

var tools = []struct{ slug, title, source string }{
	{"noop", "a no-op tool (`return 'ok'`)", "def run_tool(input_dir, output_dir):\n    return 'ok'\n"},
	{"pdf", "a one-page PDF with WeasyPrint", `import os, weasyprint
def run_tool(input_dir, output_dir):
    weasyprint.HTML(string="<h1>Rubrik</h1><p>Hej världen.</p>").write_pdf(os.path.join(output_dir, "a.pdf"))
    return "ok"
`},
	{"imports", "`import weasyprint, docx, openpyxl, pandas, pypdf, jinja2, pypandoc`", `def run_tool(input_dir, output_dir):
    import weasyprint, docx, openpyxl, pandas, pypdf, jinja2, pypandoc
    return "ok"
`},
}

func main() {
	n := flag.Int("n", 40, "runs of each tool on each root")
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

	type server struct {
		name string
		c    *client.Client
		lat  map[string][]time.Duration
		fail map[string]string
	}
	var servers []*server
	for _, root := range []struct{ name, setting string }{{"host /usr", rootfs.Host}, {"rootfs", *dir}} {
		cfg := benchutil.Defaults(filepath.Join(tmp, root.name))
		cfg.BwrapRootfs = root.setting
		c, stop := benchutil.Serve(ctx, cfg)
		defer stop()
		s := &server{name: root.name, c: c, lat: map[string][]time.Duration{}, fail: map[string]string{}}
		for _, t := range tools {
			if _, _, err := c.CreateTool(ctx, t.slug, t.title, "", t.source, true); err != nil {
				log.Fatal(err)
			}
		}
		servers = append(servers, s)
	}
	run := func(s *server, slug string) {
		start := time.Now()
		r, err := s.c.RunFiles(ctx, slug, nil, nil, time.Minute)
		d := time.Since(start)
		switch {
		case err != nil:
			log.Fatalf("%s on %s: %v", slug, s.name, err)
		case r.Status != "succeeded":
			s.fail[slug] = r.Status
			if r.ErrorSummary != nil {
				s.fail[slug] = *r.ErrorSummary
			}
		default:
			s.lat[slug] = append(s.lat[slug], d)
		}
	}
	// One warm-up run of each, then the measured ones, alternating between the roots.
	for _, s := range servers {
		for _, t := range tools {
			run(s, t.slug)
		}
		clear(s.lat)
	}
	for range *n {
		for _, t := range tools {
			for _, s := range servers {
				run(s, t.slug)
			}
		}
	}

	fmt.Printf("%d runs of each tool on each root, through the API, interleaved; bwrap runner, SQLite, fs blobs. Rootfs %s.\n\n", *n, *dir)
	fmt.Println("| tool | host /usr median | host /usr p95 | rootfs median | rootfs p95 | difference (median) |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, t := range tools {
		cells := ""
		var med [2]time.Duration
		for i, s := range servers {
			if msg, ok := s.fail[t.slug]; ok && len(s.lat[t.slug]) == 0 {
				cells += fmt.Sprintf(" fails (%s) | – |", msg)
				continue
			}
			med[i] = pct(s.lat[t.slug], 50)
			cells += fmt.Sprintf(" %s | %s |", ms(med[i]), ms(pct(s.lat[t.slug], 95)))
		}
		diff := "–"
		if med[0] > 0 && med[1] > 0 {
			diff = fmt.Sprintf("%+.1f ms", float64(med[1]-med[0])/1e6)
		}
		fmt.Printf("| %s |%s %s |\n", t.title, cells, diff)
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
