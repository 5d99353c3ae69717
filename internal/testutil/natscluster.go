package testutil

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSCluster is a JetStream cluster of nats-servers from the Go module, routed on
// loopback. Its nodes are named n0, n1, …; each keeps its ports and store dir across Stop
// (or Kill) and Start, so a restarted node rejoins with its data.
type NATSCluster struct {
	t     testing.TB
	bin   string // the nats-server binary the nodes run as processes; "" runs them in this process
	mu    sync.Mutex
	nodes []*clusterNode
}

type clusterNode struct {
	name     string
	port     int // client port
	cport    int // cluster (route) port
	storeDir string
	srv      *server.Server // a running in-process node
	cmd      *exec.Cmd      // a running process
}

// StartNATSCluster starts n nodes in the test's process and waits until the cluster's
// JetStream answers. The nodes stop when the test ends.
func StartNATSCluster(t testing.TB, n int) *NATSCluster {
	t.Helper()
	return startCluster(t, n, "")
}

// StartNATSClusterProcesses is StartNATSCluster with every node a nats-server process of
// its own (built from the Go module), so that Kill can end one as a crash would.
func StartNATSClusterProcesses(t testing.TB, n int) *NATSCluster {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("building nats-server: %v\n%s", err, out)
	}
	return startCluster(t, n, bin)
}

func startCluster(t testing.TB, n int, bin string) *NATSCluster {
	t.Helper()
	c := &NATSCluster{t: t, bin: bin}
	for i := range n {
		c.nodes = append(c.nodes, &clusterNode{name: fmt.Sprintf("n%d", i), port: freePort(t), cport: freePort(t),
			storeDir: t.TempDir()})
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.Stop(nd.name)
		}
	})
	for _, nd := range c.nodes {
		c.start(nd)
	}
	nc := c.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(45 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			nc.Close()
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's JetStream never answered: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// URL lists every node's client URL, comma separated, as nats.Connect takes it.
func (c *NATSCluster) URL() string {
	var urls []string
	for _, nd := range c.nodes {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", nd.port))
	}
	return strings.Join(urls, ",")
}

// Connect returns a connection to the cluster that reconnects for as long as the test
// runs, closed when the test ends.
func (c *NATSCluster) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Stop shuts the node down in order (its raft leaderships step down first) and waits
// until it is gone. Stopping a stopped node does nothing.
func (c *NATSCluster) Stop(name string) {
	c.end(name, false)
}

// Kill ends the node's process at once (SIGKILL), as a crash would: it steps down from
// nothing and says goodbye to no one. An in-process node cannot be killed; Kill fails
// the test.
func (c *NATSCluster) Kill(name string) {
	if c.bin == "" {
		c.t.Fatalf("Kill %s: the cluster runs in this process; use StartNATSClusterProcesses", name)
	}
	c.end(name, true)
}

func (c *NATSCluster) end(name string, kill bool) {
	c.mu.Lock()
	nd := c.node(name)
	srv, cmd := nd.srv, nd.cmd
	nd.srv, nd.cmd = nil, nil
	c.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
	if cmd != nil {
		if kill {
			_ = cmd.Process.Kill()
		} else {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		_ = cmd.Wait()
	}
}

// Start starts a stopped node again on its ports and store dir.
func (c *NATSCluster) Start(name string) {
	c.t.Helper()
	c.start(c.node(name))
}

func (c *NATSCluster) start(nd *clusterNode) {
	c.t.Helper()
	var routes []string
	for _, o := range c.nodes {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", o.cport))
	}
	// A restarted node reads its streams back before it takes connections.
	const ready = 30 * time.Second
	if c.bin != "" {
		cmd := exec.Command(c.bin, "-n", nd.name, "-a", "127.0.0.1", "-p", strconv.Itoa(nd.port), "-js", "-sd", nd.storeDir,
			"--cluster_name", "skrip-test", "--cluster", fmt.Sprintf("nats://127.0.0.1:%d", nd.cport),
			"--routes", strings.Join(routes, ","))
		if err := cmd.Start(); err != nil {
			c.t.Fatal(err)
		}
		c.mu.Lock()
		nd.cmd = cmd
		c.mu.Unlock()
		addr := fmt.Sprintf("127.0.0.1:%d", nd.port)
		for deadline := time.Now().Add(ready); ; {
			if conn, err := net.Dial("tcp", addr); err == nil {
				conn.Close()
				return
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("cluster node %s did not listen on %s", nd.name, addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	srv, err := server.NewServer(&server.Options{ServerName: nd.name, Host: "127.0.0.1", Port: nd.port,
		JetStream: true, StoreDir: nd.storeDir, NoSigs: true, NoLog: true,
		Cluster: server.ClusterOpts{Name: "skrip-test", Host: "127.0.0.1", Port: nd.cport},
		Routes:  server.RoutesFromStr(strings.Join(routes, ","))})
	if err != nil {
		c.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(ready) {
		c.t.Fatalf("cluster node %s not ready", nd.name)
	}
	c.mu.Lock()
	nd.srv = srv
	c.mu.Unlock()
}

func (c *NATSCluster) node(name string) *clusterNode {
	for _, nd := range c.nodes {
		if nd.name == name {
			return nd
		}
	}
	c.t.Fatalf("no cluster node %q", name)
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	_, port, err := net.SplitHostPort(FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
