package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// newSandbox creates a sandbox with body as its request and returns its id.
func newSandbox(t *testing.T, env *apptest.Env, token, body string) string {
	t.Helper()
	a := send(t, env, "POST", "/api/v1/sandboxes", token, "application/json", strings.NewReader(body))
	if a.status != 201 {
		t.Fatalf("create sandbox: %d %s", a.status, a.raw)
	}
	id, _ := a.body["sandbox_id"].(string)
	if !strings.HasPrefix(id, "sb_") {
		t.Fatalf("sandbox id %q", id)
	}
	return id
}

func execIn(t *testing.T, env *apptest.Env, token, id string, cmd ...string) answer {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"cmd": cmd, "timeout_s": 30})
	return send(t, env, "POST", "/api/v1/sandboxes/"+id+"/exec", token, "application/json", strings.NewReader(string(b)))
}

// boxBackends are a single server and a cluster's API node, whose sandboxes live on its
// in-process worker and are reached through NATS.
var boxBackends = []apptest.Backend{apptest.Backends[0], apptest.ClusterBackend}

func TestSandboxLifecycleAndOwnership(t *testing.T) {
	apptest.EachOf(t, append(apptest.Backends, apptest.ClusterBackend), func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, alice := env.User(t, "alice", "user")
		_, bob := env.User(t, "bob", "user")
		a := send(t, env, "POST", "/api/v1/sandboxes", alice.Token, "application/json",
			strings.NewReader(`{"idle_timeout": "30m", "limits": {"memory_bytes": 268435456, "workspace_bytes": 10485760}}`))
		if a.status != 201 {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		id := a.body["sandbox_id"].(string)
		limits := a.body["limits"].(map[string]any)
		if a.body["runner"] != "bwrap" || a.body["idle_timeout_s"] != 1800.0 || limits["memory_bytes"] != 268435456.0 ||
			limits["workspace_bytes"] != 10485760.0 || a.body["workspace"] != "/workspace" || a.body["owner_id"] != alice.ID {
			t.Errorf("created sandbox: %s", a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/sandboxes/"+id, alice.Token, "", nil); a.status != 200 || a.body["sandbox_id"] != id {
			t.Errorf("get: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/sandboxes", alice.Token, "", nil); a.status != 200 || a.body["count"] != 1.0 {
			t.Errorf("list: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/sandboxes", bob.Token, "", nil); a.body["count"] != 0.0 {
			t.Errorf("bob's list shows alice's sandbox: %s", a.raw)
		}
		// Someone else's sandbox does not exist for them, whatever they try.
		for _, c := range []struct{ method, path, body string }{
			{"GET", "", ""},
			{"DELETE", "", ""},
			{"POST", "/exec", `{"cmd": ["true"]}`},
			{"GET", "/fs/a.txt", ""},
			{"PUT", "/fs/a.txt", "x"},
			{"POST", "/stage", `{"file_key": "files/f_x", "destination": "a"}`},
			{"POST", "/publish", `{"source": "a"}`},
		} {
			if a := send(t, env, c.method, "/api/v1/sandboxes/"+id+c.path, bob.Token, "application/json", strings.NewReader(c.body)); a.status != 404 || a.errCode() != "not_found" {
				t.Errorf("bob %s %s: %d %s", c.method, c.path, a.status, a.raw)
			}
		}
		if a := send(t, env, "GET", "/api/v1/sandboxes/"+id, env.AdminToken, "", nil); a.status != 200 {
			t.Errorf("an admin reads any sandbox: %d", a.status)
		}
		if a := send(t, env, "GET", "/api/v1/sandboxes?all=true", env.AdminToken, "", nil); a.body["count"] != 1.0 {
			t.Errorf("admin list all: %s", a.raw)
		}
		if a := send(t, env, "DELETE", "/api/v1/sandboxes/"+id, alice.Token, "", nil); a.status != 204 {
			t.Fatalf("delete: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/sandboxes/"+id, alice.Token, "", nil); a.status != 404 {
			t.Errorf("get after delete: %d", a.status)
		}
		if boxes, _ := env.App.Runner.Boxes(context.Background()); len(boxes) != 0 {
			t.Errorf("the runner still holds %v after delete", boxes)
		}
	})
}

func TestSandboxCreateRefusals(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.SandboxMaxPerUser = 2
	cfg.SandboxMaxTotal = 3
	env := apptest.Start(t, cfg)
	_, alice := env.User(t, "alice", "user")
	for _, c := range []struct {
		body, field string
	}{
		{`{"limits": {"memory_bytes": 1099511627776}}`, "limits.memory_bytes"},
		{`{"limits": {"pids": -1}}`, "limits.pids"},
		{`{"limits": {"workspace_bytes": 1099511627776}}`, "limits.workspace_bytes"},
		{`{"idle_timeout": "25h"}`, "idle_timeout"},
		{`{"idle_timeout": "soon"}`, "idle_timeout"},
		{`{"idle_timeout": 0.1}`, "idle_timeout"},
	} {
		a := send(t, env, "POST", "/api/v1/sandboxes", alice.Token, "application/json", strings.NewReader(c.body))
		d, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
		if a.status != 400 || d["field"] != c.field || !strings.Contains(a.errMessage(), strings.TrimPrefix(c.field, "limits.")) {
			t.Errorf("%s: %d %s", c.body, a.status, a.raw)
		}
	}
	newSandbox(t, env, alice.Token, `{}`)
	newSandbox(t, env, alice.Token, ``)
	a := send(t, env, "POST", "/api/v1/sandboxes", alice.Token, "application/json", strings.NewReader(`{}`))
	if a.status != 409 || !strings.Contains(a.errMessage(), "2 sandboxes") {
		t.Errorf("a third sandbox over a maximum of 2: %d %s", a.status, a.raw)
	}
	newSandbox(t, env, env.AdminToken, `{}`)
	a = send(t, env, "POST", "/api/v1/sandboxes", env.AdminToken, "application/json", strings.NewReader(`{}`))
	if a.status != 503 || a.header.Get("Retry-After") == "" || !strings.Contains(a.errMessage(), "3 sandboxes") {
		t.Errorf("a fourth sandbox on a server of 3: %d %s", a.status, a.raw)
	}
	if boxes, _ := env.App.Runner.Boxes(context.Background()); len(boxes) != 3 {
		t.Errorf("the runner holds %d boxes, want 3", len(boxes))
	}
}

func TestSandboxExec(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	id := newSandbox(t, env, env.AdminToken, `{}`)
	a := send(t, env, "POST", "/api/v1/sandboxes/"+id+"/exec", env.AdminToken, "application/json",
		strings.NewReader(`{"cmd": ["sh", "-c", "cat; echo err >&2; exit 3"], "timeout_s": 10, "stdin": "in"}`))
	if a.status != 200 || a.body["exit_code"] != 3.0 || a.body["stdout"] != "in" || a.body["stderr"] != "err\n" ||
		a.body["stdout_truncated"] != false || a.body["timed_out"] != false {
		t.Fatalf("exec: %d %s", a.status, a.raw)
	}
	if _, ok := a.body["duration_ms"].(float64); !ok {
		t.Errorf("no duration_ms: %s", a.raw)
	}
	for _, c := range []struct{ body, want string }{
		{`{"cmd": []}`, "cmd"},
		{`{"cmd": "ls -l"}`, "cmd"},
		{`{"cmd": ["true"], "timeout_s": 100000}`, "timeout_s"},
		{`{"cmd": ["true"], "timeout_s": -1}`, "timeout_s"},
		{`{"cmd": ["a\u0000b"]}`, "NUL"},
		{`{"cmd": ["true"], "state": {}}`, "state"},
	} {
		a := send(t, env, "POST", "/api/v1/sandboxes/"+id+"/exec", env.AdminToken, "application/json", strings.NewReader(c.body))
		if a.status != 400 || !strings.Contains(a.errMessage(), c.want) {
			t.Errorf("%s: %d %s", c.body, a.status, a.raw)
		}
	}
	a = send(t, env, "POST", "/api/v1/sandboxes/"+id+"/exec", env.AdminToken, "application/json",
		strings.NewReader(`{"cmd": ["sleep", "30"], "timeout_s": 1}`))
	if a.status != 200 || a.body["timed_out"] != true || a.body["exit_code"] == 0.0 {
		t.Errorf("a timed-out exec: %d %s", a.status, a.raw)
	}
	if a := execIn(t, env, env.AdminToken, "sb_none", "true"); a.status != 404 {
		t.Errorf("exec in an unknown sandbox: %d %s", a.status, a.raw)
	}
}

func TestSandboxExecStreams(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	id := newSandbox(t, env, env.AdminToken, `{}`)
	req, _ := http.NewRequest("POST", env.URL+"/api/v1/sandboxes/"+id+"/exec",
		strings.NewReader(`{"cmd": ["sh", "-c", "echo one; sleep 1; echo two >&2; sleep 0.3; echo three"]}`))
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	req.Header.Set("Accept", "application/x-ndjson")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	var firstAt time.Duration
	var result map[string]any
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if r, ok := msg["result"].(map[string]any); ok {
			result = r
			continue
		}
		if firstAt == 0 {
			firstAt = time.Since(start)
		}
		lines = append(lines, fmt.Sprint(msg["stream"], ":", msg["line"]))
	}
	if strings.Join(lines, "") != "stdout:one\nstderr:two\nstdout:three\n" {
		t.Errorf("streamed %q", lines)
	}
	if result == nil || result["exit_code"] != 0.0 || result["stdout"] != "one\nthree\n" {
		t.Errorf("result %v", result)
	}
	// The first line came while the command still slept, not at its end.
	if total := time.Since(start); firstAt >= total-500*time.Millisecond {
		t.Errorf("the first line came after %s of %s: not streamed", firstAt, total)
	}
	// The client streams too, and a refusal is still a plain error.
	c := env.Admin
	var got []string
	res, err := c.ExecStream(context.Background(), id, client.ExecRequest{Cmd: []string{"echo", "hi"}}, func(s, l string) { got = append(got, s+":"+l) })
	if err != nil || res.ExitCode != 0 || strings.Join(got, "") != "stdout:hi\n" {
		t.Errorf("client stream: %v %v %q", res, err, got)
	}
	if _, err := c.ExecStream(context.Background(), id, client.ExecRequest{}, func(string, string) {}); !client.IsCode(err, "invalid_request") {
		t.Errorf("streamed exec of no command: %v", err)
	}
}

// TestSandboxFiles runs on both runners: bubblewrap resolves paths on the host, Docker
// inside the container, and both must refuse the same ways out.
func TestSandboxFiles(t *testing.T) {
	for _, rn := range []string{"bwrap", "docker"} {
		t.Run(rn, func(t *testing.T) {
			cfg := apptest.Config(t, apptest.Backends[0])
			cfg.Runner = rn
			testSandboxFiles(t, apptest.Start(t, cfg))
		})
	}
}

func testSandboxFiles(t *testing.T, env *apptest.Env) {
	id := newSandbox(t, env, env.AdminToken, `{"limits": {"workspace_bytes": 1048576}}`)
	base := "/api/v1/sandboxes/" + id + "/fs/"
	if a := send(t, env, "PUT", base+"in/deep/hello.txt", env.AdminToken, "text/plain", strings.NewReader("hello")); a.status != 201 ||
		a.body["size_bytes"] != 5.0 || a.body["path"] != "in/deep/hello.txt" {
		t.Fatalf("put: %d %s", a.status, a.raw)
	}
	a := send(t, env, "GET", base+"in/deep/hello.txt", env.AdminToken, "", nil)
	if a.status != 200 || a.raw != "hello" || a.header.Get("Content-Length") != "5" || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("get: %d %q %v", a.status, a.raw, a.header)
	}
	if a := execIn(t, env, env.AdminToken, id, "sh", "-c", "cat in/deep/hello.txt && ln -s /etc out && ln -s ../../.. up && echo inside > in.txt && ln -s /workspace/in.txt abs"); a.body["stdout"] != "hello" {
		t.Fatalf("exec sees %s", a.raw)
	}
	if a := send(t, env, "GET", base+"abs", env.AdminToken, "", nil); a.status != 200 || a.raw != "inside\n" {
		t.Errorf("a link inside the workspace: %d %q", a.status, a.raw)
	}
	if a := send(t, env, "GET", base+"missing.txt", env.AdminToken, "", nil); a.status != 404 || !strings.Contains(a.errMessage(), "missing.txt") {
		t.Errorf("missing file: %d %s", a.status, a.raw)
	}
	// Every way out of /workspace is a 400 that names the problem, reading or writing.
	for _, c := range []struct{ name, path, want string }{
		{"dot dot", "in/../../etc/passwd", "has a .. segment"},
		{"encoded dot dot", "in/%2e%2e/%2e%2e/etc/passwd", "has a .. segment"},
		{"absolute", "/etc/passwd", "is absolute"},
		{"NUL", "in%00.txt", "NUL"},
		{"symlink out", "out/passwd", "outside /workspace"},
		{"relative symlink out", "up/etc/passwd", "outside /workspace"},
		{"the workspace itself", "", ""},
		{"a directory", "in/deep", "directory"},
	} {
		for _, m := range []string{"GET", "PUT"} {
			req, _ := http.NewRequest(m, env.URL+base+c.path, strings.NewReader("x"))
			req.URL.RawPath, req.URL.Path = "", "" // send the path exactly as written
			req.URL.Opaque = "//" + req.URL.Host + base + c.path
			req.Header.Set("Authorization", "Bearer "+env.AdminToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			msg, _ := body["error"].(map[string]any)["message"].(string)
			if resp.StatusCode != 400 || !strings.Contains(msg, c.want) {
				t.Errorf("%s %s (%s): %d %v", m, c.path, c.name, resp.StatusCode, body)
			}
		}
	}
	// Over the workspace quota: 507, and the file that was there stays.
	a = send(t, env, "PUT", base+"in/deep/hello.txt", env.AdminToken, "", strings.NewReader(strings.Repeat("x", 2<<20)))
	if a.status != 507 || a.errCode() != "quota_exceeded" || !strings.Contains(a.errMessage(), "1 MiB") {
		t.Errorf("over the quota: %d %s", a.status, a.raw)
	}
	if a := send(t, env, "GET", base+"in/deep/hello.txt", env.AdminToken, "", nil); a.raw != "hello" {
		t.Errorf("after a refused write: %q", a.raw)
	}
}

func TestSandboxStageAndPublish(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesMaxFileBytes = 1 << 20
		env := apptest.Start(t, cfg)
		alice, _ := env.User(t, "alice", "user")
		bob, _ := env.User(t, "bob", "user")
		ctx := context.Background()
		in, err := alice.Upload(ctx, "scores.csv", strings.NewReader("name,score\nada,3\nbob,5\n"), client.UploadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bobs, err := bob.Upload(ctx, "secret.txt", strings.NewReader("bob's"), client.UploadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := alice.CreateSandbox(ctx, client.SandboxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := alice.StageFile(ctx, sb.SandboxID, in.FileKey, "input/data.csv")
		if err != nil || !st.OK || st.Path != "input/data.csv" || st.SizeBytes != in.SizeBytes || st.Checksum != in.Checksum {
			t.Fatalf("stage: %+v %v", st, err)
		}
		res, err := alice.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"python3", "-c",
			"import csv, os\nrows = list(csv.DictReader(open('input/data.csv')))\nos.makedirs('output', exist_ok=True)\n" +
				"open('output/result.csv', 'w').write('total\\n%d\\n' % sum(int(r['score']) for r in rows))"}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec: %+v %v", res, err)
		}
		pub, err := alice.PublishFile(ctx, sb.SandboxID, "output/result.csv", "", "")
		if err != nil || !pub.OK || !strings.HasPrefix(pub.FileKey, "files/f_") || pub.Name != "result.csv" || pub.SizeBytes != 8 {
			t.Fatalf("publish: %+v %v", pub, err)
		}
		var got strings.Builder
		if _, err := alice.Download(ctx, pub.FileKey, func(client.FileInfo) (io.Writer, error) { return &got, nil }); err != nil || got.String() != "total\n8\n" {
			t.Fatalf("download: %q %v", got.String(), err)
		}
		if pub, err := alice.PublishFile(ctx, sb.SandboxID, "output/result.csv", "files/results/sum.csv", "1h"); err != nil || pub.FileKey != "files/results/sum.csv" || pub.ExpiresAt == nil {
			t.Errorf("publish under a key with a ttl: %+v %v", pub, err)
		}
		// Someone else's staged file cannot be staged; refusals name the problem.
		for _, c := range []struct {
			key, dest, code string
		}{
			{bobs.FileKey, "x", "not_found"},
			{"files/f_nothing", "x", "not_found"},
			{"../etc", "x", "invalid_key"},
			{in.FileKey, "../x", "invalid_request"},
			{in.FileKey, "/etc/x", "invalid_request"},
			{in.FileKey, "a\x00b", "invalid_request"},
			{in.FileKey, "", "invalid_request"},
		} {
			if _, err := alice.StageFile(ctx, sb.SandboxID, c.key, c.dest); !client.IsCode(err, c.code) {
				t.Errorf("stage %s to %q: %v, want %s", c.key, c.dest, err, c.code)
			}
		}
		for _, src := range []string{"../x", "/etc/passwd", "", "output"} {
			if _, err := alice.PublishFile(ctx, sb.SandboxID, src, "", ""); !client.IsCode(err, "invalid_request") {
				t.Errorf("publish %q: %v, want invalid_request", src, err)
			}
		}
		if _, err := alice.PublishFile(ctx, sb.SandboxID, "output/none.csv", "", ""); !client.IsCode(err, "not_found") {
			t.Errorf("publish a missing file: %v", err)
		}
		// Keys are per owner: publishing under the key of bob's file makes a file of
		// alice's, and bob's stays his.
		if pub, err := alice.PublishFile(ctx, sb.SandboxID, "output/result.csv", bobs.FileKey, ""); err != nil || pub.FileKey != bobs.FileKey {
			t.Errorf("publish under the key of bob's file: %+v %v", pub, err)
		}
		for _, c := range []struct {
			who  *client.Client
			want string
		}{{alice, "total\n8\n"}, {bob, "bob's"}} {
			var got strings.Builder
			if _, err := c.who.Download(ctx, bobs.FileKey, func(client.FileInfo) (io.Writer, error) { return &got, nil }); err != nil || got.String() != c.want {
				t.Errorf("download of %s: %q %v, want %q", bobs.FileKey, got.String(), err, c.want)
			}
		}
		// Over the staging area's per-file limit: 413, and nothing is stored.
		before, _, _ := alice.Files(ctx, "", "", 100)
		if res, err := alice.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sh", "-c", "head -c 2000000 /dev/urandom > big.bin"}}); err != nil || res.ExitCode != 0 {
			t.Fatalf("making big.bin: %+v %v", res, err)
		}
		_, err = alice.PublishFile(ctx, sb.SandboxID, "big.bin", "", "")
		if !client.IsCode(err, "too_large") || !strings.Contains(err.Error(), "big.bin") {
			t.Errorf("publishing 2 MB over a 1 MiB limit: %v", err)
		}
		if after, _, _ := alice.Files(ctx, "", "", 100); len(after) != len(before) {
			t.Errorf("a refused publish stored a file: %d files, were %d", len(after), len(before))
		}
	})
}

func TestSandboxIdleTimeout(t *testing.T) {
	apptest.EachOf(t, boxBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		// Small workspaces: the admin holds six sandboxes, within one user's share.
		cfg.SandboxWorkspace = 16 << 20
		env := apptest.Start(t, cfg)
		ctx := context.Background()
		staged, err := env.Admin.Upload(ctx, "in.txt", strings.NewReader("staged"), client.UploadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		idle := newSandbox(t, env, env.AdminToken, `{"idle_timeout": 2}`)
		// Each of these is used once, half-way through its timeout, in one of the ways that
		// count as use.
		uses := map[string]func(id string) answer{
			"exec": func(id string) answer { return execIn(t, env, env.AdminToken, id, "true") },
			"fs get": func(id string) answer {
				return send(t, env, "GET", "/api/v1/sandboxes/"+id+"/fs/a.txt", env.AdminToken, "", nil)
			},
			"fs put": func(id string) answer {
				return send(t, env, "PUT", "/api/v1/sandboxes/"+id+"/fs/b.txt", env.AdminToken, "", strings.NewReader("b"))
			},
			"stage": func(id string) answer {
				return send(t, env, "POST", "/api/v1/sandboxes/"+id+"/stage", env.AdminToken, "application/json",
					strings.NewReader(`{"file_key": "`+staged.FileKey+`", "destination": "in.txt"}`))
			},
			"publish": func(id string) answer {
				return send(t, env, "POST", "/api/v1/sandboxes/"+id+"/publish", env.AdminToken, "application/json", strings.NewReader(`{"source": "a.txt"}`))
			},
		}
		used := map[string]string{}
		for name := range uses {
			used[name] = newSandbox(t, env, env.AdminToken, `{"idle_timeout": "2s"}`)
			if a := send(t, env, "PUT", "/api/v1/sandboxes/"+used[name]+"/fs/a.txt", env.AdminToken, "", strings.NewReader("a")); a.status != 201 {
				t.Fatalf("put: %s", a.raw)
			}
		}
		kept := newSandbox(t, env, env.AdminToken, `{}`)
		time.Sleep(1200 * time.Millisecond)
		for name, use := range uses {
			if a := use(used[name]); a.status/100 != 2 {
				t.Fatalf("%s: %d %s", name, a.status, a.raw)
			}
		}
		time.Sleep(1200 * time.Millisecond)
		r, err := env.Admin.Cleanup(ctx)
		if err != nil || r.Sandboxes != 1 {
			t.Fatalf("cleanup destroyed %d sandboxes (%v), want the idle one", r.Sandboxes, err)
		}
		if a := send(t, env, "GET", "/api/v1/sandboxes/"+idle, env.AdminToken, "", nil); a.status != 404 {
			t.Errorf("the idle sandbox: %d", a.status)
		}
		for name, id := range used {
			if a := send(t, env, "GET", "/api/v1/sandboxes/"+id, env.AdminToken, "", nil); a.status != 200 {
				t.Errorf("the sandbox used by %s was destroyed: %d", name, a.status)
			}
		}
		if a := send(t, env, "GET", "/api/v1/sandboxes/"+kept, env.AdminToken, "", nil); a.status != 200 {
			t.Errorf("the sandbox with the default timeout was destroyed: %d", a.status)
		}
		boxes, _ := env.App.Runner.Boxes(ctx)
		if len(boxes) != len(used)+1 {
			t.Errorf("the runner holds %v", boxes)
		}
		// Past its timeout a sandbox answers 404 at once, before any janitor pass.
		time.Sleep(2100 * time.Millisecond)
		if a := execIn(t, env, env.AdminToken, used["exec"], "true"); a.status != 404 || !strings.Contains(a.errMessage(), "without use") {
			t.Errorf("exec in a sandbox past its idle timeout: %d %s", a.status, a.raw)
		}
	})
}

func TestSandboxDeleteStopsExec(t *testing.T) {
	apptest.EachOf(t, boxBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		id := newSandbox(t, env, env.AdminToken, `{}`)
		done := make(chan answer, 1)
		go func() { done <- execIn(t, env, env.AdminToken, id, "sleep", "60") }()
		time.Sleep(time.Second)
		start := time.Now()
		if a := send(t, env, "DELETE", "/api/v1/sandboxes/"+id, env.AdminToken, "", nil); a.status != 204 {
			t.Fatalf("delete: %d %s", a.status, a.raw)
		}
		select {
		case a := <-done:
			if a.status != 404 || !strings.Contains(a.errMessage(), "deleted") {
				t.Errorf("the exec in a deleted sandbox answered %d %s", a.status, a.raw)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the exec went on after its sandbox was deleted")
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("delete took %s", d)
		}
	})
}

// TestSandboxJanitorSweeps: the server destroys an idle sandbox by itself, with nobody
// asking for it, long before the janitor's full pass, and counts it.
func TestSandboxJanitorSweeps(t *testing.T) {
	apptest.EachOf(t, boxBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.CleanupInterval = time.Hour
		cfg.SandboxIdleTimeout = 2 * time.Second
		env := apptest.Start(t, cfg)
		ctx := context.Background()
		id := newSandbox(t, env, env.AdminToken, `{}`)
		deadline := time.Now().Add(10 * time.Second)
		for {
			boxes, err := env.App.Runner.Boxes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, serr := env.App.Store.Sandbox(ctx, id)
			if len(boxes) == 0 && errors.Is(serr, store.ErrNotFound) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("10 s on, the idle sandbox is still there: boxes %v, record %v", boxes, serr)
			}
			time.Sleep(200 * time.Millisecond)
		}
		resp, err := http.Get(env.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		m, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(m), `skrip_janitor_deletions_total{kind="sandbox"} 1`) {
			t.Errorf("metrics do not count the destroyed sandbox:\n%s", grepLines(string(m), "skrip_janitor_deletions_total"))
		}
	})
}

func grepLines(text, word string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestSandboxStageVerifiesChecksum: a staged file whose stored bytes no longer match its
// checksum (changed, or cut short) never lands in a workspace, and what was at the
// destination stays.
func TestSandboxStageVerifiesChecksum(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	env := apptest.Start(t, cfg)
	ctx := context.Background()
	const content = "name,score\nada,3\n"
	f, err := env.Admin.Upload(ctx, "data.csv", strings.NewReader(content), client.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := env.Admin.CreateSandbox(ctx, client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.StageFile(ctx, sb.SandboxID, f.FileKey, "input/data.csv"); err != nil {
		t.Fatal(err)
	}
	// The blob's object file on disk: the only file under blobs/ holding these bytes.
	var object string
	filepath.WalkDir(filepath.Join(cfg.DataDir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); string(b) == content {
				object = p
			}
		}
		return nil
	})
	if object == "" {
		t.Fatal("no object file holds the uploaded bytes")
	}
	for _, c := range []struct{ name, bytes string }{
		{"changed", strings.Replace(content, "3", "9", 1)},
		{"cut short", content[:5]},
	} {
		if err := os.WriteFile(object, []byte(c.bytes), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Admin.StageFile(ctx, sb.SandboxID, f.FileKey, "input/data.csv"); err == nil {
			t.Errorf("%s: staging a file that does not match its checksum succeeded", c.name)
		}
		a := send(t, env, "GET", "/api/v1/sandboxes/"+sb.SandboxID+"/fs/input/data.csv", env.AdminToken, "", nil)
		if a.status != 200 || a.raw != content {
			t.Errorf("%s: the workspace file after a refused stage: %d %q", c.name, a.status, a.raw)
		}
		res, err := env.Admin.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sh", "-c", "ls -A input"}})
		if err != nil || res.Stdout != "data.csv\n" {
			t.Errorf("%s: input/ holds %q (%v), want only data.csv", c.name, res.Stdout, err)
		}
	}
}

// TestSandboxUserShare: one user's sandboxes reserve at most SKRIP_SANDBOX_USER_SHARE of
// the memory budget (on a cluster, of its workers' budgets together). Past it that user
// gets 507 naming what they reserve, the share and the budget, while another user still
// gets a sandbox. A user who is not an admin may ask for an idle timeout up to
// SKRIP_SANDBOX_MAX_IDLE; more is refused naming the cap, and an admin may ask for more.
func TestSandboxUserShare(t *testing.T) {
	apptest.EachOf(t, boxBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.SandboxWorkspace = 4 << 20
		one := runner.WorkspaceMemory(cfg.SandboxWorkspace)
		cfg.SandboxMemoryBudget = 8 * one
		cfg.SandboxUserShare = 0.25 // two workspaces
		cfg.SandboxMaxIdle = time.Hour
		env := apptest.Start(t, cfg)
		_, alice := env.User(t, "alice", "user")
		_, bob := env.User(t, "bob", "user")

		a := send(t, env, "POST", "/api/v1/sandboxes", alice.Token, "application/json", strings.NewReader(`{"idle_timeout": "24h"}`))
		if a.status != 400 || a.errCode() != "invalid_request" || !strings.Contains(a.errMessage(), "1h") || !strings.Contains(a.errMessage(), "SKRIP_SANDBOX_MAX_IDLE") {
			t.Fatalf("a user's idle_timeout of 24h over a cap of 1h: %d %s", a.status, a.raw)
		}
		a = send(t, env, "POST", "/api/v1/sandboxes", alice.Token, "application/json", strings.NewReader(`{"idle_timeout": "1h"}`))
		if a.status != 201 || a.body["idle_timeout_s"] != 3600.0 {
			t.Fatalf("a user's idle_timeout at the cap: %d %s", a.status, a.raw)
		}
		newSandbox(t, env, alice.Token, `{}`)

		a = send(t, env, "POST", "/api/v1/sandboxes", alice.Token, "application/json", strings.NewReader(`{}`))
		d, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
		if a.status != 507 || a.errCode() != "quota_exceeded" || d["reason"] != "sandbox_share" ||
			d["reserved_bytes"] != float64(2*one) || d["budget_bytes"] != float64(8*one) || d["share"] != 0.25 || d["share_bytes"] != float64(2*one) {
			t.Fatalf("a third workspace past a share of two: %d %s", a.status, a.raw)
		}
		for _, want := range []string{runner.HumanBytes(2 * one), runner.HumanBytes(8 * one), "SKRIP_SANDBOX_USER_SHARE 0.25"} {
			if !strings.Contains(a.errMessage(), want) {
				t.Errorf("the refusal %q does not name %q", a.errMessage(), want)
			}
		}
		// Others are not refused on alice's account, an admin included, who may ask for a
		// longer idle timeout.
		newSandbox(t, env, bob.Token, `{}`)
		if a := send(t, env, "POST", "/api/v1/sandboxes", env.AdminToken, "application/json", strings.NewReader(`{"idle_timeout": "24h"}`)); a.status != 201 {
			t.Fatalf("an admin's sandbox idle for up to 24h: %d %s", a.status, a.raw)
		}
	})
}
