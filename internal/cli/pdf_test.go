package cli

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/examples"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/testutil"
)

func needWeasyprint(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("pdfinfo"); err != nil {
		testutil.Missing(t, "weasyprint", "pdfinfo is missing", "apt-get install weasyprint poppler-utils")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import weasyprint").Run(); err != nil {
		testutil.Missing(t, "weasyprint", "python3 cannot import weasyprint", "apt-get install weasyprint poppler-utils")
	}
}

func pdfInfo(t *testing.T, path string) (pageSize, text string) {
	t.Helper()
	info, err := exec.Command("pdfinfo", path).Output()
	if err != nil {
		t.Fatalf("pdfinfo %s: %v (is it a PDF?)", path, err)
	}
	m := regexp.MustCompile(`Page size:\s+(.*)`).FindSubmatch(info)
	if m == nil {
		t.Fatalf("pdfinfo: no page size in %s", info)
	}
	txt, err := exec.Command("pdftotext", path, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(m[1]), string(txt)
}

// TestHTMLToPDFEndToEnd runs the example tool as docs/spec.md §8 describes it: in production
// through the CLI (preview, then "Konvertera till PDF" with Letter), and in the editor
// sandbox through the API (A4 landscape), each converting the files uploaded at the start.
func TestHTMLToPDFEndToEnd(t *testing.T) {
	needWeasyprint(t)
	testHTMLToPDF(t, "bwrap")
}

// TestHTMLToPDFOnDocker is the same flow on the Docker runner, whose image carries its own
// WeasyPrint.
func TestHTMLToPDFOnDocker(t *testing.T) {
	needDocker(t)
	if _, err := exec.LookPath("pdfinfo"); err != nil {
		testutil.Missing(t, "weasyprint", "pdfinfo is missing", "apt-get install poppler-utils")
	}
	testHTMLToPDF(t, "docker")
}

func testHTMLToPDF(t *testing.T, runnerName string) {
	cfg := apptest.Config(t, apptest.BlobBackends[0])
	cfg.Runner = runnerName
	env := apptest.Start(t, cfg)
	if _, err := env.App.LoadDemo(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ex examples.Tool
	all, _ := examples.Tools()
	for _, e := range all {
		if e.Slug == "html-to-pdf-preview" {
			ex = e
		}
	}
	heading := regexp.MustCompile(`<h1[^>]*>([^<]+)</h1>`).FindStringSubmatch(string(ex.Demo["index.html"]))
	if heading == nil {
		t.Fatal("the demo page has no <h1>")
	}
	dir := t.TempDir()
	var paths []string
	for name, body := range ex.Demo {
		p := filepath.Join(dir, name)
		os.WriteFile(p, body, 0o644)
		paths = append(paths, p)
	}
	uc, u := env.User(t, "teacher", "user")

	code, out, errOut := run(t, env, u.Token, "", append([]string{"run", "html-to-pdf-preview"}, paths...)...)
	if code != 0 || !strings.Contains(out, `convert  "Konvertera till PDF"`) || !strings.Contains(out, "page_size (enum: a4|letter)") {
		t.Fatalf("preview: %d %q %q", code, out, errOut)
	}
	runID := regexp.MustCompile(`Run (r_\w+) succeeded`).FindStringSubmatch(out)[1]
	outDir := filepath.Join(dir, "pdf")
	code, out, errOut = run(t, env, u.Token, "", "action", runID, "convert", "--input", "page_size=letter", "--input", "orientation=portrait", "--out", outDir)
	if code != 0 {
		t.Fatalf("convert: %d %q %q", code, out, errOut)
	}
	size, text := pdfInfo(t, filepath.Join(outDir, "index.pdf"))
	if !strings.Contains(size, "612 x 792") || !strings.Contains(size, "letter") {
		t.Fatalf("page size %q, want Letter", size)
	}
	if !strings.Contains(strings.Join(strings.Fields(text), " "), strings.TrimSpace(heading[1])) {
		t.Fatalf("the PDF's text lacks the heading %q:\n%s", heading[1], text)
	}
	// The same run again is a stale revision now: a conflict, in plain words.
	code, _, errOut = run(t, env, u.Token, "", "action", runID, "convert", "--input", "page_size=a4")
	if code == 0 || !strings.Contains(errOut, "this session changed after run "+runID) {
		t.Fatalf("stale action: %d %q", code, errOut)
	}

	// The editor sandbox: the tool's author runs the same version in sandbox:{version}.
	tool, _ := env.Admin.ToolOf(context.Background(), "html-to-pdf-preview")
	first, err := env.Admin.EditorRun(context.Background(), *tool.PublishedVersionID, paths, nil, time.Minute)
	if err != nil || first.Status != "succeeded" || first.StateRev == nil || first.Context != "sandbox:"+*tool.PublishedVersionID {
		t.Fatalf("sandbox preview: %+v, %v", first, err)
	}
	res, err := env.Admin.EditorAction(context.Background(), *tool.PublishedVersionID, "convert", map[string]any{"page_size": "a4", "orientation": "landscape"}, *first.StateRev)
	if err != nil || res.Run.Status != "succeeded" || len(res.Run.Artifacts) != 1 {
		t.Fatalf("sandbox convert: %+v, %v", res, err)
	}
	f, _ := os.Create(filepath.Join(dir, "sandbox.pdf"))
	if err := env.Admin.DownloadArtifact(context.Background(), res.Run.Artifacts[0], f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if size, _ := pdfInfo(t, filepath.Join(dir, "sandbox.pdf")); !strings.Contains(size, "842 x 595") && !strings.Contains(size, "841.89 x 595.276") {
		t.Fatalf("sandbox page size %q, want A4 landscape", size)
	}
	// Production and sandbox sessions stayed apart.
	if s, err := uc.SessionOf(context.Background(), "html-to-pdf-preview", "default"); err != nil || s.StateRev != 2 {
		t.Fatalf("teacher's production session: %+v, %v", s, err)
	}
	code, out, _ = run(t, env, u.Token, "", "session", "files", "html-to-pdf-preview")
	if code != 0 || !strings.Contains(out, "index.html") || !strings.Contains(out, "kept until") {
		t.Fatalf("session files: %d %q", code, out)
	}
	code, out, _ = run(t, env, u.Token, "", "session", "show", "html-to-pdf-preview")
	if code != 0 || !strings.Contains(out, "state_rev  2") || !strings.Contains(out, `"step": "converted"`) {
		t.Fatalf("session show: %d %q", code, out)
	}
}

// needDocker skips (or fails, when docker is required) unless the engine answers and the
// runner image exists.
func needDocker(t *testing.T) {
	t.Helper()
	r, err := docker.Inspect(context.Background(), docker.Config{Image: docker.DefaultImage()}, slog.New(slog.DiscardHandler))
	if err != nil {
		testutil.Missing(t, "docker", err.Error(), "a running Docker engine and `skrip runner-image build`")
	}
	r.Close()
}
