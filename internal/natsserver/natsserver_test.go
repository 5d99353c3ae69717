package natsserver

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/testutil"
)

func TestStartConnectState(t *testing.T) {
	dir := t.TempDir()
	srv, err := Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	listening, err := Start(t.TempDir(), WithListen("127.0.0.1", -1))
	if err != nil {
		t.Fatal(err)
	}
	defer listening.Shutdown()
	if !strings.HasPrefix(listening.ClientURL(), "nats://127.0.0.1:") {
		t.Errorf("ClientURL = %q, want nats://127.0.0.1:<port>", listening.ClientURL())
	}

	connect := map[string]func() (*nats.Conn, error){
		"tcp with WithListen": func() (*nats.Conn, error) { return nats.Connect(listening.ClientURL()) },
		"in-process":          func() (*nats.Conn, error) { return srv.Connect() },
	}
	for name, dial := range connect {
		t.Run(name, func(t *testing.T) {
			nc, err := dial()
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			bucket := "kv_" + strings.NewReplacer("-", "_", " ", "_").Replace(name)
			if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket}); err != nil {
				t.Fatal(err)
			}
			state, err := JetStreamState(ctx, js)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"streams=", "consumers=", "storage=", "memory="} {
				if !strings.Contains(state, want) {
					t.Errorf("JetStreamState = %q, missing %q", state, want)
				}
			}
		})
	}
	// The JetStream store lives under dir.
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Errorf("no JetStream store under %s: %v", dir, err)
	}
}

// TestEmbeddedServerUnreachable checks that the embedded server opens no port: another
// process (here a plain nats.go client dialling every new listening socket) cannot reach
// it, and only Connect, in-process, can.
func TestEmbeddedServerUnreachable(t *testing.T) {
	before := map[string]bool{}
	for _, a := range testutil.TCPListeners(t) {
		before[a] = true
	}
	srv, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	for _, addr := range testutil.TCPListeners(t) {
		if before[addr] {
			continue
		}
		t.Errorf("the embedded server listens on %s", addr)
		if nc, err := nats.Connect("nats://"+addr, nats.Timeout(2*time.Second)); err == nil {
			nc.Close()
			t.Errorf("a plain nats.go client connected to the embedded server at %s without credentials", addr)
		}
	}
	if u := srv.ClientURL(); u != "" {
		t.Errorf("ClientURL = %q, want empty: there is no listener", u)
	}
	nc, err := srv.Connect()
	if err != nil {
		t.Fatalf("in-process connection: %v", err)
	}
	defer nc.Close()
	if _, err := jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
}

func TestStartErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"empty": "", "file": file} {
		t.Run(name, func(t *testing.T) {
			srv, err := Start(dir)
			if err == nil {
				srv.Shutdown()
				t.Fatalf("Start(%q) succeeded", dir)
			}
		})
	}
}

func TestLogger(t *testing.T) {
	var buf testutil.LockedBuffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := Start(t.TempDir(), WithLogger(l))
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	if !strings.Contains(buf.String(), "component=nats-server") {
		t.Fatalf("logger got nothing from the server: %q", buf.String())
	}
}

func TestFormatBytes(t *testing.T) {
	cases := []struct {
		n    uint64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{5 << 20, "5.0 MiB"},
		{3 << 30, "3.0 GiB"},
	}
	for _, c := range cases {
		if got := formatBytes(c.n); got != c.want {
			t.Errorf("formatBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
