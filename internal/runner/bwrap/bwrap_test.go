package bwrap

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/runnertest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

func newRunner(t *testing.T) runner.Engine {
	t.Helper()
	r, err := New(Config{WorkDir: t.TempDir()}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if errors.Is(err, runner.ErrUnavailable) {
		testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap python3")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestConformance(t *testing.T) {
	runnertest.Run(t, func(t *testing.T) runner.Runner { return newRunner(t) })
}

func TestEnforcementNamesEveryLimit(t *testing.T) {
	r := newRunner(t)
	seen := map[string]bool{}
	for _, e := range r.Enforcement(runner.Limits{MemoryBytes: 1 << 30, Pids: 256, CPUs: 1}) {
		if e.How == "" {
			t.Errorf("%s: no description", e.Limit)
		}
		seen[e.Limit] = true
	}
	for _, l := range []string{"wall time", "memory", "pids", "cpu", "/tmp", "/work/output", "stdout/stderr", "network", "host uid", "system calls"} {
		if !seen[l] {
			t.Errorf("Enforcement does not mention %s", l)
		}
	}
}

// TestConformanceOnRootfs runs the suite with the Docker runner image's rootfs as the
// sandbox's root (SKRIP_BWRAP_ROOTFS): both runners can offer the very same environment.
func TestConformanceOnRootfs(t *testing.T) {
	rootfs := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if rootfs == "" {
		testutil.Missing(t, "docker", "SKRIP_TEST_RUNNER_ROOTFS is empty", "bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
	}
	runnertest.Run(t, func(t *testing.T) runner.Runner {
		r, err := New(Config{WorkDir: t.TempDir(), Rootfs: rootfs}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	})
}

// TestSandboxesOnRootfs runs the agent sandbox suite with the runner rootfs as the root,
// as the bwrap runner does by default once the rootfs is built.
func TestSandboxesOnRootfs(t *testing.T) {
	rootfs := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if rootfs == "" {
		testutil.Missing(t, "docker", "SKRIP_TEST_RUNNER_ROOTFS is empty", "bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
	}
	runnertest.RunSandboxes(t, func(t *testing.T) runner.Sandboxes {
		r, err := New(Config{WorkDir: t.TempDir(), Rootfs: rootfs}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	})
}

// TestRuntimeOnRootfs: a tool on the runner rootfs gets the runtime of docs/spec.md §5b (Python
// 3.13, WeasyPrint, pandoc, python-docx, openpyxl, pandas, pypdf, Jinja2, pypandoc,
// rsvg-convert, the fonts), under the sandbox's uid and seccomp filter.
func TestRuntimeOnRootfs(t *testing.T) {
	rootfs := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if rootfs == "" {
		testutil.Missing(t, "docker", "SKRIP_TEST_RUNNER_ROOTFS is empty", "bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
	}
	r, err := New(Config{WorkDir: t.TempDir(), Rootfs: rootfs}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	runnertest.RuntimePackages(t, r)
}

func TestSandboxes(t *testing.T) {
	runnertest.RunSandboxes(t, func(t *testing.T) runner.Sandboxes { return newRunner(t) })
}

// TestResolveIsBounded: every Lstat of resolve walks from the workspace's root, so a
// path far deeper than any real one is refused instead of walked.
func TestResolveIsBounded(t *testing.T) {
	r := newRunner(t)
	id := runnertest.NewBox(t, r, 16<<20)
	deep := strings.Repeat("d/", 200) + "f"
	if res := runnertest.Sh(t, r, id, "mkdir -p "+strings.TrimSuffix(deep, "/f")+" && echo x > "+deep); res.ExitCode != 0 {
		t.Fatalf("making a deep tree: %s", res.Stderr)
	}
	if _, _, err := r.ReadFile(context.Background(), id, deep); !errors.Is(err, runner.ErrPath) {
		t.Errorf("a 200-deep path: %v, want ErrPath", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := r.ReadFile(ctx, id, "d/d/f"); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled read: %v", err)
	}
}

// TestSandboxesNeedAMountedWorkspace: where the server cannot mount a workspace tmpfs of
// the quota (it is not root), a sandbox is refused with what to change, and nothing of
// it is left.
func TestSandboxesNeedAMountedWorkspace(t *testing.T) {
	r := newRunner(t).(*Runner)
	r.tmpfsOut = false
	err := r.CreateBox(context.Background(), runner.BoxSpec{ID: "sbt_nomount", Limits: runnertest.Limits(), WorkspaceBytes: 1 << 20})
	if !errors.Is(err, runner.ErrNoSandboxes) || !strings.Contains(err.Error(), "root") || !strings.Contains(err.Error(), "SKRIP_RUNNER=docker") {
		t.Fatalf("CreateBox without a mountable tmpfs: %v", err)
	}
	if boxes, err := r.Boxes(context.Background()); err != nil || len(boxes) != 0 {
		t.Errorf("Boxes = %v, %v", boxes, err)
	}
	if _, err := os.Stat(r.cfg.WorkDir + "/sandboxes/sbt_nomount"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused box left %v", err)
	}
}

// TestSandboxDirIsPrivate: what a sandbox leaves in its workspace is not reachable by
// other users of the host.
func TestSandboxDirIsPrivate(t *testing.T) {
	r := newRunner(t).(*Runner)
	runnertest.NewBox(t, r, 1<<20)
	fi, err := os.Stat(r.cfg.WorkDir + "/sandboxes")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("sandboxes dir is %v, want 0700", fi.Mode().Perm())
	}
}

// TestBoxesHandOverOldWorkspaces: a box whose workspace another uid owns (made before
// sandboxes ran as SKRIP_BWRAP_UID, or under another one) is handed to the sandbox's uid
// when the server lists its boxes at start, so its execs can still write.
func TestBoxesHandOverOldWorkspaces(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.Missing(t, "root", "sandboxes switch uid only when skrip runs as root", "run the tests as root")
	}
	r := newRunner(t).(*Runner)
	id := runnertest.NewBox(t, r, 1<<20)
	if _, err := r.WriteFile(context.Background(), id, "d/old.txt", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(r.cfg.WorkDir, "sandboxes", id, "workspace")
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error { return os.Lchown(p, 0, 0) })
	if res := runnertest.Sh(t, r, id, "echo new >> d/old.txt"); res.ExitCode == 0 {
		t.Fatal("the sandbox wrote to root's files: the setup is wrong")
	}
	if boxes, err := r.Boxes(context.Background()); err != nil || len(boxes) != 1 {
		t.Fatalf("Boxes = %v, %v", boxes, err)
	}
	if res := runnertest.Sh(t, r, id, "echo new >> d/old.txt && touch new.txt"); res.ExitCode != 0 {
		t.Fatalf("after Boxes, an exec still cannot write: %s", res.Stderr)
	}
}
