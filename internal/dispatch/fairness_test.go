package dispatch_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
)

// TestFairAcrossAPINodes: SKRIP_RUNS_PER_USER holds for the cluster, not per node, and
// the cluster serves users in turn. ada sends 70 runs at once, half to each of two API
// nodes: exactly 8 are admitted, the rest get 429. bo's run, sent after, is admitted
// and, with one worker slot in the cluster, starts right after ada's first run rather
// than after her eight (on the stream, first in first out, it would be last).
func TestFairAcrossAPINodes(t *testing.T) {
	c := newCluster(t)
	one := c.node(t, 0)
	two := c.node(t, 1) // the cluster's only worker slot
	ctx := context.Background()
	if _, _, err := one.Admin.CreateTool(ctx, "counter", "Counter", "", counterTool, true); err != nil {
		t.Fatal(err)
	}
	_, ada := one.User(t, "ada", "user")
	_, bo := one.User(t, "bo", "user")

	var mu sync.Mutex
	var admitted []client.Run
	refused := 0
	var wg sync.WaitGroup
	for i := range 70 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := one
			if i%2 == 1 {
				node = two
			}
			r, err := node.Client(t, ada.Token).RunFiles(ctx, "counter", nil, map[string]any{"sleep": 1}, 0)
			mu.Lock()
			defer mu.Unlock()
			var apiErr *client.Error
			switch {
			case err == nil:
				admitted = append(admitted, r)
			case errors.As(err, &apiErr) && apiErr.Status == 429 && apiErr.Code == "rate_limited":
				refused++
			default:
				t.Errorf("a run past the cap: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(admitted) != 8 || refused != 62 {
		t.Fatalf("70 runs at once on two nodes: %d admitted, %d refused; want 8 and 62", len(admitted), refused)
	}
	other, err := one.Client(t, bo.Token).RunFiles(ctx, "counter", nil, map[string]any{"sleep": 1}, 0)
	if err != nil {
		t.Fatalf("another user's run while ada is at the cap: %v", err)
	}

	type started struct {
		at   time.Time
		user string
	}
	var order []started
	for _, r := range append(admitted, other) {
		done, err := two.Client(t, one.AdminToken).WaitRun(ctx, r)
		if err != nil || done.Status != "succeeded" || done.StartedAt == nil {
			t.Fatalf("run %s: %+v, %v", r.RunID, done, err)
		}
		user := "ada"
		if done.UserID == bo.ID {
			user = "bo"
		}
		order = append(order, started{*done.StartedAt, user})
	}
	sort.Slice(order, func(i, j int) bool { return order[i].at.Before(order[j].at) })
	var users []string
	for _, o := range order {
		users = append(users, o.user)
	}
	if users[1] != "bo" {
		t.Errorf("the runs started in the order %v; want bo's second, right after ada's first", users)
	}
}

// TestSweepSendsAgain: a run the scheduler marked sent whose message never reached the
// stream (its node died between the two) is not lost: the sweep holds it again, and the
// scheduler sends it to the next worker with a free slot.
func TestSweepSendsAgain(t *testing.T) {
	c := newCluster(t)
	b := c.node(t, 0) // no worker yet: the run waits in the database
	ctx := context.Background()
	if _, _, err := b.Admin.CreateTool(ctx, "counter", "Counter", "", counterTool, true); err != nil {
		t.Fatal(err)
	}
	ubc, _ := b.User(t, "ulla", "user")
	r, err := ubc.RunFiles(ctx, "counter", nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Its scheduler marked it sent, a while ago, and stopped before publishing it.
	if ok, err := b.App.Store.MarkDispatched(ctx, r.RunID, true, time.Now().Add(-5*time.Minute)); err != nil || !ok {
		t.Fatalf("marking the run sent: %v, %v", ok, err)
	}
	fake := newFakeWorker(t, c.nats)
	if id, attempt, answer := fake.claim(t); id != r.RunID || attempt != 1 || answer != protocol.Go {
		t.Fatalf("fake claim = %s, attempt %d, %s; want %s, 1, go", id, attempt, answer, r.RunID)
	}
}
