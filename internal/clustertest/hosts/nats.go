package hosts

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/natsserver"
)

// NATS ports on every node's address.
const (
	NATSPort    = 4222
	NATSHTTP    = 8222
	NATSCluster = 6222
)

// NATSServerPackage is the nats-server main package, a dependency of skrip's module.
const NATSServerPackage = "github.com/nats-io/nats-server/v2"

// BuildNATSServer compiles nats-server from the module skrip depends on into dir and
// returns the binary's path.
func BuildNATSServer(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "nats-server")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, NATSServerPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("hosts: building nats-server: %v\n%s", err, out)
	}
	return bin, nil
}

// NATSOptions describe a NATS cluster.
type NATSOptions struct {
	Bin         string            // the nats-server binary (BuildNATSServer)
	Nodes       int               // default 3
	Users       []natsserver.User // none: no authorization at all
	WorkBucket  string            // for the workers' permissions; default skrip-work
	FilesBucket string            // default skrip-files
	Names       protocol.Names    // the installation's (SKRIP_NATS_PREFIX); none by default
}

// NATS is a cluster of nats-servers with JetStream, one per host n1, n2, …, routed to
// each other, in cluster "skrip".
type NATS struct {
	Nodes []*NATSNode
}

// NATSNode is one server of a NATS cluster.
type NATSNode struct {
	Name   string // n1, n2, …: host name and server_name
	Host   *Host
	Proc   *Proc
	Config string // the config file's path
}

// URL is the node's client URL.
func (nd *NATSNode) URL() string { return fmt.Sprintf("nats://%s:%d", nd.Host.Addr, NATSPort) }

// Monitor is the node's monitoring base URL (/healthz, /jsz, /routez).
func (nd *NATSNode) Monitor() string { return fmt.Sprintf("http://%s:%d", nd.Host.Addr, NATSHTTP) }

// StartNATS adds hosts n1…nN to the network, starts a nats-server on each with its
// store under dir, and waits until every node is healthy with JetStream's meta group
// formed.
func StartNATS(ctx context.Context, n *Network, dir string, o NATSOptions) (*NATS, error) {
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.WorkBucket == "" {
		o.WorkBucket = "skrip-work"
	}
	if o.FilesBucket == "" {
		o.FilesBucket = "skrip-files"
	}
	auth := ""
	if len(o.Users) > 0 {
		var err error
		if auth, err = natsserver.AuthorizationConfig(o.Users, natsserver.Install{Names: o.Names, WorkBucket: o.WorkBucket, FilesBucket: o.FilesBucket}); err != nil {
			return nil, err
		}
	}
	c := &NATS{}
	for i := 1; i <= o.Nodes; i++ {
		h, err := n.AddHost(ctx, fmt.Sprintf("n%d", i))
		if err != nil {
			return nil, err
		}
		c.Nodes = append(c.Nodes, &NATSNode{Name: h.Name, Host: h})
	}
	for _, nd := range c.Nodes {
		var routes []string
		for _, other := range c.Nodes {
			if other != nd {
				routes = append(routes, fmt.Sprintf("nats-route://%s:%d", other.Host.Addr, NATSCluster))
			}
		}
		store := filepath.Join(dir, nd.Name)
		// Pings every 2 s, 3 unanswered closing the connection: a partition (Cut) is
		// noticed on routes and client connections within about 8 s, not 4 minutes.
		conf := fmt.Sprintf(`server_name: %q
ping_interval: "2s"
ping_max: 3
listen: "%s:%d"
http: "%s:%d"
jetstream { store_dir: %q }
cluster {
  name: skrip
  listen: "%s:%d"
  routes: [%s]
}
%s`, nd.Name, nd.Host.Addr, NATSPort, nd.Host.Addr, NATSHTTP, store,
			nd.Host.Addr, NATSCluster, strings.Join(routes, ", "), auth)
		nd.Config = filepath.Join(dir, nd.Name+".conf")
		if err := os.WriteFile(nd.Config, []byte(conf), 0o600); err != nil {
			return nil, fmt.Errorf("hosts: %w", err)
		}
		p, err := nd.Host.Start(Command{Name: "nats-server", Path: o.Bin, Args: []string{"-c", nd.Config}})
		if err != nil {
			return nil, err
		}
		nd.Proc = p
	}
	for _, nd := range c.Nodes {
		if err := nd.WaitHealthy(ctx, 30*time.Second); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// URLs is the comma-separated client URLs of every node, as SKRIP_NATS_URL takes them.
func (c *NATS) URLs() string {
	var u []string
	for _, nd := range c.Nodes {
		u = append(u, nd.URL())
	}
	return strings.Join(u, ",")
}

// Node returns the node named name (n1, n2, …), or nil.
func (c *NATS) Node(name string) *NATSNode {
	for _, nd := range c.Nodes {
		if nd.Name == name {
			return nd
		}
	}
	return nil
}

// Kill kills the node's server with SIGKILL.
func (nd *NATSNode) Kill() error { return nd.Proc.Kill() }

// Restart starts the node's server again (killing it first if it runs) and waits until
// it is healthy: back in the cluster, and its streams caught up.
func (nd *NATSNode) Restart(ctx context.Context) error {
	if err := nd.Proc.Restart(); err != nil {
		return err
	}
	return nd.WaitHealthy(ctx, 30*time.Second)
}

// WaitHealthy waits up to timeout for the node's /healthz to answer 200: JetStream
// enabled, the meta group has a leader, and the node's streams and consumers are
// current.
func (nd *NATSNode) WaitHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Its own transport: http.DefaultTransport holds the tests' traffic to skrip's OpenAPI
	// document, and nats-server's monitor is not skrip.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Timeout: 2 * time.Second, Transport: tr}
	last := "no answer"
	for {
		if exited, err := nd.Proc.Exited(); exited {
			return fmt.Errorf("hosts: nats-server %s exited (%v):\n%s", nd.Name, err, nd.Proc.Log(4000))
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", nd.Monitor()+"/healthz", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("hosts: nats-server %s not healthy within %v (%s):\n%s",
				nd.Name, timeout, last, nd.Proc.Log(4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
