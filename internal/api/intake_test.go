package api_test

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// bytesUploaded is skrip_bytes_uploaded_total as /metrics shows it.
func bytesUploaded(t *testing.T, env *apptest.Env) float64 {
	t.Helper()
	resp, err := http.Get(env.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "skrip_bytes_uploaded_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("/metrics lacks skrip_bytes_uploaded_total")
	return 0
}

// TestIntakeEachWayIn (issue 31): the four ways a file is staged (POST and PUT
// /api/v1/files, a resumable upload, a sandbox's publish) read it by the one intake: the
// same type guessed from the name, the same refusal of a bad ttl, and each stored file
// counted in skrip_bytes_uploaded_total, a refused one not.
func TestIntakeEachWayIn(t *testing.T) {
	env := apptest.Start(t, apptest.Config(t, apptest.Backends[0]))
	alice, au := env.User(t, "alice", "user")
	ctx := context.Background()
	sb, err := alice.CreateSandbox(ctx, client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const content = "name,score\nada,3\n"
	if res, err := alice.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sh", "-c", "mkdir -p output && printf 'name,score\\nada,3\\n' > output/scores.csv"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %+v %v", res, err)
	}
	ways := []struct {
		name  string
		stage func(ttl string) (status int, raw, contentType string)
	}{
		{"POST /api/v1/files", func(ttl string) (int, string, string) {
			a := upload(t, env, au.Token, [][2]string{{"ttl", ttl}}, "scores.csv", []byte(content))
			ct, _ := a.body["content_type"].(string)
			return a.status, a.raw, ct
		}},
		{"PUT /api/v1/files", func(ttl string) (int, string, string) {
			a := send(t, env, "PUT", "/api/v1/files/files/put.csv?filename=scores.csv&ttl="+ttl, au.Token, "", strings.NewReader(content))
			ct, _ := a.body["content_type"].(string)
			return a.status, a.raw, ct
		}},
		{"resumable", func(ttl string) (int, string, string) {
			path, a := createUpload(t, env, au.Token, len(content), tusMeta("filename", "scores.csv", "ttl", ttl))
			if path == "" {
				return a.status, a.raw, ""
			}
			if a := patchUpload(t, env, au.Token, path, 0, []byte(content)); a.status != http.StatusNoContent {
				return a.status, a.raw, ""
			}
			a = send(t, env, "GET", path, au.Token, "", nil)
			file, _ := a.body["file"].(map[string]any)
			ct, _ := file["content_type"].(string)
			return http.StatusCreated, a.raw, ct
		}},
		{"publish", func(ttl string) (int, string, string) {
			a := send(t, env, "POST", "/api/v1/sandboxes/"+sb.SandboxID+"/publish", au.Token, "application/json",
				strings.NewReader(`{"source": "output/scores.csv", "ttl": "`+ttl+`"}`))
			ct, _ := a.body["content_type"].(string)
			if a.status == http.StatusOK {
				a.status = http.StatusCreated
			}
			return a.status, a.raw, ct
		}},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			before := bytesUploaded(t, env)
			status, raw, ct := w.stage("1h")
			if status != http.StatusCreated || ct != "text/csv; charset=utf-8" {
				t.Fatalf("staging scores.csv: %d %s (content type %q); want it stored as text/csv", status, raw, ct)
			}
			if got := bytesUploaded(t, env) - before; got != float64(len(content)) {
				t.Errorf("skrip_bytes_uploaded_total moved by %v, want %d", got, len(content))
			}
			before = bytesUploaded(t, env)
			status, raw, _ = w.stage("0")
			if status != http.StatusBadRequest || !strings.Contains(raw, `"code":"invalid_request"`) ||
				!strings.Contains(raw, `ttl \"0\" is not a positive duration such as 90m, 24h or 7d`) {
				t.Errorf("a ttl of 0: %d %s", status, raw)
			}
			if got := bytesUploaded(t, env) - before; got != 0 {
				t.Errorf("a refused file moved skrip_bytes_uploaded_total by %v", got)
			}
		})
	}
}

// TestSandboxStageChecksLargeFiles: a staged file larger than what Open reads ahead, whose
// stored bytes were changed in the middle, is refused when it is staged into a sandbox:
// the staging area's reader checks the checksum as the bytes pass, and the workspace
// never gets them.
func TestSandboxStageChecksLargeFiles(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	env := apptest.Start(t, cfg)
	if env.Config.Blob != "fs" {
		t.Fatalf("this test changes an object file on disk; the first backend is %s", env.Config.Blob)
	}
	ctx := context.Background()
	content := bytes.Repeat([]byte("0123456789abcdef"), 20<<10) // 320 KiB, past Open's 64 KiB
	f, err := env.Admin.Upload(ctx, "big.bin", bytes.NewReader(content), client.UploadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := env.Admin.CreateSandbox(ctx, client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var object string
	filepath.WalkDir(filepath.Join(cfg.DataDir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Equal(b, content) {
				object = p
			}
		}
		return nil
	})
	if object == "" {
		t.Fatal("no object file holds the uploaded bytes")
	}
	changed := bytes.Clone(content)
	changed[200<<10] ^= 1
	if err := os.WriteFile(object, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.StageFile(ctx, sb.SandboxID, f.FileKey, "input/big.bin"); err == nil {
		t.Fatal("staging a file whose bytes changed in the middle succeeded")
	}
	if res, err := env.Admin.Exec(ctx, sb.SandboxID, client.ExecRequest{Cmd: []string{"sh", "-c", "ls -A input 2>/dev/null; true"}}); err != nil || res.Stdout != "" {
		t.Errorf("the workspace after a refused stage holds %q (%v)", res.Stdout, err)
	}
}
