package benchutil

import (
	"log"
	"net"
	"os"
	"strings"
)

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment ago, for a
// server process a benchmark starts.
func FreeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// BaseEnv is this process's environment without any SKRIP_ setting, so that a process a
// benchmark starts gets only the settings the benchmark gives it.
func BaseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKRIP_") {
			env = append(env, kv)
		}
	}
	return env
}
