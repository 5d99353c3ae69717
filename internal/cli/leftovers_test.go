package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestUploadLeftoversAfterSIGKILL kills `skrip serve` (SIGKILL) in the middle of an
// upload, on each blob store, checks that the kill left debris (a temp file, or chunks no
// object names), starts the server again and checks that the debris is gone at once,
// before the first janitor pass, while a file stored before the kill is intact.
func TestUploadLeftoversAfterSIGKILL(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	for _, backend := range []string{"fs", "nats"} {
		t.Run(backend, func(t *testing.T) {
			data := t.TempDir()
			const token = "skr_leftover-test-admin-token"
			stderr := &testutil.LockedBuffer{}
			start := func() (*exec.Cmd, *client.Client) {
				addr := testutil.FreeAddr(t)
				cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", data, "--runner", "bwrap", "--blob", backend)
				cmd.Env = append(os.Environ(), "SKRIP_BOOTSTRAP_ADMIN_TOKEN="+token, "SKRIP_NATS_URL=")
				stderr = &testutil.LockedBuffer{}
				cmd.Stderr = stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				testutil.WaitHealthy(t, "http://"+addr)
				c, _ := client.New("http://"+addr, token)
				return cmd, c
			}
			ctx := context.Background()
			first, c := start()
			if _, err := c.Upload(ctx, "kept.txt", strings.NewReader("kept bytes"), client.UploadOptions{Key: "files/kept.txt"}); err != nil {
				t.Fatal(err)
			}
			// An upload that sends 8 MiB and then stalls until the server dies.
			stall := make(chan struct{})
			defer close(stall)
			go c.Upload(ctx, "big.bin", io.MultiReader(io.LimitReader(rand.Reader, 8<<20), blockReader(stall)),
				client.UploadOptions{Key: "files/big.bin"})
			stored := func() int64 { return dirBytes(filepath.Join(data, "blobs", "tmp")) }
			if backend == "nats" {
				stored = func() int64 { return dirBytes(filepath.Join(data, "nats")) }
			}
			deadline := time.Now().Add(30 * time.Second)
			for stored() < 6<<20 {
				if time.Now().After(deadline) {
					t.Fatalf("the upload never reached the blob store (%d bytes); stderr:\n%s", stored(), stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			first.Process.Kill() // SIGKILL: no cleanup
			first.Wait()

			if n := leftovers(t, data, backend); n == 0 {
				t.Fatal("the kill left nothing behind; the test shows nothing")
			} else {
				t.Logf("the kill left %d leftovers", n)
			}
			second, c2 := start()
			var buf bytes.Buffer
			if _, err := c2.Download(ctx, "files/kept.txt", func(client.FileInfo) (io.Writer, error) { return &buf, nil }); err != nil || buf.String() != "kept bytes" {
				t.Fatalf("the file stored before the kill: %q, %v", buf.String(), err)
			}
			if _, err := c2.Download(ctx, "files/big.bin", func(client.FileInfo) (io.Writer, error) { return io.Discard, nil }); err == nil {
				t.Fatal("the interrupted upload is readable")
			}
			// The embedded NATS store opens in one process at a time: stop the server first.
			second.Process.Signal(syscall.SIGTERM)
			second.Wait()
			if n := leftovers(t, data, backend); n != 0 {
				t.Fatalf("%d leftovers remain after the restart; log:\n%s", n, stderr.String())
			}
			if !strings.Contains(stderr.String(), "removed leftovers of an earlier run of the server") {
				t.Errorf("the restart did not log what it removed:\n%s", stderr.String())
			}
		})
	}
}

// leftovers counts what an interrupted upload left in data's blob store: files in
// blobs/tmp and object files no pointer names (fs), or chunk subjects no object names
// (nats). The server must not be running.
func leftovers(t *testing.T, data, backend string) int {
	t.Helper()
	if backend == "fs" {
		tmp, err := os.ReadDir(filepath.Join(data, "blobs", "tmp"))
		if err != nil {
			t.Fatal(err)
		}
		named := map[string]bool{}
		filepath.WalkDir(filepath.Join(data, "blobs", "keys"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				var ptr struct{ Object string }
				if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &ptr) == nil {
					named[ptr.Object] = true
				}
			}
			return nil
		})
		objs, _ := os.ReadDir(filepath.Join(data, "blobs", "objects"))
		n := len(tmp)
		for _, o := range objs {
			if !named[o.Name()] {
				n++
			}
		}
		return n
	}
	srv, err := natsserver.Start(filepath.Join(data, "nats"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(ctx, "skrip-files")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	infos, err := obs.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Fatal(err)
	}
	for _, info := range infos {
		named["$O.skrip-files.C."+info.NUID] = true
	}
	stream, err := js.Stream(ctx, "OBJ_skrip-files")
	if err != nil {
		t.Fatal(err)
	}
	si, err := stream.Info(ctx, jetstream.WithSubjectFilter("$O.skrip-files.C.>"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for subj := range si.State.Subjects {
		if !named[subj] {
			n++
		}
	}
	return n
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// blockReader blocks until done closes, then reports an error.
type blockReader chan struct{}

func (b blockReader) Read([]byte) (int, error) {
	<-b
	return 0, errors.New("stalled upload given up")
}

const artifactTool = `
import os
def run_tool(input_dir, output_dir):
    open(os.path.join(output_dir, "a.txt"), "w").write("artifact")
    return ""  # None would fail the run, as on the original hub
`

// TestCleanupRemovesOrphanBlobs plants blobs under sessions/ and runs/ that no row refers
// to and checks that `skrip cleanup` removes them and says so, and keeps those a session
// set, a finished run or a run still running refers to.
func TestCleanupRemovesOrphanBlobs(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		ctx := context.Background()
		env := apptest.New(t, b)
		tool, v, err := env.Admin.CreateTool(ctx, "arts", "Arts", "", artifactTool, true)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := env.App.Store.UserByName(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		// A live session set.
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "in.txt"), []byte("session file"), 0o600)
		sk := store.SessionKey{ToolID: tool.ID, UserID: admin.ID, Context: "default"}
		if err := env.App.Sessions.Replace(ctx, sk, dir, []string{"in.txt"}); err != nil {
			t.Fatal(err)
		}
		live, _, err := env.App.Sessions.Files(ctx, sk)
		if err != nil || len(live) != 1 {
			t.Fatalf("session files: %+v, %v", live, err)
		}
		// A finished run with its artifact, and a run still running.
		done, err := env.Admin.RunFiles(ctx, "arts", nil, nil, time.Minute)
		if err != nil || len(done.Artifacts) != 1 {
			t.Fatalf("run: %+v, %v", done, err)
		}
		runningID := ids.New("r")
		now := time.Now()
		if err := env.App.Store.CreateRun(ctx, store.Run{ID: runningID, ToolID: tool.ID, VersionID: v.ID, UserID: admin.ID, Context: "default",
			Kind: "initial", Status: store.StatusRunning, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]",
			InputManifest: `{"files":[]}`, CreatedAt: now, StartedAt: &now}); err != nil {
			t.Fatal(err)
		}
		ctxDir := strings.Split(live[0].Key, "/")[3]
		orphans := []string{
			"sessions/" + tool.ID + "/" + admin.ID + "/" + ctxDir + "/s_01ORPHAN/000-lost.bin", // a set never recorded
			"runs/r_01GONE/output/0000-lost.bin",                                               // a run that is gone
			"runs/" + done.RunID + "/output/0009-lost.bin",                                     // not in its finished run's list
		}
		kept := []string{live[0].Key, "runs/" + runningID + "/output/0000-collecting.bin"}
		for _, k := range append(append([]string{}, orphans...), kept[1]) {
			if _, err := env.App.Blobs.Put(ctx, k, strings.NewReader("bytes"), blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}

		code, out, errOut := run(t, env, env.AdminToken, "", "cleanup")
		if code != 0 {
			t.Fatalf("cleanup: %d %s", code, errOut)
		}
		for _, want := range []string{`orphan session files +1 `, `orphan run artifacts +2 `, `blob store leftovers +0 `, `expired run artifacts +0 `} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("cleanup output lacks %q:\n%s", want, out)
			}
		}
		for _, k := range orphans {
			if _, err := env.App.Blobs.Stat(ctx, k); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("orphan %s survived the cleanup: %v", k, err)
			}
		}
		for _, k := range kept {
			if _, err := env.App.Blobs.Stat(ctx, k); err != nil {
				t.Errorf("%s was removed: %v", k, err)
			}
		}
		var buf bytes.Buffer
		if err := env.Admin.DownloadArtifact(ctx, done.Artifacts[0], &buf); err != nil || buf.String() != "artifact" {
			t.Fatalf("the finished run's artifact: %q, %v", buf.String(), err)
		}
	})
}

// TestRestartAfterSIGKILLMidRun: a server killed while a tool runs starts again. The
// bwrap runner's view held mounts of the run's input and output, which kept the run's
// scratch directories busy, and the restart failed with "device or resource busy".
func TestRestartAfterSIGKILLMidRun(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	data := t.TempDir()
	const token = "skr_restart-test-admin-token"
	// start starts the server and returns its client and a function that kills it.
	start := func() (*client.Client, func()) {
		addr := testutil.FreeAddr(t)
		cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", data, "--runner", "bwrap")
		cmd.Env = append(os.Environ(), "SKRIP_BOOTSTRAP_ADMIN_TOKEN="+token, "SKRIP_NATS_URL=", "SKRIP_DATABASE_URL=")
		if rootfs := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"); rootfs != "" {
			cmd.Env = append(cmd.Env, "SKRIP_BWRAP_ROOTFS="+rootfs)
		}
		stderr := &testutil.LockedBuffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		kill := func() { cmd.Process.Kill(); <-exited }
		t.Cleanup(kill)
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := http.Get("http://" + addr + "/healthz")
			if err == nil {
				resp.Body.Close()
				break
			}
			select {
			case <-exited:
				t.Fatalf("the server exited: %s", stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server did not start: %s", stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		c, _ := client.New("http://"+addr, token)
		return c, kill
	}
	ctx := context.Background()
	c, kill := start()
	if _, _, err := c.CreateTool(ctx, "sleep", "Sleep", "", "import time\ndef run_tool(i, o):\n    time.sleep(60)\n", true); err != nil {
		t.Fatal(err)
	}
	r, err := c.RunFiles(ctx, "sleep", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := c.GetRun(ctx, r.RunID, 0)
		if err == nil && got.Status == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never started: %+v, %v", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the sandbox is up, its mounts made
	kill()                             // SIGKILL: no cleanup
	c2, _ := start()
	got, err := c2.GetRun(ctx, r.RunID, 0)
	if err != nil || got.Status != "failed" || got.ErrorSummary == nil || !strings.Contains(*got.ErrorSummary, "interrupted") {
		t.Fatalf("the run the kill interrupted: %+v, %v", got, err)
	}
}
