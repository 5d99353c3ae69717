package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestRunnerImageBuildFollowsTheRecipe: `skrip runner-image build` imports an image once,
// leaves it alone while it comes from the rootfs's recipe, and imports it again when the
// image under the tag was made from another recipe.
func TestRunnerImageBuildFollowsTheRecipe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		testutil.Missing(t, "docker", err.Error(), "install Docker Engine and start it")
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		testutil.Missing(t, "docker", err.Error(), "install Docker Engine and start it")
	}
	// Trees of a file each: enough for an import; the build step sees the current
	// recipe's marker and does nothing.
	fake := func(recipe string) string {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "usr/bin"), 0o755)
		os.WriteFile(filepath.Join(dir, "usr/bin/python3"), []byte("#!fake"), 0o755)
		os.WriteFile(filepath.Join(dir, rootfs.Marker), []byte("recipe="+recipe+"\ndebian=13\n"), 0o644)
		return dir
	}
	current, old := fake(rootfs.Recipe()), fake("0123456789abcdef")
	b := make([]byte, 6)
	rand.Read(b)
	tag := "skrip-runner:test-recipe-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		cli.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	build := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		code := Main(ctx, []string{"runner-image", "build", "--rootfs", current, "--tag", tag}, strings.NewReader(""), &out, &errOut,
			func(k string) string { return map[string]string{"SKRIP_DATA_DIR": t.TempDir()}[k] })
		if code != 0 {
			t.Fatalf("runner-image build: %d %s", code, errOut.String())
		}
		return out.String()
	}
	if out := build(); !strings.Contains(out, "image    "+tag+" (imported, sha256:") || !strings.Contains(out, "already built") {
		t.Errorf("first build:\n%s", out)
	}
	if out := build(); !strings.Contains(out, "(exists, from this rootfs's recipe") {
		t.Errorf("second build:\n%s", out)
	}
	if _, err := docker.ImportImage(ctx, cli, old, tag); err != nil {
		t.Fatal(err)
	}
	if got, err := docker.ImageRecipe(ctx, cli, tag); err != nil || got != "0123456789abcdef" {
		t.Fatalf("the old image's recipe: %q, %v", got, err)
	}
	if out := build(); !strings.Contains(out, "(imported again: the image was from another recipe") {
		t.Errorf("build over an image of another recipe:\n%s", out)
	}
	if got, err := docker.ImageRecipe(ctx, cli, tag); err != nil || got != rootfs.Recipe() {
		t.Errorf("the image's recipe after the build: %q, %v; want %s", got, err, rootfs.Recipe())
	}
}
