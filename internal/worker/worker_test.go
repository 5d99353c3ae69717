package worker_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/dispatch"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/runjob"
	"github.com/skrip-dev/skrip/internal/testutil"
	"github.com/skrip-dev/skrip/internal/worker"
)

// TestStopWithoutAPINodes: a worker told to stop whose finished run no API node records
// stops at the end of its grace period, leaving the run to the queue; it does not wait
// the ten minutes it would give API nodes to answer.
func TestStopWithoutAPINodes(t *testing.T) {
	url := testutil.NATSServer(t)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	js, _ := jetstream.New(nc)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("SKRIP_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if _, err := dispatch.Setup(ctx, js, dispatch.Config{Queue: 8, AckWait: 3 * time.Second}, log); err != nil {
		t.Fatal(err)
	}
	work, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: "skrip-work", DropMarkers: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := apptest.Config(t, apptest.Backend{})
	rn, err := app.OpenRunner(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	// An API node that gives every claim, and never answers a record.
	claims, err := nc.Subscribe(protocol.Names{}.ClaimSubject("w1"), func(m *nats.Msg) {
		b, _ := json.Marshal(protocol.Reply{Answer: protocol.Go})
		m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer claims.Unsubscribe()
	script := []byte("def run_tool(input_dir, output_dir):\n    return 'ok'\n")
	sum := sha256.Sum256(script)
	sha := hex.EncodeToString(sum[:])
	if _, err := work.Put(ctx, protocol.CASKey(sha), bytes.NewReader(script), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	msg, _ := json.Marshal(protocol.Message{Job: runjob.Job{Run: "r_stop", Tool: "t_1", Env: map[string]string{}, Limits: app.RunLimits(cfg)},
		Script: protocol.Input{Name: "script.py", SHA256: sha, Bytes: int64(len(script))}})
	if _, err := js.Publish(ctx, protocol.Names{}.JobSubject("r_stop"), msg); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(nc, work, rn, worker.Config{ID: "w1", Concurrency: 1, AckWait: 3 * time.Second, DataDir: filepath.Join(t.TempDir(), "data"),
		CacheBytes: 1 << 20, Grace: time.Second}, metrics.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	// The run's report reaches the worker's own bucket (this message is an older API
	// node's, its files not sealed): it ran, and its record goes unanswered.
	own, err := work.Sibling(ctx, protocol.WorkerBucket("skrip-work", "w1"), protocol.WorkerBucketTTL)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := own.Stat(ctx, protocol.AttemptPrefix("r_stop", 1)+"report.json"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never left its report")
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop within 10 s of being told to, with a grace of 1 s")
	}
	// Unacknowledged, the run is the queue's again.
	s, _ := js.Stream(ctx, protocol.Names{}.Stream())
	if info, err := s.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("the run's message: %+v, %v; want it still in the queue", info.State, err)
	}
}
