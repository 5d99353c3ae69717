package dispatch_test

import (
	"testing"

	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/run/executortest"
)

// TestClusterExecutor runs the executor suite against the cluster's queue: an API node
// over PostgreSQL and an embedded nats-server, whose runs go through the stream to a
// real worker (its own, on the bubblewrap runner), with a queue of room runs. A lost
// attempt is one a fake worker claims and never finishes.
func TestClusterExecutor(t *testing.T) {
	executortest.Run(t, func(t *testing.T, room int) executortest.Env {
		c := newCluster(t)
		n := c.node(t, 1, func(cfg *config.Config) { cfg.RunnerQueue = room })
		return executortest.Env{Runs: n.App.Runs, Store: n.App.Store, Lose: func(t *testing.T) func(t *testing.T) string {
			fake := newFakeWorker(t, c.nats)
			return func(t *testing.T) string {
				id, attempt, answer := fake.claim(t)
				if attempt != 1 || answer != protocol.Go {
					t.Fatalf("the silent worker's claim of %s: attempt %d, %q", id, attempt, answer)
				}
				return id
			}
		}}
	})
}
