package testutil

import (
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BuildSkrip compiles the real skrip binary into a temp dir and returns its path.
func BuildSkrip(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "skrip")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/skrip-dev/skrip/cmd/skrip")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WaitHealthy waits up to 15 s for base/healthz to answer 200.
func WaitHealthy(t testing.TB, base string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server at %s did not become healthy", base)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
