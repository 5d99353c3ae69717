package natsblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestHealthyClusterDoesNotStall downloads many objects, whole and in ranges, through
// a client on each server of a healthy 3-node cluster: no download's consumer stops
// delivering, so none is renewed (issue 31: 48 warnings "a download's consumer stopped
// delivering … no chunk for 2.0 s" in 20 minutes, some with the cluster quiet; a pull
// request sent before its server knew of the new consumer was answered 503, which the
// nats.go iterator ignored).
func TestHealthyClusterDoesNotStall(t *testing.T) {
	cluster := testutil.StartNATSCluster(t, 3)
	ctx := context.Background()
	var stores []*Store
	for _, url := range strings.Split(cluster.URL(), ",") {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		stores = append(stores, newTestStore(t, nc, Config{Bucket: "stall", Replicas: 3}))
	}
	sizes := []int{1, 1000, chunkSize, chunkSize + 1, 3*chunkSize + 17}
	var keys []string
	var datas [][]byte
	for i := range 30 {
		data := make([]byte, sizes[i%len(sizes)])
		rand.Read(data)
		key := fmt.Sprintf("files/o%d", i)
		if _, err := stores[i%3].Put(ctx, key, bytes.NewReader(data), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		keys, datas = append(keys, key), append(datas, data)
	}
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 2 {
				for i, key := range keys {
					off, n := int64(0), int64(-1)
					if round == 1 && len(datas[i]) > 2 {
						off, n = int64(len(datas[i])/3), int64(len(datas[i])/3)
					}
					rc, _, err := s.Get(ctx, key, off, n)
					if err != nil {
						t.Error(err)
						return
					}
					got, err := io.ReadAll(rc)
					rc.Close()
					want := datas[i][off:]
					if n >= 0 {
						want = want[:n]
					}
					if err != nil || !bytes.Equal(got, want) {
						t.Errorf("%s from %d: %d bytes, %v; want %d", key, off, len(got), err, len(want))
					}
				}
			}
		}()
	}
	wg.Wait()
	for i, s := range stores {
		if n := s.renewals.Load(); n != 0 {
			t.Errorf("the client of server %d renewed %d download consumers that stopped delivering; want none in a healthy cluster", i, n)
		}
	}
}

// TestPullAsksAgainAfterNoResponders sends a reader's first pull request before any
// server listens on its consumer's subject, as happens when the request reaches a server
// the new consumer's subject has not yet been announced to: the server answers 503, and
// the reader asks again until the messages come, without waiting for a stall.
func TestPullAsksAgainAfterNoResponders(t *testing.T) {
	nc := startServer(t)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.1", []byte("chunk")); err != nil {
		t.Fatal(err)
	}
	p, err := newPuller(nc, "S", "late", 8)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	go func() {
		time.Sleep(300 * time.Millisecond)
		if _, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Name: "late", AckPolicy: jetstream.AckNonePolicy}); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, renewAfter)
	defer cancel()
	m, err := p.next(rctx)
	if err != nil || string(m.Data) != "chunk" {
		t.Fatalf("after %v: %v, %v; want the message before a reader would renew its consumer (%v)", time.Since(start), m, err, renewAfter)
	}
	if p.refused == 0 {
		t.Fatal("no pull request was answered 503: the test did not send one before the consumer existed")
	}
	t.Logf("the message came %v after the first pull, %d pull requests answered 503", time.Since(start).Round(time.Millisecond), p.refused)
}
