package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// resources is what each shared resource of the cluster does alone, with -clients
// callers at once.
type resources struct {
	msgBytes  int
	queue     float64            // publish + fetch + double ack cycles/s on SKRIP_RUNS
	objects   map[string]float64 // work bucket operations/s, by operation
	listSmall time.Duration      // one List of a bucket holding one object
	listBig   time.Duration      // one List with bigKeys keys (mostly delete markers)
	bigKeys   int
	workMeta  uint64  // meta subjects of the cluster's work bucket after its runs
	dbWrites  float64 // CreateRun + ClaimRun + RecordRun sets/s
	dbAll     float64 // the same with the four GetRun of a run's path
	dbCPU     time.Duration
}

// objectOps are the work bucket's operations one no-op run costs, in the order the
// report lists them: the API node's Stat of the script by checksum (Dispatch), the
// worker's Put of its report, the recording node's Get of it, and its cleanup's List
// of the attempt's prefix and Delete of the report.
var objectOps = []string{"Stat", "Put", "Get", "List", "Delete"}

func measureResources(ctx context.Context, natsURL, clusterURL string, admin *sql.DB) resources {
	var res resources
	pub, err := nats.Connect(natsURL)
	if err != nil {
		fatalf("connecting to nats-server: %v", err)
	}
	defer pub.Close()
	sub, err := nats.Connect(natsURL)
	if err != nil {
		fatalf("connecting to nats-server: %v", err)
	}
	defer sub.Close()

	log.Printf("measuring the run queue")
	res.msgBytes, res.queue = queueRate(ctx, pub, sub)
	log.Printf("measuring the work bucket")
	res.workMeta = metaSubjects(ctx, pub, "skrip-work")
	res.objects, res.listSmall, res.listBig, res.bigKeys = objectRates(ctx, pub)
	log.Printf("measuring PostgreSQL")
	res.dbWrites, res.dbAll, res.dbCPU = dbRates(ctx, clusterURL, admin)
	return res
}

// hammer calls f from -clients goroutines for -ops-duration and returns calls/s. f
// returns false when it has nothing left to do.
func hammer(what string, f func(i int) (bool, error)) float64 {
	var count atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(*opsFor)
	var once sync.Once
	for i := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				more, err := f(i)
				if err != nil {
					once.Do(func() { fatalf("%s: %v", what, err) })
				}
				if !more {
					return
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(count.Load()) / time.Since(start).Seconds()
}

// queueRate runs the queue's part of a run on the cluster's own stream and consumer
// (no worker is left to pull from them): an API node's publish with the run id as
// message id, a worker's fetch and its double ack, each side on its own connection.
func queueRate(ctx context.Context, pub, sub *nats.Conn) (int, float64) {
	pjs, _ := jetstream.New(pub)
	sjs, _ := jetstream.New(sub)
	cons, err := sjs.Consumer(ctx, protocol.Names{}.Stream(), protocol.Consumer)
	if err != nil {
		fatalf("the run queue's consumer: %v", err)
	}
	// A message as Dispatch makes it for a no-op run.
	msg := protocol.Message{Job: run.Job{Run: ids.New("r"), Tool: ids.New("t"), Env: contract.Env(contract.Manifest{}, map[string]any{}, nil),
		Memory: []byte("{}")}, Script: protocol.Input{Name: "script.py", SHA256: fmt.Sprintf("%064x", 1), Bytes: int64(len(noop))}}
	data, _ := json.Marshal(msg)
	rate := hammer("the run queue", func(int) (bool, error) {
		id := ids.New("r")
		if _, err := pjs.Publish(ctx, protocol.Names{}.JobSubject(id), data, jetstream.WithMsgID(id)); err != nil {
			return false, err
		}
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return false, err
		}
		return true, m.DoubleAck(ctx)
	})
	return len(data), rate
}

// metaSubjects counts the keys, live or deleted, whose meta message bucket holds: what
// every List reads.
func metaSubjects(ctx context.Context, nc *nats.Conn, bucket string) uint64 {
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, "OBJ_"+bucket)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter("$O."+bucket+".M.>"))
	if err != nil {
		return 0
	}
	return info.State.NumSubjects
}

// objectRates measures each operation a run costs the work bucket on a bucket of its
// own, with natsblob as the API nodes and workers use it, and one List alone with one
// object, then with every key the measurement left behind.
func objectRates(ctx context.Context, nc *nats.Conn) (map[string]float64, time.Duration, time.Duration, int) {
	st, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: "bench-work", Node: "bench"})
	if err != nil {
		fatalf("the bench-work bucket: %v", err)
	}
	script := protocol.CASKey(fmt.Sprintf("%064x", 2))
	if _, err := st.Put(ctx, script, bytes.NewReader([]byte(noop)), blob.PutOptions{ContentType: "application/octet-stream"}); err != nil {
		fatalf("a Put: %v", err)
	}
	listOnce := func() time.Duration {
		const k = 10
		start := time.Now()
		for range k {
			if _, err := st.List(ctx, "work/runs/r0/a1/"); err != nil {
				fatalf("a List: %v", err)
			}
		}
		return time.Since(start) / k
	}
	small := listOnce()
	rates := map[string]float64{}
	rates["List"] = hammer("List", func(int) (bool, error) {
		_, err := st.List(ctx, "work/runs/r0/a1/")
		return true, err
	})
	// A report as a worker leaves it for a no-op run: its logs, result and limits.
	report, _ := json.Marshal(run.Report{Artifacts: []run.Artifact{}})
	report = append(report, bytes.Repeat([]byte(" "), max(0, 400-len(report)))...)
	var mu sync.Mutex
	var keys []string
	rates["Stat"] = hammer("Stat", func(int) (bool, error) {
		_, err := st.Stat(ctx, script)
		return true, err
	})
	rates["Put"] = hammer("Put", func(int) (bool, error) {
		key := protocol.AttemptPrefix(ids.New("r"), 1) + "report.json"
		_, err := st.Put(ctx, key, bytes.NewReader(report), blob.PutOptions{ContentType: "application/json"})
		mu.Lock()
		keys = append(keys, key)
		mu.Unlock()
		return true, err
	})
	rates["Get"] = hammer("Get", func(int) (bool, error) {
		rc, _, err := st.Get(ctx, keys[rand.IntN(len(keys))], 0, -1)
		if err != nil {
			return false, err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		return true, err
	})
	next := atomic.Int64{}
	rates["Delete"] = hammer("Delete", func(int) (bool, error) {
		i := next.Add(1) - 1
		if int(i) >= len(keys) {
			return false, nil
		}
		return true, st.Delete(ctx, keys[i])
	})
	big := listOnce()
	rates["List, big"] = hammer("List", func(int) (bool, error) {
		_, err := st.List(ctx, "work/runs/r0/a1/")
		return true, err
	})
	return rates, small, big, len(keys) + 1
}

// workKeys counts the keys of the cluster's work bucket.
func workKeys(ctx context.Context, natsURL string) uint64 {
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return 0
	}
	defer nc.Close()
	return metaSubjects(ctx, nc, "skrip-work")
}

// age puts and deletes in the cluster's work bucket what k runs put and delete there:
// each one's report. Before the fix of 2026-11-26 every delete left a marker for good,
// which each later record's List read; the bucket now keeps none.
func age(ctx context.Context, natsURL string, k int) {
	nc, err := nats.Connect(natsURL)
	if err != nil {
		fatalf("connecting to nats-server: %v", err)
	}
	defer nc.Close()
	st, err := natsblob.New(ctx, nc, natsblob.Config{Bucket: "skrip-work", Node: "bench", DropMarkers: true}) // as the cluster's nodes open it
	if err != nil {
		fatalf("the work bucket: %v", err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(k) {
				key := protocol.AttemptPrefix(ids.New("r"), 1) + "report.json"
				if _, err := st.Put(ctx, key, bytes.NewReader([]byte("{}")), blob.PutOptions{ContentType: "application/json"}); err != nil {
					fatalf("a Put: %v", err)
				}
				if err := st.Delete(ctx, key); err != nil {
					fatalf("a Delete: %v", err)
				}
			}
		}()
	}
	wg.Wait()
}

// dbRates measures the per-run transactions on the cluster's schema (its tool, version
// and user are there): CreateRun, ClaimRun and RecordRun as a run's path makes them,
// alone and with the four GetRun of that path, in sets/s; and the CPU the PostgreSQL
// backends used per set of the first kind.
func dbRates(ctx context.Context, clusterURL string, admin *sql.DB) (float64, float64, time.Duration) {
	u, _ := url.Parse(clusterURL)
	q := u.Query()
	const app = "skrip-bench-db"
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	st, err := store.Open(ctx, u.String(), "")
	if err != nil {
		fatalf("opening the cluster's database: %v", err)
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.RunFilter{Limit: 1})
	if err != nil || len(runs) == 0 {
		fatalf("a run of the cluster to copy: %v", err)
	}
	tmpl := runs[0]
	set := func(reads int) func(int) (bool, error) {
		return func(int) (bool, error) {
			r := tmpl
			r.ID, r.Status, r.Attempts, r.Worker, r.CreatedAt = ids.New("r"), store.StatusQueued, 0, "", time.Now()
			r.StartedAt, r.FinishedAt, r.Outputs, r.Stdout, r.Stderr = nil, nil, "[]", nil, nil
			if err := st.CreateRun(ctx, r); err != nil {
				return false, err
			}
			if ok, err := st.ClaimRun(ctx, r.ID, 1, "bench", time.Now()); err != nil || !ok {
				return false, fmt.Errorf("claim: %v %v", ok, err)
			}
			for range reads {
				if _, err := st.GetRun(ctx, r.ID); err != nil {
					return false, err
				}
			}
			fin := time.Now()
			r.Status, r.FinishedAt, r.Outputs = store.StatusSucceeded, &fin, tmpl.Outputs
			if _, ok, err := st.RecordRun(ctx, r, 1, nil); err != nil || !ok {
				return false, fmt.Errorf("record: %v %v", ok, err)
			}
			return true, nil
		}
	}
	hammer("warm-up", set(0)) // the pool's connections
	before := pgBackends(ctx, admin, app)
	start := time.Now()
	writes := hammer("CreateRun, ClaimRun, RecordRun", set(0))
	sets := writes * time.Since(start).Seconds()
	cpuPerSet := time.Duration(float64(pgDelta(before, pgBackends(ctx, admin, app))) / sets)
	all := hammer("the same and four GetRun", set(4))
	return writes, all, cpuPerSet
}
