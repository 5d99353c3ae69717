package dispatch_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

// TestRedeliveryWaitsForLiveHolder: a run redelivered while its worker is alive and
// still runs it (its progress signals were lost during a NATS leader election, issue
// 31) is not claimed by the new delivery ("held") and spends no retry; once that worker
// is gone, the same delivery takes the run over as attempt 2.
func TestRedeliveryWaitsForLiveHolder(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0)
	_, r := queuedRun(t, b)
	fake := newFakeWorker(t, c.nats)
	// The holder, alive: it says it runs attempt 1 of the run (as a worker answers an
	// API node's backlog request).
	alive, err := fake.nc.Subscribe(protocol.Names{}.BacklogSubject("fake"), func(m *nats.Msg) {
		data, _ := json.Marshal(protocol.Backlog{Attempt: 1})
		m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	if id, attempt, answer := fake.claim(t); id != r.RunID || attempt != 1 || answer != protocol.Go {
		t.Fatalf("first claim = %s, attempt %d, %s", id, attempt, answer)
	}
	// No progress signal: after the ack wait the run comes again.
	msg, err := fake.cons.Next(jetstream.FetchMaxWait(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := msg.Metadata()
	var m protocol.Message
	if err := json.Unmarshal(msg.Data(), &m); err != nil {
		t.Fatal(err)
	}
	// The delivery's token proves the claim, as a real worker's does.
	claim := protocol.Claim{Run: r.RunID, Attempt: int64(meta.NumDelivered), Worker: "fake2", Token: m.Token}
	if answer := fake.ask(t, protocol.Names{}.ClaimSubject("fake2"), claim); claim.Attempt != 2 || answer != protocol.Held {
		t.Fatalf("the claim of delivery %d while its holder is alive: %q, want %q", claim.Attempt, answer, protocol.Held)
	}
	if got, _ := b.App.Store.GetRun(context.Background(), r.RunID); got.Attempts != 1 || got.Worker != "fake" {
		t.Fatalf("after a held claim: attempts %d on %s; want 1 on fake", got.Attempts, got.Worker)
	}
	// The holder goes (no subscription, no heartbeat): the waiting delivery takes over.
	alive.Unsubscribe()
	msg.InProgress()
	if answer := fake.ask(t, protocol.Names{}.ClaimSubject("fake2"), claim); answer != protocol.Go {
		t.Fatalf("the claim once its holder is gone: %q, want %q", answer, protocol.Go)
	}
	if got, _ := b.App.Store.GetRun(context.Background(), r.RunID); got.Attempts != 2 || got.Worker != "fake2" {
		t.Fatalf("after the take-over: attempts %d on %s; want 2 on fake2", got.Attempts, got.Worker)
	}
}

// TestSweepFailsRunWhenNoWorkerReturns: a running run whose worker is gone, with no
// other worker to take it over, fails as "worker lost" once SKRIP_RUN_WORKER_WAIT has
// passed (issue 31: it stayed "running" for good), and its message leaves the queue.
func TestSweepFailsRunWhenNoWorkerReturns(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0, func(cfg *config.Config) { cfg.RunWorkerWait = 3 * time.Second })
	ubc, r := queuedRun(t, b)
	fake := newFakeWorker(t, c.nats)
	if id, attempt, answer := fake.claim(t); id != r.RunID || attempt != 1 || answer != protocol.Go {
		t.Fatalf("claim = %s, attempt %d, %s", id, attempt, answer)
	}
	start := time.Now()
	done, err := ubc.GetRun(context.Background(), r.RunID, 30*time.Second)
	if err != nil || done.Status != "failed" || done.ErrorSummary == nil || !strings.Contains(*done.ErrorSummary, "worker lost") ||
		!strings.Contains(*done.ErrorSummary, "within 3s") || done.Attempts != 1 {
		t.Fatalf("run: %s (%v), attempts %d, %v", done.Status, done.ErrorSummary, done.Attempts, err)
	}
	if d := time.Since(start); d < 3*time.Second {
		t.Fatalf("failed %v after its worker went, before SKRIP_RUN_WORKER_WAIT", d)
	}
	fake.waitQueueEmpty(t)
}
