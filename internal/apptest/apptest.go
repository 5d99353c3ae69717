// Package apptest starts a whole skrip server in-process for tests, on a fresh data dir,
// with the database chosen by the test (SQLite or a fresh PostgreSQL schema).
package apptest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// Env is a running test server.
type Env struct {
	URL        string
	AdminToken string
	App        *app.App
	Config     config.Config
	Admin      *client.Client
}

// Backend names the database and the blob store a test server uses.
type Backend struct {
	Name     string
	Postgres bool
	Blob     string // "fs" or "nats" (an embedded nats-server in the data dir)
	// Cluster runs the server as a cluster's API node on a nats-server of the test's
	// own, with PostgreSQL: runs go through the JetStream queue to its in-process worker
	// (docs/cluster.md).
	Cluster bool
}

// Backends are the databases every API test runs on.
var Backends = []Backend{{Name: "sqlite", Blob: "fs"}, {Name: "postgres", Postgres: true, Blob: "fs"}}

// BlobBackends are the combinations file tests run on: each blob store and each database.
var BlobBackends = []Backend{{Name: "sqlite+fs", Blob: "fs"}, {Name: "postgres+nats", Postgres: true, Blob: "nats"}}

// ClusterBackend is a cluster's API node with its own worker: PostgreSQL, a separate
// nats-server, runs through the queue.
var ClusterBackend = Backend{Name: "cluster", Postgres: true, Blob: "nats", Cluster: true}

// Each runs fn as a subtest once per database.
func Each(t *testing.T, fn func(t *testing.T, b Backend)) {
	EachOf(t, Backends, fn)
}

// EachOf runs fn as a subtest once per backend in bs.
func EachOf(t *testing.T, bs []Backend, fn func(t *testing.T, b Backend)) {
	for _, b := range bs {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// Config returns settings for a fresh server on backend b: every default, a temp data dir
// and a bootstrap admin token.
func Config(t testing.TB, b Backend) config.Config {
	t.Helper()
	loaded, err := config.Load(nilFlags(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg := loaded.Config
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.BootstrapAdminToken = "skr_test-admin-token-0123456789"
	cfg.ShutdownGrace = 5 * time.Second
	// API tests run on bubblewrap; the Docker runner has its own suite and end-to-end
	// tests, which set Runner themselves.
	cfg.Runner = "bwrap"
	if b.Blob != "" {
		cfg.Blob = b.Blob
	}
	if b.Postgres {
		cfg.DatabaseURL = testutil.PostgresURL(t)
	}
	if b.Cluster {
		cfg.NATSURL = testutil.NATSServer(t)
		cfg.RunAckWait = 3 * time.Second
	}
	return cfg
}

// Start runs a server with cfg until the test ends. Every error answer it gives must be
// the JSON of docs/spec.md §3 (HTML for the web UI's pages) and name no internal object, or the
// test fails (errorCheck).
func Start(t testing.TB, cfg config.Config) *Env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return StartOn(t, cfg, ln)
}

// StartOn is Start on a listener of the test's, for a server whose address must be
// known before it starts (SKRIP_PUBLIC_URL, a sign-on provider's redirect URI).
func StartOn(t testing.TB, cfg config.Config, ln net.Listener) *Env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("SKRIP_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, log)
	if errors.Is(err, runner.ErrUnavailable) {
		cancel()
		if cfg.Runner == "docker" {
			testutil.Missing(t, "docker", err.Error(), "install the Docker engine, then: skrip runner-image build")
		}
		testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap python3")
	}
	if err != nil {
		cancel()
		ln.Close()
		t.Fatal(err)
	}
	a.Handler = errorCheck(t, cfg.DataDir, a.Handler)
	a.Handler = openAPICheck(t, a.Handler)
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	t.Cleanup(func() {
		// Sandboxes outlive a server on purpose; a test's must not outlive the test
		// (their workspaces are mounts inside its temp dir).
		// (A test that closed its server itself has nothing left to destroy with.)
		if a.Store.Ping(context.Background()) == nil {
			if err := a.Sandboxes.DestroyAll(context.Background()); err != nil {
				t.Errorf("destroying the test's sandboxes: %v", err)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		a.Close()
	})
	env := &Env{URL: "http://" + ln.Addr().String(), AdminToken: cfg.BootstrapAdminToken, App: a, Config: cfg}
	env.Admin = env.Client(t, cfg.BootstrapAdminToken)
	return env
}

// New starts a fresh server on backend b.
func New(t testing.TB, b Backend) *Env {
	t.Helper()
	return Start(t, Config(t, b))
}

// Metric returns the value of one sample line of the server's /metrics (its name with
// any labels, as printed), 0 when it is absent.
func (e *Env) Metric(t testing.TB, sample string) float64 {
	t.Helper()
	resp, err := http.Get(e.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	return 0
}

// Client returns an API client of env with token.
func (e *Env) Client(t testing.TB, token string) *client.Client {
	t.Helper()
	c, err := client.New(e.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// User creates a user with role and returns a client holding its token.
func (e *Env) User(t testing.TB, name, role string) (*client.Client, client.CreatedUser) {
	t.Helper()
	u, err := e.Admin.CreateUser(context.Background(), name, role, "")
	if err != nil {
		t.Fatal(err)
	}
	return e.Client(t, u.Token), u
}
