// Package hosts gives tests and benchmarks separate machines on one Linux host: network
// namespaces joined to a bridge by veth pairs, each with its own address, running
// processes that can be killed or cut off the network. It needs root and iproute2 and
// iptables. internal/clustertest wraps it for tests; bench/cluster uses it directly.
package hosts

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StateDir holds one file per live network, named by its id and holding the pid of the
// process that owns it, so that a later run can remove what a killed run left behind.
const StateDir = "/run/skrip-clustertest"

// ErrUnavailable means this machine cannot have hosts: not root, or a tool is missing.
var ErrUnavailable = errors.New("hosts: unavailable")

// Network is a bridge with hosts on it, in the subnet 10.88.<Subnet>.0/24. The root
// namespace (the process that made it) reaches every host through the bridge's address.
type Network struct {
	ID      string // four hex digits, in every name it creates
	Subnet  int
	Bridge  string // skbr<ID>
	Gateway string // 10.88.<Subnet>.1, the bridge's address
	Dir     string // process logs

	mu     sync.Mutex
	hosts  []*Host
	closed bool
}

// Host is a network namespace with one interface, eth0, on the network's bridge.
type Host struct {
	Name string
	NS   string // sk<ID>-<Name>
	Veth string // v<ID>-<Name>, the host side of the veth pair, on the bridge
	Addr string // its IPv4 address

	net   *Network
	mu    sync.Mutex
	procs []*Proc
}

// New creates a bridge on a free subnet, first removing networks whose owning process
// is gone. Logs of processes go to dir. Close removes everything New and its hosts made.
func New(ctx context.Context, dir string) (*Network, error) {
	for _, bin := range []string{"ip", "iptables", "nsenter", "setpriv"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("%w: %s not found (apt-get install iproute2 iptables util-linux)", ErrUnavailable, bin)
		}
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: network namespaces need root", ErrUnavailable)
	}
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	unlock, err := lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	Reap(ctx)

	b := make([]byte, 2)
	rand.Read(b)
	n := &Network{ID: hex.EncodeToString(b), Dir: dir}
	n.Bridge = "skbr" + n.ID
	if n.Subnet, err = freeSubnet(); err != nil {
		return nil, err
	}
	n.Gateway = fmt.Sprintf("10.88.%d.1", n.Subnet)
	// The state file comes first: whatever exists is then always findable by Reap.
	if err := os.WriteFile(n.stateFile(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	steps := [][]string{
		{"ip", "link", "add", n.Bridge, "type", "bridge"},
		{"ip", "addr", "add", n.Gateway + "/24", "dev", n.Bridge},
		{"ip", "link", "set", n.Bridge, "up"},
		// Docker sets FORWARD's policy to DROP, and with br_netfilter bridged frames
		// between two namespaces go through FORWARD: without this rule they vanish.
		append([]string{"iptables", "-w", "-I", "FORWARD", "1"}, n.forwardRule()...),
	}
	for _, s := range steps {
		if err := run(ctx, s...); err != nil {
			n.teardown()
			return nil, err
		}
	}
	return n, nil
}

func (n *Network) stateFile() string { return filepath.Join(StateDir, n.ID) }

// ReapAlso names a path for Reap to remove, with the network, should this process die
// without cleaning up (a test binary killed on its timeout leaves its temp dirs behind).
func (n *Network) ReapAlso(path string) error {
	f, err := os.OpenFile(n.stateFile(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("hosts: %w", err)
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, path)
	return err
}

func (n *Network) forwardRule() []string {
	return []string{"-i", n.Bridge, "-o", n.Bridge, "-j", "ACCEPT"}
}

// AddHost creates host name (at most 9 characters) with the next free address, .11,
// .12, …, and checks that the root namespace and the first host reach it.
func (n *Network) AddHost(ctx context.Context, name string) (*Host, error) {
	if name == "" || len(name) > 9 || strings.ContainsAny(name, "/ .") {
		return nil, fmt.Errorf("hosts: host name %q: 1 to 9 characters, no dots, slashes or spaces", name)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, errors.New("hosts: network closed")
	}
	for _, h := range n.hosts {
		if h.Name == name {
			n.mu.Unlock()
			return nil, fmt.Errorf("hosts: host %q exists", name)
		}
	}
	h := &Host{
		Name: name,
		NS:   "sk" + n.ID + "-" + name,
		Veth: "v" + n.ID + "-" + name,
		Addr: fmt.Sprintf("10.88.%d.%d", n.Subnet, 11+len(n.hosts)),
		net:  n,
	}
	var first *Host
	if len(n.hosts) > 0 {
		first = n.hosts[0]
	}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()

	for _, s := range [][]string{
		{"ip", "netns", "add", h.NS},
		{"ip", "link", "add", h.Veth, "type", "veth", "peer", "name", "eth0", "netns", h.NS},
		{"ip", "link", "set", h.Veth, "master", n.Bridge},
		{"ip", "link", "set", h.Veth, "up"},
		{"ip", "-n", h.NS, "addr", "add", h.Addr + "/24", "dev", "eth0"},
		{"ip", "-n", h.NS, "link", "set", "lo", "up"},
		{"ip", "-n", h.NS, "link", "set", "eth0", "up"},
	} {
		if err := run(ctx, s...); err != nil {
			return nil, err
		}
	}
	if err := probe(ctx, "", h.Addr); err != nil {
		return nil, fmt.Errorf("hosts: the root namespace does not reach %s (%s): %w", h.Name, h.Addr, err)
	}
	if first != nil {
		if err := probe(ctx, h.NS, first.Addr); err != nil {
			return nil, fmt.Errorf("hosts: %s does not reach %s (%s) across the bridge; is a FORWARD rule missing? %w",
				h.Name, first.Name, first.Addr, err)
		}
	}
	return h, nil
}

// Host returns the host named name, or nil.
func (n *Network) Host(name string) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range n.hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// Hosts returns the network's hosts in the order they were added.
func (n *Network) Hosts() []*Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Host(nil), n.hosts...)
}

// Close kills every process on the network's hosts and removes the hosts, the bridge
// and the FORWARD rule. It is safe to call twice.
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	hosts := append([]*Host(nil), n.hosts...)
	n.mu.Unlock()
	for _, h := range hosts {
		h.KillAll()
	}
	return n.teardown()
}

// teardown removes every trace of the network, whether or not this process made it.
func (n *Network) teardown() error {
	return teardownID(n.ID, false)
}

// Cut takes the host's link to the bridge down: a silent partition, where packets
// vanish and connections time out, with no reset.
func (h *Host) Cut(ctx context.Context) error {
	return run(ctx, "ip", "link", "set", h.Veth, "down")
}

// Heal brings the host's link back up, and returns once the bridge forwards on it
// again (a port coming up passes through states that drop packets), within 10 s.
func (h *Host) Heal(ctx context.Context) error {
	if err := run(ctx, "ip", "link", "set", h.Veth, "up"); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		oper, _ := os.ReadFile("/sys/class/net/" + h.Veth + "/operstate")
		port, _ := os.ReadFile("/sys/class/net/" + h.Veth + "/brport/state")
		// brport/state 3 is BR_STATE_FORWARDING.
		if strings.TrimSpace(string(oper)) == "up" && strings.TrimSpace(string(port)) == "3" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: the link is %s and its bridge port in state %s 10 s after it was brought up",
				h.Name, strings.TrimSpace(string(oper)), strings.TrimSpace(string(port)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Procs returns the processes started on the host, in order.
func (h *Host) Procs() []*Proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*Proc(nil), h.procs...)
}

// KillAll kills every process in the host's namespace, its own or not (PostgreSQL's
// backends outlive a killed postmaster), and reaps its own.
func (h *Host) KillAll() {
	h.mu.Lock()
	procs := append([]*Proc(nil), h.procs...)
	h.mu.Unlock()
	for _, p := range procs {
		p.Kill()
	}
	killNS(h.NS)
}

// probe checks that addr answers on TCP port 1 with a refusal, from namespace ns ("":
// the root namespace). A refusal proves the path works; silence means it does not.
func probe(ctx context.Context, ns, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	target := net.JoinHostPort(addr, "1")
	if ns == "" {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", target)
		if err == nil {
			c.Close()
			return nil
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil
		}
		return err
	}
	// bash opens the connection itself, so no client has to be installed in the host.
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns,
		"bash", "-c", "exec 3<>/dev/tcp/"+addr+"/1").CombinedOutput()
	if err == nil || bytes.Contains(out, []byte("refused")) {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("no answer within 3 s")
	}
	return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
}

// run runs one command, returning its output in the error when it fails.
func run(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("hosts: %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// output runs one command and returns its standard output.
func output(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).Output()
	return string(out), err
}
