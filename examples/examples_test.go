package examples_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/examples"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// The author guide's tools (examples/guide, docs/authoring.md) run end to end through the
// API, each on a server with the bubblewrap runner (on the runner rootfs,
// SKRIP_TEST_RUNNER_ROOTFS) and on one with the Docker runner (its image: the default
// skrip-runner:<version>, or SKRIP_TEST_RUNNER_IMAGE). Both need the runtime of docs/spec.md §5b:
// Python 3.13, WeasyPrint, pandoc, python-docx, openpyxl, pandas, and the original hub's
// modules. Every guide tool must have a case in guideCases.

func TestGuideOnBubblewrap(t *testing.T) { testGuide(t, "bwrap") }

func TestGuideOnDocker(t *testing.T) { testGuide(t, "docker") }

// guide is a server with every guide tool (and the demo tool html-to-pdf-preview)
// published by an author, and a user who runs them.
type guide struct {
	env    *apptest.Env
	author *client.Client
	user   *client.Client
	tools  map[string]created // by slug
	demo   map[string]examples.Tool
}

type created struct {
	Tool    client.Tool
	Version client.Version
	Source  examples.Tool
}

func testGuide(t *testing.T, runnerName string) {
	if _, err := exec.LookPath("pdfinfo"); err != nil {
		testutil.Missing(t, "weasyprint", "pdfinfo is missing", "apt-get install poppler-utils")
	}
	cfg := apptest.Config(t, apptest.BlobBackends[0])
	cfg.Runner = runnerName
	switch runnerName {
	case "bwrap":
		cfg.BwrapRootfs = os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
		if cfg.BwrapRootfs == "" {
			testutil.Missing(t, "bwrap", "SKRIP_TEST_RUNNER_ROOTFS is empty; the guide's tools need the runner rootfs, not the host's /usr",
				"bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
		}
	case "docker":
		if img := os.Getenv("SKRIP_TEST_RUNNER_IMAGE"); img != "" {
			cfg.RunnerImage = img
		}
	}
	env := apptest.Start(t, cfg)
	author, _ := env.User(t, "forfattare", "author")
	user, _ := env.User(t, "larare", "user")
	g := &guide{env: env, author: author, user: user, tools: map[string]created{}, demo: map[string]examples.Tool{}}

	tools, err := examples.Guide()
	if err != nil {
		t.Fatal(err)
	}
	demo, err := examples.Tools()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range demo {
		g.demo[ex.Slug] = ex
	}
	for _, ex := range append(tools, g.demo["html-to-pdf-preview"]) {
		g.tools[ex.Slug] = g.create(t, ex)
	}
	for _, ex := range tools {
		if guideCases[ex.Slug] == nil {
			t.Errorf("the guide's tool %s (examples/guide/%s) has no case in guideCases", ex.Slug, ex.Dir)
		}
	}
	for slug, check := range guideCases {
		t.Run(slug, func(t *testing.T) {
			if _, ok := g.tools[slug]; !ok {
				t.Fatalf("guideCases has %s, which is no tool of examples/guide or examples/tools", slug)
			}
			t.Parallel()
			check(t, g)
		})
	}
}

// create makes ex a published tool through the API, from its tool.json and script.py.
func (g *guide) create(t *testing.T, ex examples.Tool) created {
	t.Helper()
	body := map[string]any{
		"slug": ex.Slug, "title": ex.Title, "summary": ex.Summary, "usage_instructions": ex.UsageInstructions,
		"source": ex.Source, "publish": true,
	}
	if ex.Description != "" {
		body["description"] = ex.Description
	}
	if ex.InputSchema != nil {
		body["input_schema"] = ex.InputSchema
	}
	if ex.SettingsSchema != nil {
		body["settings_schema"] = ex.SettingsSchema
	}
	var out struct {
		Tool    client.Tool    `json:"tool"`
		Version client.Version `json:"version"`
	}
	if err := g.author.Do(context.Background(), http.MethodPost, "/api/v1/tools", body, &out); err != nil {
		t.Fatalf("creating %s from its tool.json: %v", ex.Slug, err)
	}
	// The API keeps both schemas as they were sent.
	var shown struct {
		Summary           string          `json:"summary"`
		UsageInstructions string          `json:"usage_instructions"`
		InputSchema       json.RawMessage `json:"input_schema"`
		SettingsSchema    json.RawMessage `json:"settings_schema"`
	}
	if err := g.user.Do(context.Background(), http.MethodGet, "/api/v1/tools/"+ex.Slug, nil, &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Summary != ex.Summary || shown.UsageInstructions != ex.UsageInstructions ||
		!sameJSON(shown.InputSchema, ex.InputSchema) || !sameJSON(shown.SettingsSchema, ex.SettingsSchema) {
		t.Fatalf("GET /api/v1/tools/%s shows summary %q, usage %q, input_schema %s, settings_schema %s; want those of tool.json",
			ex.Slug, shown.Summary, shown.UsageInstructions, shown.InputSchema, shown.SettingsSchema)
	}
	return created{Tool: out.Tool, Version: out.Version, Source: ex}
}

// sameJSON reports whether a and b hold the same JSON value; nil and null are the same.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if len(a) > 0 {
		if err := json.Unmarshal(a, &x); err != nil {
			return false
		}
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &y); err != nil {
			return false
		}
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// files writes named files to a temp dir and returns their paths, in the order given.
func files(t *testing.T, named ...file) []string {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for _, f := range named {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.body, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

type file struct {
	name string
	body []byte
}

// demoFile is a file of a guide tool's demo/ folder.
func (g *guide) demoFile(t *testing.T, slug, name string) file {
	t.Helper()
	b, ok := g.tools[slug].Source.Demo[name]
	if !ok {
		t.Fatalf("%s has no demo file %s", slug, name)
	}
	return file{name, b}
}

// run runs slug's published version as c with paths and inputs and waits for its end.
func (g *guide) run(t *testing.T, c *client.Client, slug string, paths []string, inputs map[string]any) client.Run {
	t.Helper()
	ctx := context.Background()
	r, err := c.RunFiles(ctx, slug, paths, inputs, 2*time.Minute)
	if err != nil {
		t.Fatalf("running %s: %v", slug, err)
	}
	if r, err = c.WaitRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// refused runs slug as the user expecting a 400 that names field (any field when field
// is "").
func (g *guide) refused(t *testing.T, slug string, paths []string, inputs map[string]any, field string) {
	t.Helper()
	g.refusedAs(t, g.user, slug, paths, inputs, field)
}

// refusedAs is refused, run as c.
func (g *guide) refusedAs(t *testing.T, c *client.Client, slug string, paths []string, inputs map[string]any, field string) {
	t.Helper()
	r, err := c.RunFiles(context.Background(), slug, paths, inputs, 2*time.Minute)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		t.Fatalf("%s with inputs %v and %d file(s): %+v, %v; want a 400", slug, inputs, len(paths), r, err)
	}
	if field != "" && (e.Details["field"] != field || !strings.Contains(e.Message, field)) {
		t.Fatalf("%s with inputs %v: refusal %q, details %v; want it to name the field %q", slug, inputs, e.Message, e.Details, field)
	}
}

// act submits actionID of the run r (the latest of its session) as c, and waits for it.
func (g *guide) act(t *testing.T, c *client.Client, r client.Run, actionID string, input map[string]any) client.Run {
	t.Helper()
	if r.StateRev == nil {
		t.Fatalf("run %s has no state_rev to act on", r.RunID)
	}
	ctx := context.Background()
	var res client.ActionResult
	var err error
	if strings.HasPrefix(r.Context, "sandbox:") {
		res, err = c.EditorAction(ctx, r.VersionID, actionID, input, *r.StateRev)
	} else {
		res, err = c.StartAction(ctx, r.ToolID, r.Context, actionID, input, *r.StateRev)
	}
	if err != nil {
		t.Fatalf("action %s after run %s: %v", actionID, r.RunID, err)
	}
	out, err := c.WaitRun(ctx, res.Run)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// succeeded fails the test unless r succeeded.
func succeeded(t *testing.T, r client.Run) {
	t.Helper()
	if r.Status != "succeeded" {
		t.Fatalf("run %s: %s, error_summary %q\nstderr: %s", r.RunID, r.Status, deref(r.ErrorSummary), deref(r.Stderr))
	}
}

// failedWith fails the test unless r failed with exactly summary.
func failedWith(t *testing.T, r client.Run, summary string) {
	t.Helper()
	if r.Status != "failed" || deref(r.ErrorSummary) != summary {
		t.Fatalf("run %s: %s, error_summary %q; want failed with %q\nstderr: %s", r.RunID, r.Status, deref(r.ErrorSummary), summary, deref(r.Stderr))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// output returns r's only output of kind (and title, when not ""), failing without one.
func output(t *testing.T, r client.Run, kind, title string) client.Output {
	t.Helper()
	var found []client.Output
	for _, o := range r.Outputs {
		if o.Kind == kind && (title == "" || o.Title == title) {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("run %s has %d %s outputs titled %q; outputs: %s", r.RunID, len(found), kind, title, asJSON(r.Outputs))
	}
	return found[0]
}

// jsonValue decodes the value of r's json output titled title into v.
func jsonValue(t *testing.T, r client.Run, title string, v any) {
	t.Helper()
	b, _ := json.Marshal(output(t, r, "json", title).Value)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("the json output %q: %v", title, err)
	}
}

// column returns column key of a table's rows, as JSON text per row.
func column(tb client.Output, key string) []string {
	var out []string
	for _, row := range tb.Rows {
		out = append(out, strings.Trim(asJSON(row[key]), `"`))
	}
	return out
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// wantJSON fails the test unless got and want marshal to the same JSON.
func wantJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if !sameJSON(json.RawMessage(asJSON(got)), json.RawMessage(asJSON(want))) {
		t.Errorf("%s = %s\nwant %s", what, asJSON(got), asJSON(want))
	}
}

// artifact downloads r's artifact at path ("output/...") through the API.
func artifact(t *testing.T, c *client.Client, r client.Run, path string) []byte {
	t.Helper()
	for _, a := range r.Artifacts {
		if a.Path == path {
			var buf bytes.Buffer
			if err := c.DownloadArtifact(context.Background(), a, &buf); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes()
		}
	}
	t.Fatalf("run %s has no artifact %s; artifacts: %s", r.RunID, path, asJSON(r.Artifacts))
	return nil
}

// pdfInfo checks b with pdfinfo and returns its page count, page size and text.
func pdfInfo(t *testing.T, b []byte) (pages, size, text string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out.pdf")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := exec.Command("pdfinfo", p).CombinedOutput()
	if err != nil {
		t.Fatalf("pdfinfo: %v\n%s", err, info)
	}
	field := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `:\s+(.*)$`).FindSubmatch(info)
		if m == nil {
			t.Fatalf("pdfinfo shows no %s:\n%s", name, info)
		}
		return string(m[1])
	}
	txt, err := exec.Command("pdftotext", "-enc", "UTF-8", p, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext: %v", err)
	}
	return field("Pages"), field("Page size"), strings.Join(strings.Fields(string(txt)), " ")
}

// zipped returns the files of the zip archive b (a .docx or .xlsx) by name.
func zipped(t *testing.T, b []byte) map[string]string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a zip archive: %v", err)
	}
	out := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name] = string(body)
	}
	return out
}

// wordText returns the text of a WordprocessingML part: its <w:t> runs joined, with a
// space between paragraphs.
func wordText(xml string) string {
	var b strings.Builder
	for _, para := range strings.Split(xml, "</w:p>") {
		for _, m := range regexp.MustCompile(`<w:t(?: [^>]*)?>([^<]*)</w:t>`).FindAllStringSubmatch(para, -1) {
			b.WriteString(m[1])
		}
		b.WriteString(" ")
	}
	return strings.Join(strings.Fields(unescapeXML(b.String())), " ")
}

func unescapeXML(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&apos;", "'", "&amp;", "&").Replace(s)
}

// putSettings saves values as c's settings of slug, or as the editor's settings of the
// version versionID when it is not "".
func putSettings(t *testing.T, c *client.Client, slug, versionID string, values map[string]any) {
	t.Helper()
	path := "/api/v1/tools/" + url.PathEscape(slug) + "/settings"
	if versionID != "" {
		path = "/api/v1/editor/tool-versions/" + url.PathEscape(versionID) + "/settings"
	}
	if err := c.Do(context.Background(), http.MethodPut, path, map[string]any{"values": values}, nil); err != nil {
		t.Fatalf("PUT %s: %v", path, err)
	}
}
