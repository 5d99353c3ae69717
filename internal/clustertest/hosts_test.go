package clustertest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/clustertest/hosts"
)

func mustReadlink(p string) string {
	s, _ := os.Readlink(p)
	return s
}

// TestHosts checks what fault tests rely on: a Proc's pid is the program itself, in its
// host's network namespace, as the user asked for; Stop, Kill and Restart act on it;
// Cut makes a host unreachable and Heal brings it back.
func TestHosts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := Network(t)
	a := Host(t, n, "a")
	b := Host(t, n, "b")
	if n.Host("b") != b || n.Host("c") != nil {
		t.Error("Network.Host does not find hosts by name")
	}

	p := Start(t, a, hosts.Command{Name: "sleep", Path: "/bin/sleep", Args: []string{"60"}, User: "nobody"})
	var err error
	// nsenter, then setpriv, exec the program in place: the pid stays, the name changes.
	var comm []byte
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if comm, err = os.ReadFile("/proc/" + itoa(p.Pid()) + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
	}
	if err != nil || strings.TrimSpace(string(comm)) != "sleep" {
		t.Errorf("pid %d is %q (%v), want the program sleep itself", p.Pid(), comm, err)
	}
	ours, _ := os.Readlink("/proc/self/ns/net")
	theirs, _ := os.Readlink("/proc/" + itoa(p.Pid()) + "/ns/net")
	if theirs == "" || theirs == ours {
		t.Errorf("the program's network namespace is %q, ours %q: want another", theirs, ours)
	}
	if ours, _ := os.Readlink("/proc/self/ns/mnt"); ours != mustReadlink("/proc/"+itoa(p.Pid())+"/ns/mnt") {
		t.Error("the program has a mount namespace of its own: want ours, with /sys/fs/cgroup")
	}
	status, _ := os.ReadFile("/proc/" + itoa(p.Pid()) + "/status")
	if !strings.Contains(string(status), "Uid:\t65534\t") {
		t.Errorf("the program does not run as nobody:\n%s", status)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if exited, _ := p.Exited(); !exited {
		t.Error("Stop returned before the program exited")
	}
	old := p.Pid()
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	if p.Pid() == old {
		t.Error("Restart kept the old pid")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Wait after Kill = %v, want killed", err)
	}
	if !strings.Contains(p.Log(0), "=== ") {
		t.Errorf("the log has no start lines:\n%s", p.Log(0))
	}

	// b listens; the root namespace and a reach it until b is cut.
	ln := Start(t, b, hosts.Command{Name: "listen", Path: "/bin/bash",
		Args: []string{"-c", "exec python3 -c 'import socket,time\ns=socket.socket();s.bind((\"0.0.0.0\",7000));s.listen();time.sleep(60)'"}})
	defer ln.Kill()
	reach := func() error { return dial(ctx, b.Addr+":7000", time.Second) }
	deadline := time.Now().Add(10 * time.Second)
	for reach() != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := reach(); err != nil {
		t.Fatalf("b's listener unreachable: %v", err)
	}
	if err := b.Cut(ctx); err != nil {
		t.Fatal(err)
	}
	if err := reach(); err == nil {
		t.Error("b reachable after Cut")
	}
	if err := b.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if err := reach(); err != nil {
		t.Errorf("b unreachable after Heal: %v", err)
	}
}

// TestSkripBuilds checks that Skrip builds the binary once and that it runs on a host.
func TestSkripBuilds(t *testing.T) {
	bin := Skrip(t)
	if again := Skrip(t); again != bin {
		t.Errorf("Skrip built twice: %s, %s", bin, again)
	}
	n := Network(t)
	h := Host(t, n, "api1")
	p := Start(t, h, hosts.Command{Path: bin, Args: []string{"version"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("skrip version on %s: %v\n%s", h.Name, err, p.Log(2000))
	}
}
