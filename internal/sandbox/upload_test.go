package sandbox_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// stalledUpload is a PUT whose client sent its headers and part of its body, then
// stopped.
type stalledUpload struct {
	conn net.Conn
	rest []byte
}

// startUpload sends a PUT of body to path of sandbox id, but only its first sent bytes.
func startUpload(t *testing.T, env *apptest.Env, id, path string, body []byte, sent int) *stalledUpload {
	t.Helper()
	u, _ := url.Parse(env.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "PUT /api/v1/sandboxes/%s/fs/%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n",
		id, path, u.Host, env.AdminToken, len(body))
	if _, err := conn.Write(body[:sent]); err != nil {
		t.Fatal(err)
	}
	return &stalledUpload{conn: conn, rest: body[sent:]}
}

// finish sends the rest of the body and returns the answer.
func (u *stalledUpload) finish(t *testing.T) answer {
	t.Helper()
	u.conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := u.conn.Write(u.rest); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(u.conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	json.Unmarshal(b, &a.body)
	return a
}

// execOut runs cmd in sandbox id and returns its stdout; the exec must succeed within
// the minute send allows.
func execOut(t *testing.T, env *apptest.Env, id string, cmd ...string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"cmd": cmd, "timeout_s": 30})
	a := send(t, env, "POST", "/api/v1/sandboxes/"+id+"/exec", env.AdminToken, bytes.NewReader(b))
	if a.status != http.StatusOK || a.body["exit_code"] != 0.0 {
		t.Fatalf("exec %v: %d %s", cmd, a.status, a.raw)
	}
	out, _ := a.body["stdout"].(string)
	return out
}

// A client that sends half of an upload and stalls keeps no exec waiting; finished, the
// upload lands whole; abandoned, it leaves the file as it was and nothing half-written,
// in the workspace or on the server. Once on each runner.
func TestSlowUploadDoesNotBlockExecOnBwrap(t *testing.T) { testSlowUpload(t, "bwrap") }

func TestSlowUploadDoesNotBlockExecOnDocker(t *testing.T) { testSlowUpload(t, "docker") }

func testSlowUpload(t *testing.T, runnerName string) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.Runner = runnerName
	env := apptest.Start(t, cfg)
	a := createSandbox(t, env, `{}`)
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	id := a.body["sandbox_id"].(string)
	if a := send(t, env, "PUT", "/api/v1/sandboxes/"+id+"/fs/data.txt", env.AdminToken, strings.NewReader("old\n")); a.status != http.StatusCreated {
		t.Fatalf("put: %d %s", a.status, a.raw)
	}

	body := bytes.Repeat([]byte("new data\n"), 64<<10) // 576 KiB
	finished := startUpload(t, env, id, "data.txt", body, len(body)/2)
	abandoned := startUpload(t, env, id, "data.txt", body, len(body)/2)
	time.Sleep(time.Second) // both uploads reach the server and wait for their bodies

	// Two execs while the uploads stall: the file is still the old one.
	if out := execOut(t, env, id, "cat", "data.txt"); out != "old\n" {
		t.Fatalf("data.txt during the uploads holds %q", out)
	}
	execOut(t, env, id, "sh", "-c", "echo from-exec > made.txt")

	if a := finished.finish(t); a.status != http.StatusCreated || a.body["size_bytes"] != float64(len(body)) {
		t.Fatalf("the finished upload: %d %s", a.status, a.raw)
	}
	abandoned.conn.Close()
	waitNoSpool(t, filepath.Join(cfg.DataDir, "work", "sandbox-uploads"))

	if out := execOut(t, env, id, "sha256sum", "data.txt"); !strings.HasPrefix(out, sha(body)) {
		t.Errorf("data.txt after the uploads: %s, want the finished upload's %s", out, sha(body))
	}
	if out := execOut(t, env, id, "find", ".", "-name", ".skrip-partial-*"); out != "" {
		t.Errorf("half-written files are left in the workspace: %q", out)
	}
	if out := execOut(t, env, id, "cat", "made.txt"); out != "from-exec\n" {
		t.Errorf("made.txt holds %q", out)
	}

	// A stalled upload does not hold the sandbox for a delete either; it fails after.
	stalled := startUpload(t, env, id, "late.txt", body, len(body)/2)
	time.Sleep(500 * time.Millisecond)
	if a := send(t, env, "DELETE", "/api/v1/sandboxes/"+id, env.AdminToken, nil); a.status != http.StatusNoContent {
		t.Fatalf("delete during an upload: %d %s", a.status, a.raw)
	}
	if a := stalled.finish(t); a.status != http.StatusNotFound {
		t.Errorf("an upload into a sandbox deleted meanwhile: %d %s", a.status, a.raw)
	}
}

// waitNoSpool waits until no file descriptor of this process (the server's, in tests) is
// a spool file under dir: an abandoned upload's spool is closed once the server sees
// the client gone.
func waitNoSpool(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		open := 0
		fds, _ := os.ReadDir("/proc/self/fd")
		for _, fd := range fds {
			if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, dir+"/") {
				open++
			}
		}
		entries, _ := os.ReadDir(dir)
		if open == 0 && len(entries) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spool files still open and %d in %s 30s after the uploads ended", open, len(entries), dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The uploads under way into one sandbox hold at most its workspace quota: one more that
// does not fit beside them gets 503 with Retry-After, and a body over the quota 507.
func TestUploadsUnderWayStayWithinTheQuota(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.SandboxWorkspace = 1 << 20
	env := apptest.Start(t, cfg)
	a := createSandbox(t, env, `{}`)
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	id := a.body["sandbox_id"].(string)
	body := bytes.Repeat([]byte("x"), 768<<10)
	stalled := startUpload(t, env, id, "a.bin", body, len(body)-1)
	time.Sleep(time.Second)
	a = send(t, env, "PUT", "/api/v1/sandboxes/"+id+"/fs/b.bin", env.AdminToken, bytes.NewReader(body))
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" || !strings.Contains(a.errField("message"), "uploads under way") {
		t.Errorf("an upload past the quota beside another: %d %s", a.status, a.raw)
	}
	if a := stalled.finish(t); a.status != http.StatusCreated {
		t.Fatalf("the first upload: %d %s", a.status, a.raw)
	}
	a = send(t, env, "PUT", "/api/v1/sandboxes/"+id+"/fs/c.bin", env.AdminToken, bytes.NewReader(make([]byte, 1<<20+1)))
	if a.status != http.StatusInsufficientStorage || !strings.Contains(a.errField("message"), "does not fit") {
		t.Errorf("an upload over the quota: %d %s", a.status, a.raw)
	}
	if out := execOut(t, env, id, "ls", "-A"); out != "a.bin\n" {
		t.Errorf("the workspace holds %q, want only a.bin", out)
	}
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
