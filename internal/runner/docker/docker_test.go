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

func newRunner(t *testing.T) runner.Runner {
	t.Helper()
	r, err := New(context.Background(), Config{Image: DefaultImage(), Server: t.Name()}, slog.New(slog.DiscardHandler))
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
