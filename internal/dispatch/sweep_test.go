package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

// TestCollectWork: the work bucket keeps a run's files for a day and what an attempt
// left for an hour; nothing younger goes.
func TestCollectWork(t *testing.T) {
	work, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	ctx := context.Background()
	for _, k := range []string{protocol.CASKey(strings.Repeat("a", 64)), protocol.AttemptPrefix("r_1", 1) + "report.json", "work/xfer/x1"} {
		if _, err := work.Put(ctx, k, strings.NewReader("x"), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	left := func() int {
		infos, _ := work.List(ctx, "work/")
		return len(infos)
	}
	for _, c := range []struct {
		after time.Duration
		want  int
	}{{30 * time.Minute, 3}, {2 * time.Hour, 1}, {25 * time.Hour, 0}} {
		if _, err := CollectWork(ctx, work, time.Now().Add(c.after)); err != nil {
			t.Fatal(err)
		}
		if n := left(); n != c.want {
			t.Fatalf("%v later: %d objects left, want %d", c.after, n, c.want)
		}
	}
}
