package genclient_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/test/genclient/skripapi"
)

// required reports whether CI said it installed component: SKRIP_TEST_REQUIRE is a comma
// separated list (the main module's internal/testutil.Required, which this module does
// not import).
func required(component string) bool {
	for _, c := range strings.Split(os.Getenv("SKRIP_TEST_REQUIRE"), ",") {
		if strings.TrimSpace(c) == component {
			return true
		}
	}
	return false
}

// missing skips the test for want of component, or fails it when CI requires it.
func missing(t *testing.T, component, why string) {
	t.Helper()
	if required(component) {
		t.Fatalf("%s is required (SKRIP_TEST_REQUIRE) but not available: %s", component, why)
	}
	t.Skipf("%s not available: %s", component, why)
}

// logBuffer is the server's output, written by its process while the test reads it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer builds cmd/skrip and starts `skrip serve --demo` on a free port of
// 127.0.0.1 with a fresh data dir (SQLite, blobs on disk) and the bubblewrap runner on
// the rootfs of SKRIP_TEST_RUNNER_ROOTFS. It returns the server's base URL and the admin
// token the first start wrote to <data>/admin-token.
func startServer(t *testing.T) (base, token string) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		missing(t, "bwrap", err.Error()+" (apt-get install bubblewrap)")
	}
	rootfs := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if rootfs == "" {
		missing(t, "bwrap", "SKRIP_TEST_RUNNER_ROOTFS is empty (bash scripts/runner-image.sh builds the runner rootfs and prints its path)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "skrip")
	build := exec.Command("go", "build", "-o", bin, "./cmd/skrip")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/skrip: %v\n%s", err, out)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	data := filepath.Join(dir, "data")
	logs := &logBuffer{}
	cmd := exec.Command(bin, "serve", "--demo", "--addr", addr, "--data-dir", data,
		"--runner", "bwrap", "--bwrap-rootfs", rootfs, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})

	base = "http://" + addr
	c, err := skripapi.NewClientWithResponses(base)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for /readyz: the database, the blob store and the runner answer. A server
	// that never gets ready fails the test, after a bound far above a normal start.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case err := <-exited:
			t.Fatalf("skrip serve ended before it was ready: %v", err)
		default:
		}
		r, err := c.GetReadyzWithResponse(context.Background())
		if err == nil && r.StatusCode() == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("skrip serve at %s not ready: %v %v", base, err, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil {
		t.Fatalf("the first start writes the admin token: %v", err)
	}
	return base, strings.TrimSpace(string(b))
}

// TestSmoke drives a real `skrip serve` with the client generated from the OpenAPI
// document only: staged files, tools, a run of a demo tool on the staged files, its next
// action, the artifact it made, a conditional write refused, and deleting the files.
func TestSmoke(t *testing.T) {
	base, token := startServer(t)
	ctx := context.Background()
	c, err := skripapi.NewClientWithResponses(base, skripapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}

	// Upload the demo pages of the HTML-to-PDF tool as staged files.
	demo := "../../examples/tools/html_to_pdf_preview/demo"
	names := []string{"index.html", "logo.svg", "style.css"}
	types := map[string]string{"index.html": "text/html", "logo.svg": "image/svg+xml", "style.css": "text/css"}
	var keys []string
	etags := map[string]string{}
	for _, name := range names {
		body, err := os.ReadFile(filepath.Join(demo, name))
		if err != nil {
			t.Fatal(err)
		}
		key := "files/genclient/" + name
		r, err := c.PutFilesKeyWithBodyWithResponse(ctx, key, &skripapi.PutFilesKeyParams{Filename: &name}, types[name], bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON201 == nil {
			t.Fatalf("PUT %s: %d %s", key, r.StatusCode(), r.Body)
		}
		sum := sha256.Sum256(body)
		f := r.JSON201
		if f.FileKey != key || f.Name != name || f.SizeBytes != len(body) || f.Checksum != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Fatalf("PUT %s answered %+v; want key %s, name %s, %d bytes, sha256:%x", key, f, key, name, len(body), sum)
		}
		keys = append(keys, key)
		etags[key] = `"` + hex.EncodeToString(sum[:]) + `"` // its SHA-256 in quotes (docs/api.md)
	}

	// List them.
	prefix := "files/genclient/"
	list, err := c.GetFilesWithResponse(ctx, &skripapi.GetFilesParams{Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	if list.JSON200 == nil {
		t.Fatalf("GET /api/v1/files: %d %s", list.StatusCode(), list.Body)
	}
	var listed []string
	for _, f := range list.JSON200.Files {
		listed = append(listed, f.FileKey)
	}
	if list.JSON200.Count != 3 || !slices.Equal(listed, keys) {
		t.Fatalf("the file list holds %d: %v; want %v in key order", list.JSON200.Count, listed, keys)
	}

	// The demo tools are there, published.
	tools, err := c.GetToolsWithResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tools.JSON200 == nil {
		t.Fatalf("GET /api/v1/tools: %d %s", tools.StatusCode(), tools.Body)
	}
	var tool *skripapi.Tool
	var slugs []string
	for i, tl := range tools.JSON200.Tools {
		slugs = append(slugs, tl.Slug)
		if tl.Slug == "html-to-pdf-preview" {
			tool = &tools.JSON200.Tools[i]
		}
	}
	if tool == nil || tool.PublishedVersionId == nil || tools.JSON200.Count != len(tools.JSON200.Tools) {
		t.Fatalf("the tool list (%d) %v lacks a published html-to-pdf-preview", tools.JSON200.Count, slugs)
	}

	// Run it on the staged files (JSON: file_keys), and wait for its end.
	wait := "0s"
	start, err := c.PostToolsToolRunsWithResponse(ctx, tool.Slug, &skripapi.PostToolsToolRunsParams{Wait: &wait},
		skripapi.RunRequest{FileKeys: &keys})
	if err != nil {
		t.Fatal(err)
	}
	run := start.JSON201
	if run == nil {
		run = start.JSON202
	}
	if run == nil {
		t.Fatalf("POST /api/v1/tools/%s/runs: %d %s", tool.Slug, start.StatusCode(), start.Body)
	}
	if run.ToolId != tool.Id || run.Kind != "initial" {
		t.Fatalf("the run is of tool %s, kind %s; want %s, initial", run.ToolId, run.Kind, tool.Id)
	}
	run = awaitRun(t, c, run.RunId)
	if run.Status != "succeeded" {
		t.Fatalf("the run ended %s: %v\nstderr: %v", run.Status, deref(run.ErrorSummary), deref(run.Stderr))
	}
	if len(run.Outputs) == 0 || !strings.Contains(outputText(run.Outputs[0]), "index.html") {
		t.Fatalf("the run's first output %v does not name index.html", run.Outputs)
	}
	if !hasKind(run.Outputs, "html_sandboxed") || !hasKind(run.Outputs, "table") {
		t.Fatalf("the run's outputs %v lack the preview or the file table", kinds(run.Outputs))
	}
	var actionIDs []string
	for _, a := range run.NextActions {
		actionIDs = append(actionIDs, a.ActionId)
	}
	if !slices.Contains(actionIDs, "convert") || run.StateRev == nil {
		t.Fatalf("the run offers %v with state_rev %v; want convert and a revision", actionIDs, run.StateRev)
	}

	// Take its next action: convert to PDF, landscape.
	input := map[string]any{"page_size": "a4", "orientation": "landscape"}
	action, err := c.PostStartActionWithResponse(ctx, &skripapi.PostStartActionParams{Wait: &wait}, skripapi.ActionRequest{
		ToolId: &tool.Id, ActionId: ptr("convert"), Input: &input, ExpectedStateRev: run.StateRev,
	})
	if err != nil {
		t.Fatal(err)
	}
	res := action.JSON201
	if res == nil {
		res = action.JSON202
	}
	if res == nil {
		t.Fatalf("POST /api/v1/start_action: %d %s", action.StatusCode(), action.Body)
	}
	if res.RunId != res.Run.RunId || deref(res.Run.ActionId) != "convert" {
		t.Fatalf("start_action answered run %s (%s) for action %v", res.RunId, res.Run.RunId, deref(res.Run.ActionId))
	}
	converted := awaitRun(t, c, res.RunId)
	if converted.Status != "succeeded" {
		t.Fatalf("the convert run ended %s: %v\nstderr: %v", converted.Status, deref(converted.ErrorSummary), deref(converted.Stderr))
	}
	if converted.StateRev == nil || *converted.StateRev != *run.StateRev+1 {
		t.Fatalf("the session's revision after the action is %v; want %d", converted.StateRev, *run.StateRev+1)
	}
	if len(converted.Outputs) == 0 || !strings.HasPrefix(outputText(converted.Outputs[0]), "Klart: 1 PDF") {
		t.Fatalf("the convert run's first output is %v; want the notice of one PDF", converted.Outputs)
	}

	// Download the PDF it made.
	i := slices.IndexFunc(converted.Artifacts, func(a skripapi.Artifact) bool { return strings.HasSuffix(a.Path, "index.pdf") })
	if i < 0 {
		t.Fatalf("the convert run's artifacts %+v lack index.pdf", converted.Artifacts)
	}
	art := converted.Artifacts[i]
	dl, err := c.GetRunsRunArtifactsPathWithResponse(ctx, converted.RunId, art.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(dl.Body)
	if dl.StatusCode() != http.StatusOK || !bytes.HasPrefix(dl.Body, []byte("%PDF-")) || len(dl.Body) != art.Bytes || hex.EncodeToString(sum[:]) != art.Sha256 {
		t.Fatalf("GET the artifact %s: %d, %d bytes starting %q; want a PDF of %d bytes, sha256 %s",
			art.Path, dl.StatusCode(), len(dl.Body), dl.Body[:min(len(dl.Body), 8)], art.Bytes, art.Sha256)
	}

	// A conditional write that does not hold changes nothing: 412.
	key := keys[0]
	stale := `"0000000000000000000000000000000000000000000000000000000000000000"`
	pc, err := c.PutFilesKeyWithBodyWithResponse(ctx, key, &skripapi.PutFilesKeyParams{IfMatch: &stale}, "text/html", strings.NewReader("<p>overwritten</p>"))
	if err != nil {
		t.Fatal(err)
	}
	if pc.JSON412 == nil || pc.JSON412.Error.Code != "precondition_failed" || !strings.Contains(pc.JSON412.Error.Message, key) {
		t.Fatalf("PUT %s If-Match a stale ETag: %d %s; want 412 precondition_failed naming the key", key, pc.StatusCode(), pc.Body)
	}
	star := "*"
	pc, err = c.PutFilesKeyWithBodyWithResponse(ctx, key, &skripapi.PutFilesKeyParams{IfNoneMatch: &star}, "text/html", strings.NewReader("<p>overwritten</p>"))
	if err != nil {
		t.Fatal(err)
	}
	if pc.JSON412 == nil || pc.JSON412.Error.Code != "precondition_failed" {
		t.Fatalf("PUT %s If-None-Match * on a file that exists: %d %s; want 412 precondition_failed", key, pc.StatusCode(), pc.Body)
	}
	get, err := c.GetFilesKeyWithResponse(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	original, _ := os.ReadFile(filepath.Join(demo, "index.html"))
	if get.StatusCode() != http.StatusOK || !bytes.Equal(get.Body, original) || get.HTTPResponse.Header.Get("ETag") != etags[key] {
		t.Fatalf("GET %s after the refused writes: %d, ETag %s, body changed %v", key, get.StatusCode(), get.HTTPResponse.Header.Get("ETag"), !bytes.Equal(get.Body, original))
	}

	// Delete the files: with the ETag that holds (the one the GET gave), then without a condition.
	etag := etags[key]
	del, err := c.DeleteFilesKeyWithResponse(ctx, key, &skripapi.DeleteFilesKeyParams{IfMatch: &etag})
	if err != nil {
		t.Fatal(err)
	}
	if del.StatusCode() != http.StatusNoContent {
		t.Fatalf("DELETE %s If-Match its ETag: %d %s", key, del.StatusCode(), del.Body)
	}
	for _, k := range keys[1:] {
		del, err := c.DeleteFilesKeyWithResponse(ctx, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		if del.StatusCode() != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d %s", k, del.StatusCode(), del.Body)
		}
	}
	gone, err := c.GetFilesKeyWithResponse(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gone.JSON404 == nil || gone.JSON404.Error.Code != "not_found" {
		t.Fatalf("GET %s after DELETE: %d %s; want 404 not_found", key, gone.StatusCode(), gone.Body)
	}
	list, err = c.GetFilesWithResponse(ctx, &skripapi.GetFilesParams{Prefix: &prefix})
	if err != nil {
		t.Fatal(err)
	}
	if list.JSON200 == nil || list.JSON200.Count != 0 || len(list.JSON200.Files) != 0 {
		t.Fatalf("the file list after deleting: %d %s; want none", list.StatusCode(), list.Body)
	}
}

// awaitRun asks for the run, waiting on the server (?wait=) until it has ended.
func awaitRun(t *testing.T, c *skripapi.ClientWithResponses, id string) *skripapi.Run {
	t.Helper()
	wait := "30s"
	for {
		r, err := c.GetRunsRunWithResponse(context.Background(), id, &skripapi.GetRunsRunParams{Wait: &wait})
		if err != nil {
			t.Fatal(err)
		}
		if r.JSON200 == nil {
			t.Fatalf("GET /api/v1/runs/%s: %d %s", id, r.StatusCode(), r.Body)
		}
		switch r.JSON200.Status {
		case "queued", "running":
			continue
		}
		return r.JSON200
	}
}

// outputText is a notice output's message (outputs are any JSON in the document: their
// shape is contract.Output's, docs/runner-contract.md).
func outputText(o any) string {
	m, _ := o.(map[string]any)
	s, _ := m["message"].(string)
	return s
}

func kinds(outputs []any) []string {
	var out []string
	for _, o := range outputs {
		m, _ := o.(map[string]any)
		out = append(out, fmt.Sprint(m["kind"]))
	}
	return out
}

func hasKind(outputs []any, kind string) bool { return slices.Contains(kinds(outputs), kind) }

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
