package cli

import (
	"github.com/skrip-dev/skrip/internal/testutil"

	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mobyclient "github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/runner/docker"
)

// TestServeWithDefaults starts `skrip serve` in an empty directory with no settings but a
// free port, as the README's first command does, and stops it with SIGTERM.
func TestServeWithDefaults(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	var stderr testutil.LockedBuffer
	cmd := exec.Command(bin, "serve", "--addr", addr)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /healthz answer within 10s; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, f := range []string{"skrip-data/skrip.db", "skrip-data/admin-token"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains(stderr.String(), "admin-token") {
		t.Errorf("stderr does not say where the admin token is:\n%s", stderr.String())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop within 15s of SIGTERM")
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("no shutdown line in the log:\n%s", stderr.String())
	}
	// The port is free again.
	if ln, err := net.Listen("tcp", addr); err != nil {
		t.Errorf("port still taken after shutdown: %v", err)
	} else {
		ln.Close()
	}
}

func TestServeRefusesABusyPort(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(bin, "serve", "--addr", ln.Addr().String(), "--data-dir", t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("cannot listen on %s", ln.Addr())) || !strings.Contains(string(out), "SKRIP_ADDR") {
		t.Fatalf("err = %v, output:\n%s", err, out)
	}
}

// TestServeRefusesWithoutSandbox hides bwrap from the server: it must not start, and must
// say what to install. There is no unsandboxed mode.
func TestServeRefusesWithoutSandbox(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	empty := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", testutil.FreeAddr(t), "--data-dir", t.TempDir())
	// No bwrap on PATH, and no Docker engine to reach.
	cmd.Env = []string{"PATH=" + empty, "HOME=" + empty, "DOCKER_HOST=unix://" + filepath.Join(empty, "no-docker.sock")}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("skrip serve started without any sandbox")
	}
	if !strings.Contains(string(out), "no sandbox for tool runs") || !strings.Contains(string(out), "apt-get install bubblewrap") ||
		!strings.Contains(string(out), "Docker engine does not answer") {
		t.Fatalf("output does not say what to install:\n%s", out)
	}
}

// TestDockerOrphansAfterSIGKILL kills `skrip serve` (SIGKILL) while a run's container is
// running, starts it again, and checks that no container of it is left and that the run
// is marked failed, "interrupted by server restart".
func TestDockerOrphansAfterSIGKILL(t *testing.T) {
	needDocker(t)
	bin := testutil.BuildSkrip(t)
	data := t.TempDir()
	const token = "skr_orphan-test-admin-token"
	start := func() (*exec.Cmd, *client.Client) {
		addr := testutil.FreeAddr(t)
		cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", data, "--runner", "docker")
		cmd.Env = append(os.Environ(), "SKRIP_BOOTSTRAP_ADMIN_TOKEN="+token)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		testutil.WaitHealthy(t, "http://"+addr)
		c, _ := client.New("http://"+addr, token)
		return cmd, c
	}
	ctx := context.Background()
	first, c := start()
	if _, _, err := c.CreateTool(ctx, "sleep", "Sleep", "", "import time\ndef run_tool(i, o):\n    time.sleep(60)\n", true); err != nil {
		t.Fatal(err)
	}
	r, err := c.RunFiles(ctx, "sleep", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := mobyclient.New(mobyclient.FromEnv, mobyclient.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	// This server's containers (a run may use a warm one, labelled with the server only).
	server, _ := filepath.Abs(data)
	containersOf := func() map[string]bool {
		list, err := dc.ContainerList(ctx, mobyclient.ContainerListOptions{All: true, Filters: make(mobyclient.Filters).Add("label", docker.LabelServer+"="+docker.ServerLabel(server))})
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, c := range list.Items {
			ids[c.ID] = true
		}
		return ids
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got, _ := c.GetRun(ctx, r.RunID, 0); got.Status == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never started")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	first.Process.Kill() // SIGKILL: no cleanup
	first.Wait()
	before := containersOf()
	if len(before) == 0 {
		t.Fatal("the containers went with the server; the test shows nothing")
	}
	second, c2 := start()
	defer func() { second.Process.Signal(syscall.SIGTERM); second.Wait() }()
	for id := range containersOf() {
		if before[id] {
			t.Fatalf("container %s of the killed server is still there after the restart", id)
		}
	}
	got, err := c2.GetRun(ctx, r.RunID, 0)
	if err != nil || got.Status != "failed" || got.ErrorSummary == nil || *got.ErrorSummary != "interrupted by server restart" {
		t.Fatalf("run after restart: %+v, %v", got, err)
	}
}

// TestSandboxesRefusedWithoutRoot runs `skrip serve` on bubblewrap as a user that is not
// root (uid 65534 when the test runs as root): it cannot mount a workspace tmpfs of the
// quota, so it refuses to create a sandbox with 503, no Retry-After (waiting will not
// help), and a message that says what to change, instead of keeping a workspace on the
// data disk that an exec could fill.
func TestSandboxesRefusedWithoutRoot(t *testing.T) {
	built := testutil.BuildSkrip(t)
	// A directory the unprivileged user can reach: t.TempDir's parents are root's alone.
	dir, err := os.MkdirTemp("", "skrip-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "skrip")
	b, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeAddr(t)
	const token = "skr_nonroot-admin-token-0123456789"
	var stderr testutil.LockedBuffer
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", data, "--runner", "bwrap")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SKRIP_BOOTSTRAP_ADMIN_TOKEN=" + token}
	cmd.Stderr = &stderr
	if os.Geteuid() == 0 {
		if err := os.Chown(data, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unprivileged server is not ready within 15s; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/sandboxes", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), `"unavailable"`) || !strings.Contains(string(body), "root") ||
		!strings.Contains(string(body), "SKRIP_RUNNER=docker") {
		t.Errorf("creating a sandbox without root: %d %s", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		t.Errorf("Retry-After %q on a refusal that waiting will not change", ra)
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "work", "bwrap", "sandboxes")); len(entries) != 0 {
		t.Errorf("the refused sandbox left %d entries on disk", len(entries))
	}
}
