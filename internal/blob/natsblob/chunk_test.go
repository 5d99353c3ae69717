package natsblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/skrip-dev/skrip/internal/blob"
)

func TestFitChunk(t *testing.T) {
	for _, c := range []struct {
		maxPayload int64
		want       int
	}{
		{1 << 20, chunkSize},                   // nats-server's default
		{chunkSize + chunkHeadroom, chunkSize}, // just enough
		{chunkSize, chunkSize / 2},
		{64 << 10, 32 << 10},
		{1 << 10, minChunk}, // below anything sensible: the smallest, and the server refuses it
	} {
		if got := fitChunk(c.maxPayload); got != c.want {
			t.Errorf("fitChunk(%d) = %d, want %d", c.maxPayload, got, c.want)
		}
	}
}

// A server configured with a max_payload below the chunk size still takes objects: the
// store writes smaller chunks and records their size, and reads them back whole and by
// range (it refused every chunk before).
func TestSmallMaxPayload(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), MaxPayload: 64 << 10, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s := newTestStore(t, nc, Config{})
	if s.chunk != 32<<10 {
		t.Fatalf("chunk size %d for a max_payload of 64 KiB, want 32 KiB", s.chunk)
	}
	data := make([]byte, 1<<20+123)
	rand.Read(data)
	ctx := context.Background()
	if _, err := s.Put(ctx, "files/small-payload", bytes.NewReader(data), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Get(ctx, "files/small-payload", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (%v), want the %d put", len(got), err, len(data))
	}
	off := int64(len(data) - 1000)
	r, _, err = s.Get(ctx, "files/small-payload", off, 1000)
	if err != nil {
		t.Fatal(err)
	}
	got, err = io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data[off:]) {
		t.Fatalf("the last 1000 bytes read back wrong (%d bytes, %v)", len(got), err)
	}
}
