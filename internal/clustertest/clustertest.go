// Package clustertest runs skrip as a cluster on one machine for tests: hosts in network
// namespaces (package hosts) holding a 3-node NATS cluster, a PostgreSQL server, API
// nodes and workers, with faults (kill, partition) on any of them. Its tests run only
// with SKRIP_TEST_CLUSTER=1 (scripts/cluster-test.sh), as root.
package clustertest

import (
	"context"
	"fmt"
	"os"
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
// SKRIP_TEST_REQUIRE names "cluster": then that is a failure.
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
	return m.Run()
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
	if err != nil {
		testutil.Missing(t, Component, err.Error(), install)
	}
	reapAlso(t, n, logs)
	t.Cleanup(func() {
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

var natsBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// natsServer builds nats-server once per test binary.
func natsServer(t testing.TB) string {
	t.Helper()
	natsBin.once.Do(func() {
		natsBin.dir, natsBin.err = os.MkdirTemp("", "skrip-nats-server-")
		if natsBin.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		natsBin.path, natsBin.err = hosts.BuildNATSServer(ctx, natsBin.dir)
	})
	if natsBin.err != nil {
		t.Fatal(natsBin.err)
	}
	return natsBin.path
}

func reapAlso(t testing.TB, n *hosts.Network, path string) {
	t.Helper()
	if err := n.ReapAlso(path); err != nil {
		t.Fatal(err)
	}
}

// cleanup removes what the helpers keep between tests: the nats-server binary.
func cleanup() {
	if natsBin.dir != "" {
		os.RemoveAll(natsBin.dir)
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
	reapAlso(t, n, natsBin.dir)
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
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pg.Host.KillAll()
		os.RemoveAll(pg.DataDir)
	})
	return pg
}
