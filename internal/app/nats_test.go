package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestEmbeddedNATSHasNoListener opens a server on the embedded nats-server and checks
// that it added no listening socket: no other process can reach the stored files.
func TestEmbeddedNATSHasNoListener(t *testing.T) {
	before := map[string]bool{}
	for _, a := range testutil.TCPListeners(t) {
		before[a] = true
	}
	cfg := apptest.Config(t, apptest.Backend{Blob: "nats"})
	a, err := app.New(context.Background(), cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, addr := range testutil.TCPListeners(t) {
		if before[addr] {
			continue
		}
		t.Errorf("skrip with the embedded nats-server listens on %s", addr)
		if nc, err := nats.Connect("nats://"+addr, nats.Timeout(2*time.Second)); err == nil {
			nc.Close()
			t.Errorf("a plain nats.go client connected to %s without credentials", addr)
		}
	}
	if _, err := a.Blobs.Put(context.Background(), "files/x", strings.NewReader("x"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}

	bad := apptest.Config(t, apptest.Backend{Blob: "nats"})
	bad.NATSToken = "tok"
	if a2, err := app.New(context.Background(), bad, quiet); err == nil {
		a2.Close()
		t.Fatal("credentials without SKRIP_NATS_URL were accepted")
	} else if !strings.Contains(err.Error(), "SKRIP_NATS_URL") {
		t.Fatalf("error %q does not name SKRIP_NATS_URL", err)
	}
}

// TestExternalNATSWithPassword runs a separate nats-server (from the Go module, listening
// on loopback) that requires a user and password: skrip reaches it with the right
// settings and refuses to start with wrong ones, naming the settings.
func TestExternalNATSWithPassword(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		Username: "skrip", Password: "correct-horse", NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	cfg := apptest.Config(t, apptest.Backend{Blob: "nats"})
	cfg.NATSURL, cfg.NATSUser, cfg.NATSPassword = srv.ClientURL(), "skrip", "correct-horse"
	a, err := app.New(context.Background(), cfg, quiet)
	if err != nil {
		t.Fatalf("with the right password: %v", err)
	}
	// A staged file's object says what it is to a plain nats.go client of the same server.
	owner, err := a.Store.UserByName(context.Background(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	f, err := a.Files.Put(context.Background(), staging.Upload{OwnerID: owner.ID, Key: "files/report.csv", Name: "Report.csv",
		Body: strings.NewReader("a,b\n")})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	nc, err := nats.Connect(srv.ClientURL(), nats.UserInfo("skrip", "correct-horse"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	obs, err := js.ObjectStore(context.Background(), cfg.NATSBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := obs.GetInfo(context.Background(), f.BlobKey)
	if err != nil {
		t.Fatal(err)
	}
	if info.Metadata["skrip-file-key"] != "files/report.csv" || info.Metadata["skrip-owner"] != owner.ID || info.Metadata["skrip-name"] != "Report.csv" {
		t.Errorf("object metadata = %v", info.Metadata)
	}

	for name, pw := range map[string]string{"wrong password": "wrong", "no credentials": ""} {
		bad := cfg
		bad.DataDir = t.TempDir()
		bad.NATSUser, bad.NATSPassword = "skrip", pw
		if pw == "" {
			bad.NATSUser = ""
		}
		a, err := app.New(context.Background(), bad, quiet)
		if err == nil {
			a.Close()
			t.Fatalf("%s: skrip started", name)
		}
		if !strings.Contains(err.Error(), "SKRIP_NATS_USER") || strings.Contains(err.Error(), "correct-horse") {
			t.Errorf("%s: error %q does not name SKRIP_NATS_USER (or shows the password)", name, err)
		}
	}
}
