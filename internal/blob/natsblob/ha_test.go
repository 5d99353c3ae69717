package natsblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// haSize is the object the leader-change tests move: large enough that a node stops in
// the middle of the transfer.
const haSize = 60 << 20

// haSetup starts a 3-node cluster (of processes, when v kills its node) with a 3-replica
// bucket and returns the store, the cluster and random data of haSize bytes. The store's
// log shows with the test's.
func haSetup(t *testing.T, v victim) (*Store, *testutil.NATSCluster, []byte) {
	t.Helper()
	var cluster *testutil.NATSCluster
	if v.kill {
		cluster = testutil.StartNATSClusterProcesses(t, 3)
	} else {
		cluster = testutil.StartNATSCluster(t, 3)
	}
	var logs testutil.LockedBuffer
	t.Cleanup(func() { t.Logf("the store logged:\n%s", logs.String()) })
	s := newTestStore(t, cluster.Connect(t), Config{Bucket: "ha", Replicas: 3,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	data := make([]byte, haSize)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	return s, cluster, data
}

// A victim picks the node to stop in the middle of a transfer.
type victim struct {
	name string
	pick func(s *Store, rc io.ReadCloser) (string, error)
	kill bool // kill the node's process rather than shut it down in order
}

// killed is v with its node killed.
func (v victim) killed() victim {
	v.name, v.kill = "killed "+v.name, true
	return v
}

var (
	theStreamLeader = victim{name: "stream leader", pick: func(s *Store, _ io.ReadCloser) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		si, err := s.stream.Info(ctx)
		if err != nil {
			return "", err
		}
		if si.Cluster == nil || si.Cluster.Leader == "" {
			return "", errors.New("the bucket's stream has no leader")
		}
		return si.Cluster.Leader, nil
	}}
	theClientsServer = victim{name: "client's server", pick: func(s *Store, _ io.ReadCloser) (string, error) {
		return s.nc.ConnectedServerName(), nil
	}}
	theConsumersServer = victim{name: "consumer's server", pick: func(s *Store, rc io.ReadCloser) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ci, err := rc.(*chunkReader).cons.Info(ctx)
		if err != nil {
			return "", err
		}
		if ci.Cluster == nil || ci.Cluster.Leader == "" {
			return "", errors.New("the reader's consumer has no server")
		}
		return ci.Cluster.Leader, nil
	}}
)

// stop stops v's node and reports which it was. It may run on another goroutine than
// the test's.
func (v victim) stop(t *testing.T, s *Store, cluster *testutil.NATSCluster, rc io.ReadCloser) (string, error) {
	node, err := v.pick(s, rc)
	if err != nil {
		return "", fmt.Errorf("picking the %s: %w", v.name, err)
	}
	start := time.Now()
	if v.kill {
		cluster.Kill(node)
	} else {
		cluster.Stop(node)
	}
	t.Logf("stopped %s, the %s (client was on %s), in %s", node, v.name, s.nc.ConnectedServerName(),
		time.Since(start).Round(time.Millisecond))
	return node, nil
}

// TestPutSurvivesLeaderChange stops a node a third of the way through a Put: the Put
// completes, and the object reads back whole with the digest it reported.
func TestPutSurvivesLeaderChange(t *testing.T) {
	for _, v := range []victim{theStreamLeader, theClientsServer, theStreamLeader.killed()} {
		t.Run(v.name, func(t *testing.T) {
			s, cluster, data := haSetup(t, v)
			ctx := context.Background()
			sum := sha256.Sum256(data)

			type result struct {
				node string
				err  error
			}
			stopped := make(chan result, 1)
			var fired atomic.Bool
			r := &hookReader{r: bytes.NewReader(data), at: haSize / 3, hook: func() {
				if fired.CompareAndSwap(false, true) {
					go func() {
						node, err := v.stop(t, s, cluster, nil)
						stopped <- result{node, err}
					}()
				}
			}}
			start := time.Now()
			info, err := s.Put(ctx, "files/big", r, blob.PutOptions{})
			t.Logf("Put of %d MiB took %s", haSize>>20, time.Since(start).Round(time.Millisecond))
			if err != nil {
				t.Fatalf("Put across a node stop: %v", err)
			}
			stop := <-stopped
			if stop.err != nil {
				t.Fatal(stop.err)
			}
			if want := blob.FormatSHA256(sum[:]); info.Checksum != want || info.Size != haSize {
				t.Fatalf("Put reported %s, %d bytes; want %s, %d", info.Checksum, info.Size, want, haSize)
			}
			checkRead(t, s, "files/big", sum)
			checkClean(t, s)
			// The node comes back and catches up; the object still reads whole.
			cluster.Start(stop.node)
			checkRead(t, s, "files/big", sum)
		})
	}
}

// TestGetSurvivesLeaderChange stops a node a third of the way through a Get: the reader
// goes on and delivers every byte, checked against the digest.
func TestGetSurvivesLeaderChange(t *testing.T) {
	for _, v := range []victim{theStreamLeader, theConsumersServer, theClientsServer, theStreamLeader.killed(),
		theConsumersServer.killed()} {
		t.Run(v.name, func(t *testing.T) {
			s, cluster, data := haSetup(t, v)
			ctx := context.Background()
			sum := sha256.Sum256(data)
			if _, err := s.Put(ctx, "files/big", bytes.NewReader(data), blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			rc, _, err := s.Get(ctx, "files/big", 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			h := sha256.New()
			start := time.Now()
			if _, err := io.CopyN(h, rc, haSize/3); err != nil {
				t.Fatal(err)
			}
			if _, err := v.stop(t, s, cluster, rc); err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(h, rc)
			t.Logf("Get of %d MiB took %s", haSize>>20, time.Since(start).Round(time.Millisecond))
			if err != nil {
				t.Fatalf("Get across a node stop, %d bytes after it: %v", n, err)
			}
			if got := h.Sum(nil); !bytes.Equal(got, sum[:]) || n != haSize-haSize/3 {
				t.Fatalf("read %d bytes after the stop, sha256 %x; want %d, %x", n, got, haSize-haSize/3, sum)
			}
			if err := rc.Close(); err != nil {
				t.Fatal(err)
			}
			waitHealthy(t, s)
			checkClean(t, s)
		})
	}
}

// waitHealthy waits until the cluster has a meta leader and the bucket's stream a leader
// again: a transfer may end before they are elected.
func waitHealthy(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(leaderWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := s.js.AccountInfo(ctx)
		if err == nil {
			err = s.waitLeader(ctx, time.Now().Add(2*time.Second))
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not recover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkRead reads key whole and compares its sha256 with want.
func checkRead(t *testing.T, s *Store, key string, want [32]byte) {
	t.Helper()
	rc, _, err := s.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h := sha256.New()
	if _, err := io.Copy(h, rc); err != nil {
		t.Fatalf("reading %s back: %v", key, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatalf("%s read back with sha256 %x, want %x", key, got, want)
	}
}

// hookReader calls hook once at offset at and every read after it.
type hookReader struct {
	r    io.Reader
	n    int64
	at   int64
	hook func()
}

func (h *hookReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.n += int64(n)
	if h.n >= h.at {
		h.hook()
	}
	return n, err
}

// TestRepairKeepsOrder plays what a leader change can leave of an upload: chunks 0, 2 and
// 3 stored and 1 lost, and 1 arriving late, after the repair read the stream. The repair
// keeps 0, deletes 2 and 3 and publishes them again after 1, so the object reads back in
// order; a stray copy stored later fails the check before the commit.
func TestRepairKeepsOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newTestStore(t, startServer(t), Config{Bucket: "repair"})
	id := s.startPut()
	defer s.endPut(id)
	subj := chunkSubject(s.bucket, id)
	parts := [][]byte{[]byte("zero,"), []byte("one,"), []byte("two,"), []byte("three")}
	w := &chunkWriter{s: s, ctx: ctx, subj: subj, id: id}
	for k, p := range parts {
		w.pending = append(w.pending, &chunk{k: uint32(k), data: p, msgID: fmt.Sprintf("%s.%d", id, k)})
	}
	store := func(k int, msgID string) {
		t.Helper()
		msg := &nats.Msg{Subject: subj, Data: parts[k], Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, msgID)
		if _, err := s.js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []int{0, 2, 3} {
		store(k, w.pending[k].msgID)
	}
	w.recoveries = 1
	if err := w.reconcile(); err != nil {
		t.Fatal(err)
	}
	if w.stored != 1 || len(w.pending) != 3 || w.pending[0].k != 1 {
		t.Fatalf("after the repair %d chunks in place and %d pending, want 1 and 3", w.stored, len(w.pending))
	}
	if w.pending[0].msgID != id+".1" || w.pending[1].msgID == id+".2" || w.pending[2].msgID == id+".3" {
		t.Fatalf("message IDs after the repair: %s %s %s; want the deleted chunks renamed",
			w.pending[0].msgID, w.pending[1].msgID, w.pending[2].msgID)
	}
	store(1, id+".1") // the lost publish arrives late: its copy is deduplicated
	if err := w.republish(); err != nil {
		t.Fatal(err)
	}
	for len(w.pending) > 0 {
		if err := w.confirmFirst(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.verify(4); err != nil {
		t.Fatal(err)
	}
	whole := bytes.Join(parts, nil)
	sum := sha256.Sum256(whole)
	info := &jetstream.ObjectInfo{ObjectMeta: describe("files/repaired", blob.PutOptions{}, s.chunk), Bucket: s.bucket, NUID: id,
		Size: uint64(len(whole)), Chunks: 4, Digest: digestPrefix + base64.URLEncoding.EncodeToString(sum[:])}
	if _, err := s.commit("files/repaired", info); err != nil {
		t.Fatal(err)
	}
	checkRead(t, s, "files/repaired", sum)
	checkClean(t, s)

	store(2, id+".stray")
	if err := w.verify(4); err == nil {
		t.Fatal("verify passed with a stray chunk on the subject")
	}
}

// TestSeekSurvivesLeaderChange stops the stream's leader in the middle of a read, then
// seeks ahead at once, while the stream may still be electing another: the seek's probes
// may fail, and the reader then starts at the first chunk and skips, waiting for the
// leader as any read does. The bytes after the seek are right either way.
func TestSeekSurvivesLeaderChange(t *testing.T) {
	s, cluster, data := haSetup(t, theStreamLeader.killed())
	ctx := context.Background()
	if _, err := s.Put(ctx, "files/big", bytes.NewReader(data), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Get(ctx, "files/big", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, haSize/3); err != nil {
		t.Fatal(err)
	}
	if _, err := theStreamLeader.killed().stop(t, s, cluster, rc); err != nil {
		t.Fatal(err)
	}
	const at = haSize - haSize/4
	if _, err := rc.(io.Seeker).Seek(at, io.SeekStart); err != nil {
		t.Fatalf("seek across a leader change: %v", err)
	}
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read after a seek across a leader change: %v", err)
	}
	if !bytes.Equal(got, data[at:]) {
		t.Fatalf("read %d bytes after the seek, want %d (or they differ)", len(got), len(data)-at)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, s)
	checkClean(t, s)
}
