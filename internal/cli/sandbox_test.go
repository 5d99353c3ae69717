package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// The PRD's flow (docs/seeds/004_35d1a989333778f8.txt): upload a CSV, create a sandbox,
// stage the CSV into it, run a Python transform, publish the result and download it; then
// a 50 MB file published out keeps its checksum. Once on each runner.
func TestSandboxFlowOnBwrap(t *testing.T) { testSandboxFlow(t, "bwrap") }

func TestSandboxFlowOnDocker(t *testing.T) {
	needDocker(t)
	testSandboxFlow(t, "docker")
}

const transform = `import csv, os
rows = list(csv.DictReader(open("input/data.csv")))
os.makedirs("output", exist_ok=True)
with open("output/result.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["name", "score", "passed"])
    for r in rows:
        w.writerow([r["name"], r["score"], "yes" if int(r["score"]) >= 3 else "no"])
print("rows", len(rows))
`

func testSandboxFlow(t *testing.T, runnerName string) {
	cfg := apptest.Config(t, apptest.BlobBackends[0])
	cfg.Runner = runnerName
	env := apptest.Start(t, cfg)
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "data.csv")
	if err := os.WriteFile(csvPath, []byte("name,score\nada,3\nbob,5\ncia,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(wantCode int, args ...string) string {
		t.Helper()
		code, out, errOut := run(t, env, env.AdminToken, "", args...)
		if code != wantCode {
			t.Fatalf("skrip %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
		return out
	}

	// 1. upload a CSV
	var up struct {
		FileKey string `json:"file_key"`
	}
	if err := json.Unmarshal([]byte(cli(0, "files", "upload", csvPath, "--json")), &up); err != nil || up.FileKey == "" {
		t.Fatalf("upload: %v", err)
	}
	// 2. create a sandbox
	id := strings.TrimSpace(cli(0, "sandbox", "create", "--idle-timeout", "30m"))
	if !strings.HasPrefix(id, "sb_") {
		t.Fatalf("sandbox create printed %q", id)
	}
	if ls := cli(0, "sandbox", "ls"); !strings.Contains(ls, id) || !strings.Contains(ls, runnerName) {
		t.Errorf("sandbox ls:\n%s", ls)
	}
	// 3. stage the CSV
	if out := cli(0, "sandbox", "stage", id, up.FileKey, "input/data.csv"); !strings.Contains(out, "/workspace/input/data.csv") {
		t.Errorf("stage printed %q", out)
	}
	// 4. exec a Python transform
	if out := cli(0, "sandbox", "exec", id, "--", "python3", "-c", transform); out != "rows 3\n" {
		t.Errorf("exec printed %q", out)
	}
	// 5. publish the result
	key := strings.TrimSpace(cli(0, "sandbox", "publish", id, "output/result.csv"))
	if !strings.HasPrefix(key, "files/f_") {
		t.Fatalf("publish printed %q", key)
	}
	// 6. download it and compare
	got := filepath.Join(dir, "result.csv")
	cli(0, "files", "download", key, "-o", got)
	b, err := os.ReadFile(got)
	if want := "name,score,passed\r\nada,3,yes\r\nbob,5,yes\r\ncia,1,no\r\n"; err != nil || string(b) != want {
		t.Fatalf("the downloaded result is %q (%v), want %q", b, err, want)
	}

	// The command's exit code is the CLI's, and its output goes where it belongs.
	code, out, errOut := run(t, env, env.AdminToken, "", "sandbox", "exec", id, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if code != 3 || out != "out\n" || !strings.HasPrefix(errOut, "err\n") {
		t.Errorf("exit 3: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, env, env.AdminToken, "", "sandbox", "exec", "--timeout", "1s", id, "--", "sleep", "30")
	if code == 0 || !strings.Contains(errOut, "timed out") {
		t.Errorf("a timed-out exec: code %d, stderr %q", code, errOut)
	}
	code, out, errOut = run(t, env, env.AdminToken, "hello from stdin", "sandbox", "exec", "--stdin", "-", id, "--", "cat")
	if code != 0 || out != "hello from stdin" {
		t.Errorf("exec with stdin: %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A 50 MB file published out of the sandbox keeps its exact checksum.
	inside := cli(0, "sandbox", "exec", id, "--", "sh", "-c", "head -c 50000000 /dev/urandom > big.bin && sha256sum big.bin")
	sumInside, _, _ := strings.Cut(inside, " ")
	var pub struct {
		FileKey   string `json:"file_key"`
		SizeBytes int64  `json:"size_bytes"`
		Checksum  string `json:"checksum"`
	}
	if err := json.Unmarshal([]byte(cli(0, "sandbox", "publish", id, "big.bin", "--json")), &pub); err != nil {
		t.Fatal(err)
	}
	if pub.SizeBytes != 50000000 || pub.Checksum != "sha256:"+sumInside {
		t.Errorf("published %d bytes with %s; the sandbox's file has sha256 %s", pub.SizeBytes, pub.Checksum, sumInside)
	}
	big := filepath.Join(dir, "big.bin")
	cli(0, "files", "download", pub.FileKey, "-o", big)
	f, err := os.Open(big)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, _ := io.Copy(h, f)
	f.Close()
	if n != 50000000 || hex.EncodeToString(h.Sum(nil)) != sumInside {
		t.Errorf("downloaded %d bytes with sha256 %x, want 50000000 with %s", n, h.Sum(nil), sumInside)
	}
	// Staged back in, it is the same file again.
	cli(0, "sandbox", "stage", id, pub.FileKey, "copy/big.bin")
	if out := cli(0, "sandbox", "exec", id, "--", "sha256sum", "copy/big.bin"); !strings.HasPrefix(out, sumInside+" ") {
		t.Errorf("staged back: %q", out)
	}

	if out := cli(0, "sandbox", "rm", id); !strings.Contains(out, "Destroyed "+id) {
		t.Errorf("rm printed %q", out)
	}
	if code, _, errOut := run(t, env, env.AdminToken, "", "sandbox", "exec", id, "--", "true"); code == 0 || !strings.Contains(errOut, "not found") {
		t.Errorf("exec after rm: %d %q", code, errOut)
	}
	if boxes, _ := env.App.Runner.Boxes(t.Context()); len(boxes) != 0 {
		t.Errorf("the %s runner still holds %v", runnerName, boxes)
	}
}

// TestSandboxExecStreamsOnATerminal runs the real binary on a terminal (script(1) gives
// it one): a line the command prints comes out while the command still runs.
func TestSandboxExecStreamsOnATerminal(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatal("script(1) is missing; it is in Debian's essential bsdutils")
	}
	bin := testutil.BuildSkrip(t)
	env := apptest.New(t, apptest.Backends[0])
	sb, err := env.Admin.CreateSandbox(t.Context(), client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("%s --server %s --token %s sandbox exec %s -- sh -c 'echo one; sleep 2; echo two; exit 4'", bin, env.URL, env.AdminToken, sb.SandboxID)
	cmd := exec.Command(scriptBin, "-q", "-e", "-c", line, "/dev/null")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]time.Time{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l == "one" || l == "two" {
			seen[l] = time.Now()
		}
	}
	err = cmd.Wait()
	if seen["one"].IsZero() || seen["two"].IsZero() {
		t.Fatalf("the terminal showed %v", seen)
	}
	if gap := seen["two"].Sub(seen["one"]); gap < time.Second {
		t.Errorf("\"one\" came only %s before \"two\": the output was not streamed", gap)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Errorf("exit: %v, want the command's 4", err)
	}
}
