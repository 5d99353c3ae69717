package bwrap

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/runnertest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// The example tool of docs/spec.md §8, run in a real bwrap sandbox: the initial run previews the
// demo page, and "convert" renders the original uploads with WeasyPrint.

const pdfToolDir = "../../../examples/tools/html_to_pdf_preview"

// requireWeasyprint checks the interpreter the sandbox runs (the host's /usr/bin/python3,
// not whatever python3 is first on PATH) and poppler's tools.
func requireWeasyprint(t *testing.T, r runner.Runner) {
	t.Helper()
	python := "/usr/bin/python3"
	if br, ok := r.(*Runner); ok && br.python != "" {
		python = br.python
	}
	const install = "apt-get install weasyprint poppler-utils"
	for _, tool := range []string{"pdfinfo", "pdftotext"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Missing(t, "weasyprint", tool+" not found", install)
		}
	}
	if out, err := exec.Command(python, "-c", "import weasyprint").CombinedOutput(); err != nil {
		testutil.Missing(t, "weasyprint", python+" -c 'import weasyprint': "+strings.TrimSpace(string(out)), install)
	}
}

func pdfLimits() runner.Limits {
	lim := runnertest.Limits()
	// The production limits of docs/spec.md §5, but for the wall time: WeasyPrint needs more than
	// the conformance suite's small ones.
	lim.WallTime = 60 * time.Second
	lim.MemoryBytes = 1 << 30
	lim.TmpBytes = 256 << 20
	lim.OutputBytes = 100 << 20
	return lim
}

func readPDFTool(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(pdfToolDir, "script.py"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct{ Slug, Title string }
	b, err := os.ReadFile(filepath.Join(pdfToolDir, "tool.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.Slug != "html-to-pdf-preview" || meta.Title != "HTML till PDF" {
		t.Fatalf("tool.json: %v %+v", err, meta)
	}
	demo := map[string][]byte{}
	entries, err := os.ReadDir(filepath.Join(pdfToolDir, "demo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(pdfToolDir, "demo", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		demo[e.Name()] = b
	}
	return string(src), demo
}

// pdfRun is one finished run, with its /work/output copied to Out.
type pdfRun struct {
	Result runner.Result
	Parsed contract.Result
	Out    string
}

// execPDF runs script like runnertest.Exec, but with an action run's action.json and
// SKRIPTOTEKET_ACTION when act is set, and keeps /work/output whole.
func execPDF(t *testing.T, r runner.Runner, script string, files map[string][]byte, act *contract.Action) pdfRun {
	t.Helper()
	in := t.TempDir()
	var m contract.Manifest
	write := func(name string, body []byte) {
		if err := os.WriteFile(filepath.Join(in, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
		m.Files = append(m.Files, contract.FileEntry(name, int64(len(body))))
	}
	for name, body := range files {
		write(name, body)
	}
	if act != nil {
		b, err := json.Marshal(act)
		if err != nil {
			t.Fatal(err)
		}
		write(contract.ActionFileName, b)
	}
	out := pdfRun{Out: t.TempDir()}
	spec := runner.Spec{
		ID: ids.New("r"), ToolID: "t_pdf", Script: []byte(script), InputDir: in,
		Env: contract.Env(m, nil, act), Limits: pdfLimits(),
		Collect: func(dir string) error { return copyRegular(dir, out.Out) },
	}
	start := time.Now()
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	kind := "initial"
	if act != nil {
		kind = act.ActionID
	}
	t.Logf("%s run: %v (runner: %v)", kind, time.Since(start).Round(time.Millisecond), res.Duration.Round(time.Millisecond))
	out.Result = res
	parsed, err := contract.ParseResult(res.ResultJSON, contract.DefaultPolicy())
	if err != nil {
		t.Fatalf("result.json: %v\n%s\nstderr: %s", err, res.ResultJSON, res.Stderr)
	}
	out.Parsed = parsed
	if parsed.Status != contract.StatusSucceeded {
		t.Fatalf("%s run: status %q (%s); exit %d; stderr:\n%s", kind, parsed.Status, parsed.ErrorSummary, res.ExitCode, res.Stderr)
	}
	return out
}

// copyRegular copies the regular files directly in src to dst.
func copyRegular(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		g, err := os.Create(filepath.Join(dst, e.Name()))
		if err == nil {
			_, err = io.Copy(g, f)
			if cerr := g.Close(); err == nil {
				err = cerr
			}
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func TestPDFExampleTool(t *testing.T) {
	r := newRunner(t)
	requireWeasyprint(t, r)
	script, demo := readPDFTool(t)
	const heading = "Bokcirkeln våren 2026"
	if !strings.Contains(string(demo["index.html"]), heading) {
		t.Fatalf("demo/index.html lacks the heading %q", heading)
	}

	// The initial run: a preview, the files, and the actions.
	first := execPDF(t, r, script, demo, nil)
	var preview string
	var kinds []string
	for _, o := range first.Parsed.Outputs {
		kinds = append(kinds, o.Kind)
		if o.Kind == "html_sandboxed" && preview == "" {
			preview = o.HTML
		}
	}
	if strings.Join(kinds, ",") != "notice,html_sandboxed,table" {
		t.Errorf("output kinds %v, want notice, html_sandboxed, table", kinds)
	}
	if !strings.Contains(preview, heading) {
		t.Errorf("the preview lacks the heading:\n%s", preview)
	}
	if regexp.MustCompile(`(?i)<link[^>]*style\.css`).MatchString(preview) || !strings.Contains(preview, "<style>") {
		t.Errorf("style.css is not inlined in the preview:\n%s", preview)
	}
	if strings.Contains(preview, `src="logo.svg"`) || !strings.Contains(preview, "data:image/svg+xml;base64,") {
		t.Errorf("logo.svg is not embedded in the preview:\n%s", preview)
	}
	acts := first.Parsed.NextActions
	if len(acts) != 2 || acts[0].ActionID != "convert" || acts[0].Label != "Konvertera till PDF" || acts[1].ActionID != "reset" {
		t.Fatalf("next_actions %+v", acts)
	}
	if len(acts[0].Fields) != 2 || acts[0].Fields[0].Name != "page_size" || acts[0].Fields[1].Name != "orientation" ||
		acts[0].Fields[0].Kind != "enum" || acts[0].Fields[1].Kind != "enum" {
		t.Errorf("convert fields %+v", acts[0].Fields)
	}
	for _, in := range []map[string]any{acts[0].Prefill, {"page_size": "letter", "orientation": "landscape"}} {
		if err := contract.ValidateInput(acts[0], in); err != nil {
			t.Errorf("input %v does not fit the convert form: %v", in, err)
		}
	}
	var state struct {
		Step      string   `json:"step"`
		HTMLFiles []string `json:"html_files"`
	}
	if err := json.Unmarshal(first.Parsed.State, &state); err != nil || state.Step != "preview" ||
		len(state.HTMLFiles) != 1 || state.HTMLFiles[0] != "index.html" {
		t.Fatalf("state %s (%v)", first.Parsed.State, err)
	}

	// convert, with the server's state, on the original uploads.
	for _, c := range []struct{ size, orientation, pageSize string }{
		{"letter", "portrait", "612 x 792 pts (letter)"},
		{"a4", "landscape", "842 x 595 pts (A4)"}, // 841.89 x 595.276
	} {
		t.Run(c.size+" "+c.orientation, func(t *testing.T) {
			run := execPDF(t, r, script, demo, &contract.Action{ActionID: "convert",
				Input: map[string]any{"page_size": c.size, "orientation": c.orientation}, State: first.Parsed.State})
			pdf := filepath.Join(run.Out, "index.pdf")
			if _, err := os.Stat(pdf); err != nil {
				t.Fatalf("no output/index.pdf: %v; outputs %+v", err, run.Parsed.Outputs)
			}
			info, err := exec.Command("pdfinfo", pdf).CombinedOutput()
			if err != nil {
				t.Fatalf("pdfinfo: %v\n%s", err, info)
			}
			if got := pageSize(string(info)); got != c.pageSize {
				t.Errorf("pdfinfo page size %q, want %q\n%s", got, c.pageSize, info)
			}
			text, err := exec.Command("pdftotext", pdf, "-").CombinedOutput()
			if err != nil {
				t.Fatalf("pdftotext: %v\n%s", err, text)
			}
			if !strings.Contains(string(text), heading) {
				t.Errorf("the PDF's text lacks the heading:\n%s", text)
			}
			var table *contract.Output
			for i, o := range run.Parsed.Outputs {
				if o.Kind == "table" {
					table = &run.Parsed.Outputs[i]
				}
			}
			if table == nil || len(table.Rows) != 1 || table.Rows[0]["pdf"] != "index.pdf" || table.Rows[0]["file"] != "index.html" {
				t.Errorf("result table %+v", table)
			}
			var st struct {
				Step      string   `json:"step"`
				HTMLFiles []string `json:"html_files"`
				PDFs      []string `json:"pdfs"`
			}
			if err := json.Unmarshal(run.Parsed.State, &st); err != nil || st.Step != "converted" || len(st.PDFs) != 1 || st.PDFs[0] != "index.pdf" {
				t.Errorf("state %s (%v)", run.Parsed.State, err)
			}
			acts := run.Parsed.NextActions
			if len(acts) != 2 || acts[0].ActionID != "convert" || acts[0].Prefill["page_size"] != c.size ||
				acts[0].Prefill["orientation"] != c.orientation || acts[1].ActionID != "reset" {
				t.Errorf("next_actions %+v", acts)
			}
		})
	}

	t.Run("reset", func(t *testing.T) {
		run := execPDF(t, r, script, demo, &contract.Action{ActionID: "reset", State: first.Parsed.State})
		if len(run.Parsed.NextActions) != 0 || string(run.Parsed.State) != "{}" {
			t.Errorf("reset: next_actions %+v, state %s", run.Parsed.NextActions, run.Parsed.State)
		}
	})
}

func TestPDFExampleToolNeedsHTML(t *testing.T) {
	r := newRunner(t)
	script, _ := readPDFTool(t)
	o := runnertest.Exec(t, r, script, map[string]string{"style.css": "h1 {}"}, nil, pdfLimits())
	if o.Parsed.Status != contract.StatusFailed || !strings.Contains(o.Parsed.ErrorSummary, "HTML") {
		t.Fatalf("status %q, error %q; stderr:\n%s", o.Parsed.Status, o.Parsed.ErrorSummary, o.Result.Stderr)
	}
}

// pageSize is pdfinfo's "Page size:" with the points rounded: "612 x 792 pts (letter)".
func pageSize(info string) string {
	m := regexp.MustCompile(`Page size:\s+([\d.]+) x ([\d.]+) pts(.*)`).FindStringSubmatch(info)
	if m == nil {
		return ""
	}
	w, _ := strconv.ParseFloat(m[1], 64)
	h, _ := strconv.ParseFloat(m[2], 64)
	return fmt.Sprintf("%.0f x %.0f pts%s", w, h, strings.TrimRight(m[3], " \r"))
}
