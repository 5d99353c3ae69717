package dispatch

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestSetupKeepsOperatorEdits: an API node's start keeps what an operator changed on the
// run queue's stream, its consumer and the worker registry, as it keeps the buckets'; it
// sets only what the protocol needs (the ack wait and the heartbeats' TTL follow
// SKRIP_RUN_ACK_WAIT).
func TestSetupKeepsOperatorEdits(t *testing.T) {
	nc, err := nats.Connect(testutil.NATSServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// An installation without a prefix and one with SKRIP_NATS_PREFIX, on one server:
	// each keeps its own assets' edits.
	for _, prefix := range []string{"", "p"} {
		t.Run("prefix="+prefix, func(t *testing.T) { setupKeepsEdits(t, js, prefix) })
	}
	if _, err := js.Stream(ctx, "SKRIP_RUNS"); err != nil {
		t.Errorf("without a prefix the stream is SKRIP_RUNS, as before SKRIP_NATS_PREFIX: %v", err)
	}
	if _, err := js.Stream(ctx, "p_SKRIP_RUNS"); err != nil {
		t.Errorf("with the prefix p the stream is p_SKRIP_RUNS: %v", err)
	}
}

func setupKeepsEdits(t *testing.T, js jetstream.JetStream, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := protocol.NewNames(prefix)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cfg := Config{Queue: 10, AckWait: 6 * time.Second, Names: n}
	stream, err := Setup(ctx, js, cfg, log)
	if err != nil {
		t.Fatal(err)
	}

	// The operator describes and tunes each one.
	sc := stream.CachedInfo().Config
	sc.Description, sc.MaxMsgs = "operator: run queue", 500
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	cons, err := stream.Consumer(ctx, protocol.Consumer)
	if err != nil {
		t.Fatal(err)
	}
	cc := cons.CachedInfo().Config
	cc.Description, cc.Metadata = "operator: workers", map[string]string{"owner": "it"}
	if _, err := stream.UpdateConsumer(ctx, cc); err != nil {
		t.Fatal(err)
	}
	reg, err := js.Stream(ctx, "KV_"+n.Registry())
	if err != nil {
		t.Fatal(err)
	}
	rc := reg.CachedInfo().Config
	rc.Description = "operator: heartbeats"
	if _, err := js.UpdateStream(ctx, rc); err != nil {
		t.Fatal(err)
	}
	keys, err := js.Stream(ctx, "KV_"+n.Keys())
	if err != nil {
		t.Fatal(err)
	}
	kc := keys.CachedInfo().Config
	kc.Description = "operator: secret"
	if _, err := js.UpdateStream(ctx, kc); err != nil {
		t.Fatal(err)
	}

	check := func(ackWait time.Duration) {
		t.Helper()
		s, err := js.Stream(ctx, n.Stream())
		if err != nil {
			t.Fatal(err)
		}
		if c := s.CachedInfo().Config; c.Description != "operator: run queue" || c.MaxMsgs != 500 {
			t.Errorf("the stream after a start: %q, max %d", c.Description, c.MaxMsgs)
		}
		cons, err := s.Consumer(ctx, protocol.Consumer)
		if err != nil {
			t.Fatal(err)
		}
		if c := cons.CachedInfo().Config; c.Description != "operator: workers" || c.Metadata["owner"] != "it" || c.AckWait != ackWait || c.MaxDeliver != protocol.MaxDeliver {
			t.Errorf("the consumer after a start: %q %v, ack wait %v (want %v), max deliver %d", c.Description, c.Metadata, c.AckWait, ackWait, c.MaxDeliver)
		}
		reg, err := js.Stream(ctx, "KV_"+n.Registry())
		if err != nil {
			t.Fatal(err)
		}
		if c := reg.CachedInfo().Config; c.Description != "operator: heartbeats" || c.MaxAge != 3*protocol.HeartbeatEvery(ackWait) {
			t.Errorf("the registry after a start: %q, TTL %v (want %v)", c.Description, c.MaxAge, 3*protocol.HeartbeatEvery(ackWait))
		}
		keys, err := js.Stream(ctx, "KV_"+n.Keys())
		if err != nil {
			t.Fatal(err)
		}
		if c := keys.CachedInfo().Config; c.Description != "operator: secret" {
			t.Errorf("the secret's bucket after a start: %q", c.Description)
		}
	}
	if _, err := Setup(ctx, js, cfg, log); err != nil {
		t.Fatal(err)
	}
	check(cfg.AckWait)
	// A new SKRIP_RUN_ACK_WAIT reaches the consumer and the heartbeats' TTL, and nothing else.
	cfg.AckWait = 3 * time.Second
	if _, err := Setup(ctx, js, cfg, log); err != nil {
		t.Fatal(err)
	}
	check(cfg.AckWait)
}
