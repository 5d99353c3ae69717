package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestOneServerPerDataDir starts a second server on a running server's data dir, on each
// blob store: it refuses to start, naming the directory and the first server's process,
// and the first goes on serving files and answering /readyz. On NATS the second used to
// start beside the first on the one embedded nats-server store, and stopping it broke
// the first.
func TestOneServerPerDataDir(t *testing.T) {
	apptest.EachOf(t, []apptest.Backend{{Name: "fs", Blob: "fs"}, {Name: "nats", Blob: "nats"}}, func(t *testing.T, b apptest.Backend) {
		ctx := context.Background()
		cfg := apptest.Config(t, b)
		env := apptest.Start(t, cfg)
		if _, err := env.Admin.Upload(ctx, "before.txt", strings.NewReader("before"), client.UploadOptions{Key: "files/before.txt"}); err != nil {
			t.Fatal(err)
		}

		second, err := app.New(ctx, cfg, quiet)
		if err == nil {
			second.Close()
			t.Fatal("a second server started on the data dir of a running one")
		}
		abs, _ := filepath.Abs(cfg.DataDir)
		for _, want := range []string{abs, "pid " + strconv.Itoa(os.Getpid()), "SKRIP_DATA_DIR"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal %q does not name %q", err, want)
			}
		}
		if !errors.Is(err, app.ErrDataDirInUse) {
			t.Errorf("the refusal is %v, not ErrDataDirInUse", err)
		}

		resp, err := http.Get(env.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the first server's /readyz is %d after the second was refused", resp.StatusCode)
		}
		if _, err := env.Admin.Upload(ctx, "after.txt", strings.NewReader("after"), client.UploadOptions{Key: "files/after.txt"}); err != nil {
			t.Fatalf("the first server no longer stores files: %v", err)
		}
		for key, want := range map[string]string{"files/before.txt": "before", "files/after.txt": "after"} {
			var got bytes.Buffer
			if _, err := env.Admin.Download(ctx, key, func(client.FileInfo) (io.Writer, error) { return &got, nil }); err != nil {
				t.Fatalf("reading %s from the first server: %v", key, err)
			}
			if got.String() != want {
				t.Fatalf("%s = %q, want %q", key, got.String(), want)
			}
		}

		// Once the first has stopped, a server starts on the data dir again.
		env.App.Close()
		again, err := app.New(ctx, cfg, quiet)
		if err != nil {
			t.Fatalf("a server on the data dir after the first stopped: %v", err)
		}
		again.Close()
	})
}

// TestDatabaseFileIsPrivate opens a server on a data dir that exists already (made by
// the operator, with a umask of 022): skrip.db and its -wal and -shm files are 0600, and
// so are the files of an earlier server that left them 0644.
func TestDatabaseFileIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, data string)
	}{
		{"existing empty data dir", func(t *testing.T, data string) {}},
		{"database left 0644", func(t *testing.T, data string) {
			for _, f := range []string{"skrip.db", "skrip.db-wal", "skrip.db-shm"} {
				if err := os.WriteFile(filepath.Join(data, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := apptest.Config(t, apptest.Backend{Blob: "fs"})
			if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, cfg.DataDir)
			env := apptest.Start(t, cfg)
			// A write, so that the -wal file holds something.
			if _, err := env.Admin.Upload(context.Background(), "x.txt", strings.NewReader("x"), client.UploadOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"skrip.db", "skrip.db-wal", "skrip.db-shm"} {
				info, err := os.Stat(filepath.Join(cfg.DataDir, f))
				if err != nil {
					t.Fatal(err)
				}
				if info.Mode().Perm() != 0o600 {
					t.Errorf("%s is %v, want -rw------- (0600)", f, info.Mode().Perm())
				}
			}
		})
	}
}

// TestOneWorkerPerDataDir starts a second `skrip worker` on a running worker's data dir:
// it is refused, naming the directory and the first, which would otherwise share its
// worker id and have its run inputs emptied under it by the second's start.
func TestOneWorkerPerDataDir(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	cfg := apptest.Config(t, apptest.Backend{Blob: "nats"})
	cfg.NATSURL, cfg.RunnerConcurrency = srv.ClientURL(), 1
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.RunWorker(ctx, cfg, listen(), quiet) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the first worker: %v", err)
		}
	}()
	// The first holds the lock once it has written itself into the lock file.
	lock := filepath.Join(cfg.DataDir, "skrip.lock")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, _ := os.ReadFile(lock); strings.Contains(string(b), "skrip worker") {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the first worker stopped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the first worker did not take the data dir's lock")
		}
		time.Sleep(50 * time.Millisecond)
	}
	err = app.RunWorker(context.Background(), cfg, listen(), quiet)
	if !errors.Is(err, app.ErrDataDirInUse) || !strings.Contains(err.Error(), "skrip worker, pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("a second worker on the data dir: %v, want ErrDataDirInUse naming the first", err)
	}
}
