package api_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mobyclient "github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// notReady checks that /readyz answers 503 with the error of docs/spec.md §3 naming the runner,
// and nothing of why (that is for the log).
func notReady(t *testing.T, env *apptest.Env, secret string) {
	t.Helper()
	a := call(t, env, "GET", "/readyz", "", nil)
	e, _ := a.body["error"].(map[string]any)
	details, _ := e["details"].(map[string]any)
	checks, _ := a.body["checks"].(map[string]any)
	if a.status != 503 || a.errCode() != "unavailable" || !strings.Contains(a.errMessage(), "runner") ||
		fmt.Sprint(details["not_ready"]) != "[runner]" || checks["database"] != "ok" || checks["runner"] == "ok" {
		t.Fatalf("readyz with a broken runner: %d %s", a.status, a.raw)
	}
	if strings.Contains(a.raw, secret) {
		t.Fatalf("readyz tells anyone what is broken (%s): %s", secret, a.raw)
	}
}

// TestReadyzChecksTheRunner breaks the runner under a running server: /readyz answers
// 503 naming the runner (docs/spec.md §10), not only when the database or the blob store fail.
func TestReadyzChecksTheRunner(t *testing.T) {
	t.Run("bwrap", func(t *testing.T) {
		bw, err := exec.LookPath("bwrap")
		if err != nil {
			testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap")
		}
		// The server finds bwrap in a directory of the test's, which then loses it.
		// The sandbox uid starts bwrap, so it must be able to reach the directory.
		dir := t.TempDir()
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(bw)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bwrap"), b, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		env := apptest.Start(t, apptest.Config(t, apptest.Backends[0]))
		os.Remove(filepath.Join(dir, "bwrap"))
		notReady(t, env, dir)
	})
	t.Run("docker", func(t *testing.T) {
		dc, err := mobyclient.New(mobyclient.FromEnv, mobyclient.WithAPIVersionNegotiation())
		if err != nil {
			testutil.Missing(t, "docker", err.Error(), "install the Docker engine")
		}
		defer dc.Close()
		// The server's image is a tag of the runner image's own, which then goes.
		b := make([]byte, 4)
		rand.Read(b)
		tag := "skrip-runner-readyz:" + hex.EncodeToString(b)
		ctx := context.Background()
		if _, err := dc.ImageTag(ctx, mobyclient.ImageTagOptions{Source: docker.DefaultImage(), Target: tag}); err != nil {
			testutil.Missing(t, "docker", err.Error(), "a running Docker engine and `skrip runner-image build`")
		}
		untag := func() { dc.ImageRemove(ctx, tag, mobyclient.ImageRemoveOptions{}) }
		defer untag()
		cfg := apptest.Config(t, apptest.Backends[0])
		cfg.Runner, cfg.RunnerImage, cfg.RunnerConcurrency = "docker", tag, 1
		env := apptest.Start(t, cfg)
		untag()
		notReady(t, env, tag)
	})
}
