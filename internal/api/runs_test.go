package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

const echoTool = `
import os, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    files = tk.input_files()
    print("hello from the tool")
    with open(os.path.join(output_dir, "names.txt"), "w") as f:
        f.write("\n".join(x["name"] for x in files))
    os.makedirs(os.path.join(output_dir, "sub dir"))
    open(os.path.join(output_dir, "sub dir", "Rapport ö.md"), "w").write("# ok")
    return {"outputs": [
        {"kind": "notice", "level": "info", "message": "got %d files" % len(files)},
        {"kind": "table", "columns": [{"key": "name", "label": "Name"}, {"key": "bytes", "label": "Bytes"}],
         "rows": [{"name": x["name"], "bytes": x["bytes"]} for x in files]},
        {"kind": "json", "value": tk.inputs()},
    ]}
`

// publish creates a published tool as the admin.
func publish(t *testing.T, env *apptest.Env, slug, source string) client.Tool {
	t.Helper()
	tool, _, err := env.Admin.CreateTool(context.Background(), slug, slug, "", source, true)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// runUpload posts files (name -> content) and inputs as a run of slug.
func runUpload(t *testing.T, env *apptest.Env, token, slug string, names []string, bodies []string, inputs string, query string) answer {
	t.Helper()
	return runUploadTo(t, env, token, "/api/v1/tools/"+slug+"/runs"+query, names, bodies, inputs)
}

func inputDirsLeft(t *testing.T, env *apptest.Env) int {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(env.Config.DataDir, "work", "inputs"))
	return len(entries)
}

func TestRunEndToEnd(t *testing.T) {
	apptest.EachOf(t, append(apptest.BlobBackends, apptest.ClusterBackend), func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		publish(t, env, "echo", echoTool)
		uc, u := env.User(t, "ulla", "user")
		a := runUpload(t, env, u.Token, "echo", []string{"a.csv", "../b ö.txt"}, []string{"x,y\n", "hej"}, `{"n": 2}`, "")
		if a.status != 201 {
			t.Fatalf("run: %d %s", a.status, a.raw)
		}
		var r client.Run
		json.Unmarshal([]byte(a.raw), &r)
		if r.Status != "succeeded" || r.Kind != "initial" || r.Context != "default" || r.DurationMS == nil || r.Attempts != 1 {
			t.Fatalf("run: %s", a.raw)
		}
		if r.Outputs[0].Message != "got 2 files" || len(r.Outputs[1].Rows) != 2 || fmt.Sprint(r.Outputs[2].Value) != "map[n:2]" {
			t.Fatalf("outputs: %+v", r.Outputs)
		}
		manifest, _ := json.Marshal(r.InputManifest)
		if !strings.Contains(string(manifest), `"name":"a.csv","bytes":4`) || !strings.Contains(string(manifest), `"name":"b ö.txt","bytes":3`) {
			t.Fatalf("input_manifest: %s", manifest)
		}
		if r.Stdout == nil || !strings.Contains(*r.Stdout, "hello from the tool") {
			t.Fatalf("stdout: %v", r.Stdout)
		}
		if len(r.Artifacts) != 2 {
			t.Fatalf("artifacts: %+v", r.Artifacts)
		}
		for _, art := range r.Artifacts {
			var buf bytes.Buffer
			if err := uc.DownloadArtifact(context.Background(), art, &buf); err != nil {
				t.Fatalf("%s: %v", art.Path, err)
			}
			switch art.Path {
			case "output/names.txt":
				if buf.String() != "a.csv\nb ö.txt" {
					t.Fatalf("names.txt = %q", buf.String())
				}
			case "output/sub dir/Rapport ö.md":
				if buf.String() != "# ok" || art.Name != "Rapport ö.md" {
					t.Fatalf("%+v %q", art, buf.String())
				}
			default:
				t.Fatalf("unexpected artifact %s", art.Path)
			}
		}
		// Another user sees none of it; an admin sees the run without its logs.
		_, other := env.User(t, "olle", "user")
		for _, p := range []string{"/api/v1/runs/" + r.RunID, "/api/v1/runs/" + r.RunID + "/artifacts/names.txt", "/api/v1/runs/" + r.RunID + "/events"} {
			if a := send(t, env, "GET", p, other.Token, "", nil); a.status != 404 {
				t.Errorf("GET %s by another user: %d", p, a.status)
			}
		}
		adm := send(t, env, "GET", "/api/v1/runs/"+r.RunID, env.AdminToken, "", nil)
		if adm.status != 200 || strings.Contains(adm.raw, "hello from the tool") {
			t.Fatalf("admin view: %d; stdout must be shown only to the owner", adm.status)
		}
		list := send(t, env, "GET", "/api/v1/runs?tool=echo", u.Token, "", nil)
		if list.body["count"] != float64(1) {
			t.Fatalf("runs list: %s", list.raw)
		}
		if n := inputDirsLeft(t, env); n != 0 {
			t.Fatalf("%d input dirs left after the run", n)
		}
	})
}

func TestRunUploadValidation(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.UploadMaxFiles, cfg.UploadMaxFileBytes, cfg.UploadMaxTotalBytes = 3, 100, 150
	env := apptest.Start(t, cfg)
	publish(t, env, "echo", echoTool)
	_, u := env.User(t, "u", "user")
	big := strings.Repeat("x", 101)
	tests := []struct {
		name   string
		names  []string
		bodies []string
		inputs string
		status int
		code   string
		msg    []string
	}{
		{"collision ignoring case", []string{"Report.TXT", "report.txt"}, []string{"a", "b"}, "", 400, "invalid_upload", []string{"Report.TXT", "report.txt", "rename"}},
		{"action.json reserved", []string{"Action.json"}, []string{"{}"}, "", 400, "invalid_upload", []string{"reserved", "rename the file"}},
		{"too many files", []string{"1", "2", "3", "4"}, []string{"a", "b", "c", "d"}, "", 413, "too_large", []string{"3"}},
		{"one file too large", []string{"ok.txt", "big.txt"}, []string{"a", big}, "", 413, "too_large", []string{"big.txt", "100"}},
		{"total too large", []string{"a.txt", "b.txt"}, []string{strings.Repeat("a", 100), strings.Repeat("b", 60)}, "", 413, "too_large", []string{"150"}},
		{"empty name", []string{"..."}, []string{"a"}, "", 400, "invalid_upload", nil},
		{"inputs not an object", nil, nil, `[1, 2]`, 400, "invalid_upload", []string{"inputs"}},
		{"inputs not JSON", nil, nil, `{nope`, 400, "invalid_upload", []string{"inputs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := runUpload(t, env, u.Token, "echo", tc.names, tc.bodies, tc.inputs, "")
			if a.status != tc.status || a.errCode() != tc.code {
				t.Fatalf("got %d %s; want %d %s", a.status, a.raw, tc.status, tc.code)
			}
			for _, m := range tc.msg {
				if !strings.Contains(a.errMessage(), m) {
					t.Errorf("message %q lacks %q", a.errMessage(), m)
				}
			}
			// Nothing ran and nothing was kept.
			if list := send(t, env, "GET", "/api/v1/runs", u.Token, "", nil); list.body["count"] != float64(0) {
				t.Fatalf("a rejected upload created a run: %s", list.raw)
			}
			if n := inputDirsLeft(t, env); n != 0 {
				t.Fatalf("%d input dirs left", n)
			}
		})
	}
	// Neither multipart nor JSON (docs/api.md "JSON runs"): refused.
	if a := send(t, env, "POST", "/api/v1/tools/echo/runs", u.Token, "text/plain", strings.NewReader("{}")); a.status != 400 || a.errCode() != "invalid_upload" ||
		!strings.Contains(a.errMessage(), "application/json") {
		t.Fatalf("non-multipart: %d %s", a.status, a.raw)
	}
}

func TestToolRoles(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ac, _ := env.User(t, "anna", "author")
	_, bob := env.User(t, "bob", "author")
	_, ulf := env.User(t, "ulf", "user")
	ctx := context.Background()
	tool, v1, err := ac.CreateTool(ctx, "draft", "Draft", "", "def run_tool(i, o):\n    return 'x'\n", false)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"slug":"x","title":"x","source":"def run_tool(i,o): pass"}`
	if a := send(t, env, "POST", "/api/v1/tools", ulf.Token, "application/json", strings.NewReader(body)); a.status != 403 {
		t.Fatalf("user creates a tool: %d", a.status)
	}
	// A draft is invisible to others; its author cannot run it in production yet.
	for _, tok := range []string{ulf.Token, bob.Token} {
		if a := send(t, env, "GET", "/api/v1/tools/draft", tok, "", nil); a.status != 404 {
			t.Errorf("draft visible: %d", a.status)
		}
		if a := send(t, env, "GET", "/api/v1/tool-versions/"+v1.ID, tok, "", nil); a.status != 404 {
			t.Errorf("version visible: %d", a.status)
		}
	}
	if a := runUpload(t, env, ulf.Token, "draft", nil, nil, "", ""); a.status != 404 {
		t.Fatalf("user runs a draft: %d", a.status)
	}
	a := send(t, env, "POST", "/api/v1/tools/draft/runs", "", "", nil)
	if a.status != 401 {
		t.Fatalf("no token: %d", a.status)
	}
	if a := runUpload(t, env, ac2token(t, env, "anna"), "draft", nil, nil, "", ""); a.status != 409 || !strings.Contains(a.errMessage(), "no published version") {
		t.Fatalf("author runs an unpublished tool: %d %s", a.status, a.raw)
	}
	if _, err := ac.Publish(ctx, v1.ID); err != nil {
		t.Fatal(err)
	}
	// Published: everyone sees it; only the author (or an admin) adds versions.
	if a := send(t, env, "GET", "/api/v1/tools/"+tool.ID, ulf.Token, "", nil); a.status != 200 {
		t.Fatalf("published tool: %d", a.status)
	}
	if a := send(t, env, "POST", "/api/v1/tools/draft/versions", bob.Token, "application/json", strings.NewReader(`{"source":"x"}`)); a.status != 403 {
		t.Fatalf("another author adds a version: %d", a.status)
	}
	if _, err := env.Admin.CreateVersion(ctx, "draft", "def run_tool(i, o):\n    return 'v2'\n"); err != nil {
		t.Fatalf("admin adds a version: %v", err)
	}
	if a := send(t, env, "POST", "/api/v1/tools", env.AdminToken, "application/json", strings.NewReader(`{"slug":"Bad Slug","title":"x","source":"x"}`)); a.status != 400 {
		t.Fatalf("bad slug: %d", a.status)
	}
	if a := send(t, env, "POST", "/api/v1/tools", env.AdminToken, "application/json", strings.NewReader(`{"slug":"draft","title":"x","source":"x"}`)); a.status != 409 {
		t.Fatalf("taken slug: %d", a.status)
	}
}

// ac2token issues a fresh token for a user by name, as the admin.
func ac2token(t *testing.T, env *apptest.Env, name string) string {
	tok, err := env.Admin.CreateToken(context.Background(), name, "test")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

const sleepTool = `
import time, sys
def run_tool(input_dir, output_dir):
    print("started", flush=True)
    time.sleep(float(__import__("skrip_toolkit").inputs().get("s", 3)))
    return "slept"
`

func TestQueueFullAndCancel(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.RunnerConcurrency, cfg.RunnerQueue = 1, 1
	env := apptest.Start(t, cfg)
	publish(t, env, "sleep", sleepTool)
	_, u := env.User(t, "u", "user")
	first := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 30}`, "?wait=0s")
	second := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 30}`, "?wait=0s")
	if first.status != 202 || second.status != 202 {
		t.Fatalf("first two: %d %d", first.status, second.status)
	}
	third := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 30}`, "?wait=0s")
	if third.status != 503 || third.errCode() != "unavailable" || third.header.Get("Retry-After") == "" {
		t.Fatalf("third: %d %s (Retry-After %q)", third.status, third.raw, third.header.Get("Retry-After"))
	}
	if list := send(t, env, "GET", "/api/v1/runs", u.Token, "", nil); list.body["count"] != float64(2) {
		t.Fatalf("a refused run was created: %s", list.raw)
	}
	// Cancel the queued one, then the running one.
	for _, a := range []answer{second, first} {
		id := a.body["run_id"].(string)
		c := send(t, env, "POST", "/api/v1/runs/"+id+"/cancel", u.Token, "", nil)
		if c.status != 200 || c.body["status"] != "cancelled" {
			t.Fatalf("cancel %s: %d %s", id, c.status, c.raw)
		}
	}
	// The worker is free again.
	if a := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 0}`, ""); a.status != 201 || a.body["status"] != "succeeded" {
		t.Fatalf("after cancelling: %d %s", a.status, a.raw)
	}
}

func TestRunEventsAndTimeout(t *testing.T) {
	apptest.EachOf(t, []apptest.Backend{apptest.Backends[0], apptest.ClusterBackend}, testRunEventsAndTimeout)
}

func testRunEventsAndTimeout(t *testing.T, b apptest.Backend) {
	cfg := apptest.Config(t, b)
	cfg.RunTimeout = 5 * time.Second // room for a 1 s run to start on a loaded machine
	env := apptest.Start(t, cfg)
	publish(t, env, "sleep", sleepTool)
	_, u := env.User(t, "u", "user")
	a := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 1}`, "?wait=0s")
	id := a.body["run_id"].(string)
	req, _ := http.NewRequest("GET", env.URL+"/api/v1/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+u.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: ") || strings.HasPrefix(sc.Text(), "data: ") {
			events = append(events, sc.Text())
		}
	}
	joined := strings.Join(events, "\n")
	if !strings.Contains(joined, "event: stdout\ndata: \"started\"") || !strings.HasSuffix(joined, "event: status\ndata: \"succeeded\"") {
		t.Fatalf("events:\n%s", joined)
	}
	// A run over the 5s limit times out, with the summary docs/spec.md §5 gives.
	to := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 30}`, "")
	if to.body["status"] != "timed_out" || to.body["error_summary"] != "Execution timed out after 5s" || to.body["error_source"] != "runner" {
		t.Fatalf("timeout: %s", to.raw)
	}
}

func TestRestartFailsInterruptedRuns(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	env := apptest.Start(t, cfg)
	tool := publish(t, env, "echo", echoTool)
	_, u := env.User(t, "u", "user")
	now := time.Now()
	for _, st := range []string{store.StatusRunning, store.StatusQueued} {
		err := env.App.Store.CreateRun(context.Background(), store.Run{ID: "r_" + st, ToolID: tool.ID, VersionID: *tool.PublishedVersionID,
			UserID: u.ID, Context: "default", Kind: "initial", Status: st, Inputs: "{}", Outputs: "[]", NextActions: "[]",
			Artifacts: "[]", InputManifest: `{"files":[]}`, CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
	}
	env.App.Close()
	env2 := apptest.Start(t, cfg)
	for _, id := range []string{"r_running", "r_queued"} {
		r, err := env2.App.Store.GetRun(context.Background(), id)
		if err != nil || r.Status != store.StatusFailed || r.ErrorSummary != "interrupted by server restart" || r.ErrorSource != store.SourceRunner {
			t.Fatalf("%s after restart: %+v, %v", id, r, err)
		}
	}
}

// sparseTool leaves 30 files of 100 MB in /work/output that hold no blocks at all.
const sparseTool = `
import os
def run_tool(input_dir, output_dir):
    for i in range(30):
        fd = os.open(os.path.join(output_dir, "s%02d.bin" % i), os.O_CREAT | os.O_WRONLY)
        os.ftruncate(fd, 100000000)
        os.close(fd)
    return "30 sparse files"
`

// TestSparseOutputsCountByApparentSize runs a tool that leaves 30 sparse files of 100 MB
// on each runner: they count against SKRIP_RUN_OUTPUT_BYTES (100 MiB) by apparent size,
// so the run keeps what fits, stores no more than the cap, and says which files it left
// out and why (issue 13: on bubblewrap they once became 3 GB of artifacts, and Docker
// failed the run).
func TestSparseOutputsCountByApparentSize(t *testing.T) {
	runOnEachRunner(t, "sparse", sparseTool, func(t *testing.T, env *apptest.Env, cfg config.Config, r client.Run) {
		var stored int64
		for _, a := range r.Artifacts {
			stored += a.Bytes
		}
		if len(r.Artifacts) != 1 || r.Artifacts[0].Path != "output/s00.bin" || stored > cfg.RunOutputBytes {
			t.Errorf("artifacts %+v: %d bytes, the cap is %d; want s00.bin alone", r.Artifacts, stored, cfg.RunOutputBytes)
		}
		var blobs int64
		filepath.Walk(filepath.Join(cfg.DataDir, "blobs"), func(_ string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				blobs += info.Size()
			}
			return nil
		})
		if blobs > cfg.RunOutputBytes+1<<20 {
			t.Errorf("the blob store holds %d bytes after the run, over the %d cap", blobs, cfg.RunOutputBytes)
		}
		var notice string
		for _, o := range r.Outputs {
			if o.Kind == "notice" && strings.HasPrefix(o.Message, "Artifacts over the output limit (100 MiB) were not kept: output/s01.bin (95.4 MiB)") {
				notice = o.Message
			}
		}
		if notice == "" || !strings.Contains(notice, "and 19 more; 2.7 GiB in all") {
			t.Errorf("no notice naming the cap and the files left out: %+v", r.Outputs)
		}
	})
}

// runOnEachRunner publishes source as tool slug on a server of each runner, runs it once
// and hands the succeeded run to check.
func runOnEachRunner(t *testing.T, slug, source string, check func(t *testing.T, env *apptest.Env, cfg config.Config, r client.Run)) {
	for _, rn := range []string{"bwrap", "docker"} {
		t.Run(rn, func(t *testing.T) {
			cfg := apptest.Config(t, apptest.Backends[0])
			cfg.Runner = rn
			env := apptest.Start(t, cfg)
			publish(t, env, slug, source)
			r, err := env.Admin.RunFiles(context.Background(), slug, nil, nil, 2*time.Minute)
			if err != nil || r.Status != "succeeded" {
				t.Fatalf("run: %+v %v", r, err)
			}
			check(t, env, cfg, r)
		})
	}
}

const manyFilesTool = `
import os
def run_tool(input_dir, output_dir):
    made = 0
    try:
        for i in range(40000):
            open(os.path.join(output_dir, "%06d" % i), "w").close()
            made += 1
    except OSError as e:
        print("stopped:", e.strerror)
    print("made", made)
    return "made %d" % made
`

// TestManyOutputFilesStayBounded runs a tool that tries to leave 40,000 empty files in
// /work/output on each runner: /work/output holds at most 16384 entries,
// the run keeps 500 artifacts, and one notice (not one per file) names a few of the
// others and counts the rest, so the run's record stays small.
func TestManyOutputFilesStayBounded(t *testing.T) {
	runOnEachRunner(t, "many", manyFilesTool, func(t *testing.T, env *apptest.Env, _ config.Config, r client.Run) {
		var made int
		if r.Stdout == nil {
			t.Fatal("no stdout")
		}
		for _, line := range strings.Split(*r.Stdout, "\n") {
			fmt.Sscanf(line, "made %d", &made)
		}
		if made == 0 || made > runner.OutputInodes {
			t.Errorf("the tool made %d files in /work/output, want at most %d: %s", made, runner.OutputInodes, *r.Stdout)
		}
		if len(r.Artifacts) != 500 {
			t.Errorf("%d artifacts, want 500", len(r.Artifacts))
		}
		var notices []string
		for _, o := range r.Outputs {
			if o.Kind == "notice" {
				notices = append(notices, o.Message)
			}
		}
		want := fmt.Sprintf("Not kept as artifacts: output/000500, output/000501, output/000502, output/000503, output/000504 and %d more (a run keeps at most 500 artifacts).", made-505)
		if len(notices) != 1 || notices[0] != want {
			t.Errorf("notices %q, want one: %q", notices, want)
		}
		a := send(t, env, "GET", "/api/v1/runs/"+r.RunID, env.AdminToken, "", nil)
		if a.status != 200 || len(a.raw) > 256<<10 {
			t.Errorf("the run's JSON: %d, %d bytes", a.status, len(a.raw))
		}
	})
}

// TestRunListQueryErrors: a bad limit, cursor or status is refused with the field, and a
// limit's value as the query spelled it, whether or not it is a number.
func TestRunListQueryErrors(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	_, u := env.User(t, "u", "user")
	tests := []struct {
		query, field string
		value        any
	}{
		{"limit=0", "limit", "0"},
		{"limit=501", "limit", "501"},
		{"limit=-1", "limit", "-1"},
		{"limit=abc", "limit", "abc"},
		{"cursor=bogus", "cursor", nil},
		{"status=bogus", "status", "bogus"},
	}
	for _, tc := range tests {
		a := send(t, env, "GET", "/api/v1/runs?"+tc.query, u.Token, "", nil)
		e, _ := a.body["error"].(map[string]any)
		d, _ := e["details"].(map[string]any)
		if a.status != 400 || a.errCode() != "invalid_request" || d["field"] != tc.field || d["value"] != tc.value || d["reason"] != "run_query" {
			t.Errorf("GET /api/v1/runs?%s: %d %s; want 400 invalid_request, field %s, value %#v, reason run_query", tc.query, a.status, a.raw, tc.field, tc.value)
		}
	}
}

// TestRunEventsSendEachStatusOnce: a status that reaches the stream by two paths (the
// database and the change's event, or an event relayed twice) is sent once (issue 31:
// a stream in a cluster sent "running" twice).
func TestRunEventsSendEachStatusOnce(t *testing.T) {
	env := apptest.Start(t, apptest.Config(t, apptest.Backends[0]))
	publish(t, env, "sleep", sleepTool)
	_, u := env.User(t, "u", "user")
	a := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 2}`, "?wait=0s")
	id := a.body["run_id"].(string)
	req, _ := http.NewRequest("GET", env.URL+"/api/v1/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+u.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var statuses []string
	sc := bufio.NewScanner(resp.Body)
	sent := false
	for event := ""; sc.Scan() && len(statuses) < 10; {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case event == "status" && strings.HasPrefix(line, "data: "):
			statuses = append(statuses, strings.TrimPrefix(line, "data: "))
			if line == `data: "running"` && !sent {
				sent = true
				// The same change again, as a relay from another node would bring it.
				env.App.Runs.Publish(id, run.Event{Type: "status", Data: store.StatusRunning})
				env.App.Runs.Publish(id, run.Event{Type: "status", Data: store.StatusRunning})
			}
		}
	}
	if got := strings.Join(statuses, " "); got != `"running" "succeeded"` && got != `"queued" "running" "succeeded"` {
		t.Fatalf("statuses sent: %s; want each once", got)
	}
}
