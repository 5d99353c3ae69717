package protocol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestForged: what API nodes and workers send each other passes; what JetStream sends
// on a subject a worker named does not.
func TestForged(t *testing.T) {
	status := nats.Header{"Status": []string{"100"}}
	direct := nats.Header{"Nats-Stream": []string{"OBJ_x"}, "Nats-Sequence": []string{"3"}}
	for _, c := range []struct {
		name    string
		m       *nats.Msg
		request bool
		forged  bool
	}{
		{"an output line", &nats.Msg{}, false, false},
		{"a request", &nats.Msg{Reply: "_INBOX.abc.def"}, true, false},
		{"a worker's request", &nats.Msg{Reply: "_INBOX.w-w1.abc.def"}, true, false},
		{"a consumer's message", &nats.Msg{Reply: "$JS.ACK.OBJ_x.evil.1.1.1.1.0"}, false, true},
		{"a consumer's message as a request", &nats.Msg{Reply: "$JS.ACK.OBJ_x.evil.1.1.1.1.0"}, true, true},
		{"flow control", &nats.Msg{Reply: "$JS.FC.OBJ_x.a.b"}, false, true},
		{"a consumer's heartbeat", &nats.Msg{Header: status}, false, true},
		{"a direct get's answer", &nats.Msg{Header: direct}, false, true},
		{"an answer sent on another's subject", &nats.Msg{Reply: "skrip.w.w2.cancel"}, true, true},
		{"an API answer as a request", &nats.Msg{}, true, true},
	} {
		if got := Forged(c.m, c.request); got != c.forged {
			t.Errorf("%s: Forged = %v, want %v", c.name, got, c.forged)
		}
	}
}

// TestEverySubscriptionGuarded: API nodes and workers subscribe to the cluster's
// subjects only through Subscribe, so that a new handler cannot forget the guard. A
// subscription to a request's own inbox says so ("unguarded:").
func TestEverySubscriptionGuarded(t *testing.T) {
	for _, dir := range []string{"..", "../../worker"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no sources in %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(b), "\n")
			for i, l := range lines {
				if !strings.Contains(l, "Subscribe(") || strings.Contains(l, "protocol.Subscribe(") || strings.HasPrefix(strings.TrimSpace(l), "//") {
					continue
				}
				if i > 0 && strings.Contains(lines[i-1]+lines[max(i-2, 0)], "unguarded:") {
					continue
				}
				t.Errorf("%s:%d subscribes without protocol.Subscribe: %s", f, i+1, strings.TrimSpace(l))
			}
		}
	}
}
