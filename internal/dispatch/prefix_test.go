package dispatch_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// installation makes a node's settings those of an installation whose only NATS setting
// is SKRIP_NATS_PREFIX=prefix (read as `skrip serve` reads it: the buckets follow it), and
// names its worker w1 whatever the installation, so that two installations' workers
// have the same id.
func installation(t *testing.T, prefix string) func(*config.Config) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	l, err := config.Load(fs, func(k string) string {
		if k == "SKRIP_NATS_PREFIX" {
			return prefix
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(c *config.Config) {
		c.NATSPrefix, c.NATSBucket, c.NATSWorkBucket = l.NATSPrefix, l.NATSBucket, l.NATSWorkBucket
		c.WorkerID = "w1"
	}
}

// TestTwoInstallationsShareNATS: two installations, each with its own database, share
// one NATS server and account, one without a prefix (as every installation was before
// SKRIP_NATS_PREFIX) and one with the prefix b. Neither sees the other's runs, workers,
// secret or buckets: a run of b waits while a's idle worker (with b's worker's id) runs
// a's runs, and runs once b has a worker; then both run runs at the same time.
func TestTwoInstallationsShareNATS(t *testing.T) {
	url := testutil.NATSServer(t)
	a := &cluster{nats: url, db: testutil.PostgresURL(t)}
	b := &cluster{nats: url, db: testutil.PostgresURL(t)}
	aw := a.node(t, 1, installation(t, ""))
	bAPI := b.node(t, 0, installation(t, "b"))
	if aw.Config.NATSWorkBucket != "skrip-work" || bAPI.Config.NATSWorkBucket != "b-skrip-work" || bAPI.Config.NATSBucket != "b-skrip-files" {
		t.Fatalf("work buckets %q and %q, b's files bucket %q", aw.Config.NATSWorkBucket, bAPI.Config.NATSWorkBucket, bAPI.Config.NATSBucket)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, _, err := aw.Admin.CreateTool(ctx, "counter", "Counter", "", counterTool, true); err != nil {
		t.Fatal(err)
	}
	ua, _ := aw.User(t, "ulla", "user")
	ub, r := queuedRun(t, bAPI) // b has no worker yet

	// a's worker runs a's run, and leaves b's alone.
	ra, err := ua.RunFiles(ctx, "counter", writeFiles(t, map[string]string{"a.txt": "A"}), nil, time.Minute)
	if err != nil || ra.Status != "succeeded" {
		t.Fatalf("installation a's run: %+v, %v", ra, err)
	}
	if got, _ := ub.GetRun(ctx, r.RunID, 0); got.Status != "queued" {
		t.Fatalf("installation b's run, with no worker of b's: %s, want queued", got.Status)
	}

	// b's worker, with the same id as a's, runs b's run; then each installation runs
	// one at once.
	b.node(t, 1, installation(t, "b"))
	if rb, err := ub.GetRun(ctx, r.RunID, time.Minute); err != nil || rb.Status != "succeeded" {
		t.Fatalf("installation b's run once b has a worker: %+v, %v", rb, err)
	}
	type result struct {
		name string
		r    client.Run
		err  error
	}
	done := make(chan result, 2)
	for name, c := range map[string]*client.Client{"a": ua, "b": ub} {
		go func() {
			r, err := c.RunFiles(ctx, "counter", writeFiles(t, map[string]string{name + ".txt": name}), map[string]any{"sleep": 1}, time.Minute)
			done <- result{name, r, err}
		}()
	}
	for range 2 {
		res := <-done
		if res.err != nil || res.r.Status != "succeeded" {
			t.Fatalf("installation %s's run beside the other's: %+v, %v", res.name, res.r, res.err)
		}
		if v := jsonValue(t, res.r); len(toStrings(v["files"])) != 1 || toStrings(v["files"])[0] != res.name+".txt:"+res.name {
			t.Fatalf("installation %s's run saw %v", res.name, v)
		}
	}

	// Each installation's assets are its own, on the one server.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	secrets := map[string][]byte{}
	for _, prefix := range []string{"", "b"} {
		n, _ := protocol.NewNames(prefix)
		if _, err := js.Consumer(ctx, n.Stream(), protocol.Consumer); err != nil {
			t.Errorf("prefix %q: the queue %s: %v", prefix, n.Stream(), err)
		}
		reg, err := js.KeyValue(ctx, n.Registry())
		if err != nil {
			t.Fatal(err)
		}
		if keys, err := reg.Keys(ctx); err != nil || len(keys) != 1 || keys[0] != "w1" {
			t.Errorf("prefix %q: the registry %s holds %v, %v; want its one worker", prefix, n.Registry(), keys, err)
		}
		kv, err := js.KeyValue(ctx, n.Keys())
		if err != nil {
			t.Fatal(err)
		}
		e, err := kv.Get(ctx, "inputs")
		if err != nil {
			t.Fatalf("prefix %q: the secret in %s: %v", prefix, n.Keys(), err)
		}
		secrets[prefix] = e.Value()
		for _, bucket := range []string{n.Bucket("skrip-files"), n.Bucket("skrip-work"), protocol.WorkerBucket(n.Bucket("skrip-work"), "w1")} {
			if _, err := js.ObjectStore(ctx, bucket); err != nil {
				t.Errorf("prefix %q: the bucket %s: %v", prefix, bucket, err)
			}
		}
	}
	if bytes.Equal(secrets[""], secrets["b"]) {
		t.Error("the two installations seal their runs' files with one secret")
	}
}
