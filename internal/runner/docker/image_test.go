package docker

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/testutil"
	"github.com/skrip-dev/skrip/internal/version"
)

func TestDefaultImage(t *testing.T) {
	tests := []struct{ version, want string }{
		{"0.1.0-dev", "skrip-runner:0.1.0-dev"},
		{"v1.2.3", "skrip-runner:v1.2.3"},
		{"v1.2.3+dirty", "skrip-runner:v1.2.3_dirty"},
		{".hidden", "skrip-runner:_hidden"},
	}
	saved := version.Version
	t.Cleanup(func() { version.Version = saved })
	for _, tt := range tests {
		version.Version = tt.version
		if got := DefaultImage(); got != tt.want {
			t.Errorf("DefaultImage() with version %q = %q, want %q", tt.version, got, tt.want)
		}
	}
}

func TestWriteTarKeepsTheTree(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(os.WriteFile(filepath.Join(root, "usr/bin/python3"), []byte("#!fake"), 0o755))
	must(os.Link(filepath.Join(root, "usr/bin/python3"), filepath.Join(root, "usr/bin/python3.11")))
	must(os.Symlink("usr/bin", filepath.Join(root, "bin")))
	must(os.Mkdir(filepath.Join(root, "tmp"), 0o755))
	must(os.Chmod(filepath.Join(root, "tmp"), os.ModeSticky|0o777))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	must(os.WriteFile(filepath.Join(root, rootfs.Marker), nil, 0o644))

	var buf bytes.Buffer
	must(imageWriteTar(context.Background(), root, &buf))
	got := map[string]*tar.Header{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(err)
		got[h.Name] = h
	}

	tests := []struct {
		name     string
		typeflag byte
		mode     int64
		link     string
	}{
		{"usr/", tar.TypeDir, 0o755, ""},
		{"usr/bin/python3", tar.TypeReg, 0o755, ""},
		{"usr/bin/python3.11", tar.TypeLink, 0o755, "usr/bin/python3"},
		{"bin", tar.TypeSymlink, 0o777, "usr/bin"},
		{"tmp/", tar.TypeDir, 0o1777, ""},
		{"fifo", tar.TypeFifo, 0o600, ""},
	}
	for _, tt := range tests {
		h, ok := got[tt.name]
		if !ok {
			t.Errorf("%s is missing from the tar", tt.name)
			continue
		}
		if h.Typeflag != tt.typeflag || h.Mode&0o7777 != tt.mode || h.Linkname != tt.link {
			t.Errorf("%s: type %c mode %o link %q, want %c %o %q", tt.name, h.Typeflag, h.Mode&0o7777, h.Linkname, tt.typeflag, tt.mode, tt.link)
		}
		if h.Uid != os.Getuid() || h.Uname != "" {
			t.Errorf("%s: uid %d uname %q, want %d and no name", tt.name, h.Uid, h.Uname, os.Getuid())
		}
	}
	if _, ok := got[rootfs.Marker]; ok {
		t.Errorf("the build marker %s went into the tar", rootfs.Marker)
	}
}

// TestRunnerImage builds (or reuses) the real rootfs, imports it under a throwaway tag and
// runs python3 with WeasyPrint in a container shaped like a run's.
func TestRunnerImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const install = "install Docker Engine (apt-get install docker.io) and start it"
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		testutil.Missing(t, "docker", err.Error(), install)
	}
	defer cli.Close()
	pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = cli.Ping(pingCtx, client.PingOptions{})
	pingCancel()
	if err != nil {
		testutil.Missing(t, "docker", err.Error(), install)
	}

	dir := cmp.Or(os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"), rootfs.DefaultDir)
	if st, err := rootfs.Inspect(dir); (err != nil || !st.Current()) && os.Geteuid() != 0 {
		testutil.Missing(t, "docker", "no runner rootfs of this recipe in "+dir+", and building one needs root",
			"run `sudo bash scripts/runner-image.sh` or set SKRIP_TEST_RUNNER_ROOTFS")
	}
	var log bytes.Buffer
	if err := rootfs.Build(ctx, dir, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}

	b := make([]byte, 6)
	rand.Read(b)
	ref := "skrip-runner:test-" + hex.EncodeToString(b)
	if ok, err := ImageExists(ctx, cli, ref); err != nil || ok {
		t.Fatalf("ImageExists(%s) before the import = %v, %v; want false, nil", ref, ok, err)
	}
	id, err := ImportImage(ctx, cli, dir, ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err != nil {
			t.Errorf("removing %s: %v", ref, err)
		}
	})
	if !strings.HasPrefix(id, "sha256:") {
		t.Errorf("image id %q, want sha256:…", id)
	}
	if ok, err := ImageExists(ctx, cli, ref); err != nil || !ok {
		t.Fatalf("ImageExists(%s) after the import = %v, %v; want true, nil", ref, ok, err)
	}

	img, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if img.Config == nil {
		t.Fatal("the image has no config")
	}
	for k, want := range map[string]string{"skrip.runner": "1", "skrip.version": version.Version, LabelRecipe: rootfs.Recipe()} {
		if got := img.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if img.Config.User != "65534:65534" || img.Config.WorkingDir != "/work" {
		t.Errorf("user %q workdir %q, want 65534:65534 and /work", img.Config.User, img.Config.WorkingDir)
	}

	code, logs := imageTestRun(ctx, t, cli, ref, "python3", "-c", "import weasyprint, os; assert os.getuid() == 65534")
	if code != 0 {
		t.Fatalf("python3 -c 'import weasyprint' exited %d:\n%s", code, logs)
	}
}

// imageTestRun runs cmd in a container of ref with no network, a read-only root and user
// 65534, and returns its exit code and output.
func imageTestRun(ctx context.Context, t *testing.T, cli *client.Client, ref string, cmd ...string) (int64, string) {
	t.Helper()
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: ref, Cmd: cmd, User: "65534:65534"},
		HostConfig: &container.HostConfig{
			NetworkMode:    "none",
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			Tmpfs:          map[string]string{"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	}()
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	var code int64
	select {
	case res := <-wait.Result:
		if res.Error != nil {
			t.Fatalf("waiting for the container: %s", res.Error.Message)
		}
		code = res.StatusCode
	case err := <-wait.Error:
		t.Fatalf("waiting for the container: %v", err)
	}
	var out bytes.Buffer
	if rc, err := cli.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true}); err == nil {
		if _, err := stdcopy.StdCopy(&out, &out, rc); err != nil && !errors.Is(err, io.EOF) {
			out.WriteString("(reading the logs: " + err.Error() + ")")
		}
		rc.Close()
	}
	return code, out.String()
}
