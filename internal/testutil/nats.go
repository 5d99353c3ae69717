package testutil

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// NATSServer builds nats-server from the module skrip already depends on and runs it as
// a separate process with JetStream under a temp dir, until the test ends. It returns
// the client URL. Tests use it to exercise SKRIP_NATS_URL against a real, external
// server.
func NATSServer(t testing.TB) string {
	t.Helper()
	url, _ := NATSServerWithStop(t)
	return url
}

// NATSServerWithStop is NATSServer that also returns a function which kills the server
// before the test ends, for tests of an outage.
func NATSServerWithStop(t testing.TB) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "nats-server")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
		t.Fatalf("building nats-server: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", filepath.Join(dir, "js"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "nats://" + addr, stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server did not listen on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
