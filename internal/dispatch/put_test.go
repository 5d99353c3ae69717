package dispatch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestPutRefusesAChangedFile: a file whose bytes are no longer the checksum it is sent
// for is refused before anything is put under that checksum's key, where another
// queued run's object may be; its own checksum's file is sent and opens.
func TestPutRefusesAChangedFile(t *testing.T) {
	nc, err := nats.Connect(testutil.NATSServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, _ := jetstream.New(nc)
	if err := setupKeys(ctx, js, protocol.Names{}.Keys(), 1); err != nil {
		t.Fatal(err)
	}
	work, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: "skrip-work"})
	if err != nil {
		t.Fatal(err)
	}
	q := &Queue{work: work, keys: &keyring{js: js, bucket: protocol.Names{}.Keys()}, metrics: metrics.New(), log: slog.New(slog.DiscardHandler)}
	path := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(path, []byte("the file as it was hashed"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("the file as it was hashed"))
	sha := hex.EncodeToString(sum[:])
	if err := os.WriteFile(path, []byte("the file as it is now, changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() (io.ReadCloser, error) { return os.Open(path) }
	if err := q.put(ctx, sha, open); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("a changed file was put: %v", err)
	}
	if n := count(q.metrics.DispatchSent); n != 0 {
		t.Fatalf("a changed file was sent (%v files)", n)
	}
	seal, err := q.keys.key(ctx, sha)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := work.Stat(ctx, protocol.SealedKey(seal)); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the changed file's object: %v", err)
	}
	// Its own checksum: sent, and it opens.
	now := sha256.Sum256([]byte("the file as it is now, changed"))
	if err := q.put(ctx, hex.EncodeToString(now[:]), open); err != nil {
		t.Fatal(err)
	}
	if n := count(q.metrics.DispatchSent); n != 1 {
		t.Fatalf("%v files sent, want 1", n)
	}
}

func count(c prometheus.Counter) float64 {
	var m dto.Metric
	c.Write(&m)
	return m.GetCounter().GetValue()
}
