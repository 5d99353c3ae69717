package dispatch_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func counter(c prometheus.Counter) float64 {
	var d dto.Metric
	c.Write(&d)
	return d.GetCounter().GetValue()
}

// TestActionRunSessionFilesByChecksum: an API node gives an action run its session files
// by checksum: it fetches them from the blob store into its cache once, and sends them
// to the work bucket without reading them again, so a run with large session files
// costs it no work in proportion to their size after the first. The worker links them
// from its own cache.
func TestActionRunSessionFilesByChecksum(t *testing.T) {
	c := newCluster(t)
	a := c.node(t, 1)
	b := c.node(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tool, _, err := b.Admin.CreateTool(ctx, "counter", "Counter", "", counterTool, true)
	if err != nil {
		t.Fatal(err)
	}
	ubc, _ := b.User(t, "ulla", "user")
	big := bytes.Repeat([]byte("x"), 32<<10) // the tool shows it in a json output, up to 96 KiB
	p := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ubc.RunFiles(ctx, "counter", []string{p}, nil, time.Minute)
	if err != nil || r.Status != "succeeded" {
		t.Fatalf("initial run: %+v, %v", r, err)
	}
	bm, am := b.App.Metrics, a.App.Metrics
	type seen struct{ fetched, hashed, sent, workerFetched float64 }
	now := func() seen {
		return seen{counter(bm.SessionCacheMisses), counter(bm.DispatchHashed), counter(bm.DispatchSent), counter(am.CacheMisses)}
	}
	rev := *r.StateRev
	var before seen
	for i := range 3 {
		if i == 1 {
			before = now()
		}
		ar, err := ubc.StartAction(ctx, tool.ID, "default", "inc", nil, rev)
		if err != nil {
			t.Fatal(err)
		}
		done, err := ubc.GetRun(ctx, ar.Run.RunID, time.Minute)
		if err != nil || done.Status != "succeeded" || done.StateRev == nil {
			t.Fatalf("action run %d: %+v, %v", i, done, err)
		}
		if v := jsonValue(t, done); fmt.Sprint(v["n"]) != fmt.Sprint(i+1) || len(toStrings(v["files"])) != 1 ||
			toStrings(v["files"])[0] != "big.txt:"+string(big) {
			t.Fatalf("action run %d saw other files", i)
		}
		rev = *done.StateRev
	}
	after := now()
	if before.fetched != 1 || after.fetched != 1 {
		t.Fatalf("the API node fetched the session file %v times after the first action, %v in all; want 1", before.fetched, after.fetched)
	}
	// Two more action runs: each sends and hashes its action.json, nothing else.
	if d := after.hashed - before.hashed; d != 2 {
		t.Fatalf("the API node read %v input files whole for their checksum in two action runs; want 2 (action.json)", d)
	}
	if d := after.sent - before.sent; d != 2 {
		t.Fatalf("the API node sent %v files to the work bucket in two action runs; want 2 (action.json)", d)
	}
	if d := after.workerFetched - before.workerFetched; d != 2 {
		t.Fatalf("the worker fetched %v files in two action runs; want 2 (action.json)", d)
	}
}
