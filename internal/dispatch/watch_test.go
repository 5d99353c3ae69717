package dispatch

import (
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestWatchFollowsTheNextAttempt: a viewer watching when a run's worker is lost sees
// the lines of its second attempt, whose count starts from 1 again, and no line twice.
func TestWatchFollowsTheNextAttempt(t *testing.T) {
	nc, err := nats.Connect(testutil.NATSServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	q := &Queue{nc: nc, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var mu sync.Mutex
	var got []string
	stop := q.Watch(store.Run{ID: "r_w", Status: store.StatusQueued}, func(e run.Event) {
		mu.Lock()
		got = append(got, e.Data)
		mu.Unlock()
	})
	defer stop()
	nc.Flush()
	time.Sleep(100 * time.Millisecond) // the backlog (none: the run was queued) is in
	for _, l := range []protocol.Line{{Attempt: 1, Seq: 1, Type: "stdout", Data: "a1"}, {Attempt: 1, Seq: 2, Type: "stdout", Data: "a2"}, {Attempt: 1, Seq: 2, Type: "stdout", Data: "a2"}, {Attempt: 1, Seq: 3, Type: "stdout", Data: "a3"},
		{Attempt: 2, Seq: 1, Type: "stdout", Data: "b1"}, {Attempt: 2, Seq: 2, Type: "stdout", Data: "b2"}, {Attempt: 1, Seq: 4, Type: "stdout", Data: "late line of attempt 1"}} {
		b, _ := json.Marshal(l)
		nc.Publish(protocol.Names{}.OutSubject([]string{"", "w1", "w2"}[l.Attempt], "r_w"), b)
	}
	nc.Flush()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a1", "a2", "a3", "b1", "b2"}; len(got) != len(want) || got[3] != "b1" || got[4] != "b2" || got[2] != "a3" {
		t.Fatalf("the viewer saw %q, want %q", got, want)
	}
}
