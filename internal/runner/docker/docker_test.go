package docker

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/runnertest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

func newRunner(t *testing.T) runner.Runner { return newPooled(t, 0) }

func newPooled(t *testing.T, size int) runner.Runner {
	t.Helper()
	r, err := New(context.Background(), Config{Image: DefaultImage(), Server: t.Name(), PoolSize: size, PoolLimits: runnertest.Limits()},
		slog.New(slog.DiscardHandler))
	if errors.Is(err, runner.ErrUnavailable) {
		testutil.Missing(t, "docker", err.Error(), "a running Docker engine and `skrip runner-image build`")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestConformance(t *testing.T) {
	runnertest.Run(t, newRunner)
}

// TestConformanceWarm runs the suite on containers from the warm pool (the suite's
// limits are the pool's, so every run but those with other limits takes a warm one).
func TestConformanceWarm(t *testing.T) {
	runnertest.Run(t, func(t *testing.T) runner.Runner { return newPooled(t, 2) })
}
