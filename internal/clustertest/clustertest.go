// Package clustertest runs skrip as a cluster on one machine for tests: hosts in network
// namespaces (package hosts) holding a 3-node NATS cluster, a PostgreSQL server, API
// nodes and workers, with faults (kill, partition) on any of them. Its tests run only
// with SKRIP_TEST_CLUSTER=1 (scripts/cluster-test.sh), as root.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/clustertest/hosts"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// Component is the name of the cluster harness in SKRIP_TEST_REQUIRE.
const Component = "cluster"

const install = "run as root with iproute2 and iptables: bash scripts/cluster-test.sh"

// Main is the TestMain of a package of cluster tests. Without SKRIP_TEST_CLUSTER=1 it
// runs nothing (a plain `go test ./...` leaves the cluster out), unless
// SKRIP_TEST_REQUIRE names "cluster": then that is a failure. Each request the tests
// send to an API node, and its answer, is held to the OpenAPI document (checkOpenAPI).
//
//	func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }
func Main(m *testing.M) int {
	if os.Getenv("SKRIP_TEST_CLUSTER") != "1" {
		if testutil.Required(Component) {
			fmt.Fprintln(os.Stderr, "cluster tests are required (SKRIP_TEST_REQUIRE) but SKRIP_TEST_CLUSTER is not 1")
			return 1
		}
		fmt.Println("cluster tests skipped: set SKRIP_TEST_CLUSTER=1 (" + install + ")")
		return 0
	}
	defer cleanup()
	if err := checkOpenAPI(); err != nil {
		fmt.Fprintln(os.Stderr, "the OpenAPI document:", err)
		return 1
	}
	code := m.Run()
	if leftMismatches() && code == 0 {
		code = 1
	}
	return code
}

// Network makes a bridge for the test's hosts, removed when the test ends. When the test
// failed, the cleanup first logs the tail of every process's log.
func Network(t testing.TB) *hosts.Network {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.Missing(t, Component, "not root", install)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logs := t.TempDir()
	n, err := hosts.New(ctx, logs)
	if errors.Is(err, hosts.ErrUnavailable) {
		testutil.Missing(t, Component, err.Error(), install)
	}
	if err != nil {
		t.Fatal(err)
	}
	reapAlso(t, n, logs)
	t.Cleanup(func() {
		reportMismatches(t)
		if t.Failed() {
			for _, h := range n.Hosts() {
				for _, p := range h.Procs() {
					t.Logf("--- %s on %s (%s), last lines:\n%s", p.Cmd.Name, h.Name, p.LogPath, p.Log(3000))
				}
			}
		}
		if err := n.Close(); err != nil {
			t.Errorf("removing the network: %v", err)
		}
	})
	return n
}

// Host adds host name to n (hosts.Network.AddHost), failing the test if it cannot.
func Host(t testing.TB, n *hosts.Network, name string) *hosts.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := n.AddHost(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Start runs c on h (hosts.Host.Start), failing the test if it cannot. The network's
// cleanup kills it; a failed test logs the end of its output.
func Start(t testing.TB, h *hosts.Host, c hosts.Command) *hosts.Proc {
	t.Helper()
	p, err := h.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// bins holds the binaries the helpers build, once per test binary, in one temp dir.
var bins struct {
	mu    sync.Mutex
	dir   string
	built map[string]string // package → binary
}

// build compiles pkg once per test binary, without -race (the nodes are not what is
// checked for races, and a race build takes long on 2 cores), and returns its path.
func build(t testing.TB, pkg, name string) string {
	t.Helper()
	bins.mu.Lock()
	defer bins.mu.Unlock()
	if bin, ok := bins.built[pkg]; ok {
		return bin
	}
	if bins.dir == "" {
		dir, err := os.MkdirTemp("", "skrip-clustertest-bin-")
		if err != nil {
			t.Fatal(err)
		}
		bins.dir, bins.built = dir, map[string]string{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(bins.dir, name)
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	bins.built[pkg] = bin
	return bin
}

// Skrip returns the skrip binary, built once per test binary.
func Skrip(t testing.TB) string {
	t.Helper()
	return build(t, "github.com/skrip-dev/skrip/cmd/skrip", "skrip")
}

// natsServer returns the nats-server binary of the module skrip depends on.
func natsServer(t testing.TB) string {
	t.Helper()
	return build(t, hosts.NATSServerPackage, "nats-server")
}

func reapAlso(t testing.TB, n *hosts.Network, path string) {
	t.Helper()
	if err := n.ReapAlso(path); err != nil {
		t.Fatal(err)
	}
}

// cleanup removes what the helpers keep between tests: the binaries.
func cleanup() {
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
}

// NATS starts a 3-node NATS cluster with JetStream on hosts n1, n2, n3 of n, with users
// (none: no authorization) and the workers' permissions for buckets skrip-work and
// skrip-files. It returns once every node is healthy; the network's cleanup stops it.
func NATS(t testing.TB, n *hosts.Network, users ...natsserver.User) *hosts.NATS {
	t.Helper()
	bin := natsServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reapAlso(t, n, bins.dir)
	store := t.TempDir()
	reapAlso(t, n, store)
	c, err := hosts.StartNATS(ctx, n, store, hosts.NATSOptions{Bin: bin, Users: users})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Postgres starts a PostgreSQL server of its own on host db of n, with role and
// database skrip (Postgres.URL), stopped and removed when the test ends.
func Postgres(t testing.TB, n *hosts.Network) *hosts.Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pg, err := hosts.StartPostgres(ctx, n, os.TempDir())
	if errors.Is(err, hosts.ErrUnavailable) {
		testutil.Missing(t, Component, err.Error(), install)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pg.Host.KillAll()
		os.RemoveAll(pg.DataDir)
	})
	return pg
}
