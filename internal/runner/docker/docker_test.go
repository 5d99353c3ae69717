package docker

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"

	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/runnertest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

func newRunner(t *testing.T) runner.Engine { return newPooled(t, 0) }

// testImage is the image the tests run: SKRIP_TEST_RUNNER_IMAGE, or this build's default.
func testImage() string { return cmp.Or(os.Getenv("SKRIP_TEST_RUNNER_IMAGE"), DefaultImage()) }

func newPooled(t *testing.T, size int) runner.Engine {
	t.Helper()
	r, err := New(context.Background(), Config{Image: testImage(), Server: t.Name(), PoolSize: size, PoolLimits: runnertest.Limits()},
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
	runnertest.Run(t, func(t *testing.T) runner.Runner { return newRunner(t) })
}

// TestConformanceWarm runs the suite on containers from the warm pool (the suite's
// limits are the pool's, so every run but those with other limits takes a warm one).
func TestConformanceWarm(t *testing.T) {
	runnertest.Run(t, func(t *testing.T) runner.Runner { return newPooled(t, 2) })
}

// TestCloseLeavesNoContainer closes a runner right after a run, while the pool is
// refilling and a warm container is being parked for the next run: neither the run's
// container nor any waiting one may stay behind.
func TestCloseLeavesNoContainer(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"pool", Config{PoolSize: 2, PoolLimits: runnertest.Limits()}},
		{"warm", Config{WarmMemory: 1 << 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := "close-test-" + t.Name()
			cfg := tc.cfg
			cfg.Image, cfg.Server = testImage(), server
			r, err := New(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if errors.Is(err, runner.ErrUnavailable) {
				testutil.Missing(t, "docker", err.Error(), "a running Docker engine and `skrip runner-image build`")
			}
			if err != nil {
				t.Fatal(err)
			}
			o := runnertest.Exec(t, r, "import json\ndef run_tool(i, o):\n    return 'ok'\n", nil, nil, runnertest.Limits())
			if o.Parsed.Status != "succeeded" {
				t.Fatalf("run: %+v", o.Result)
			}
			r.Close()
			cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
			if err != nil {
				t.Fatal(err)
			}
			defer cli.Close()
			list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
				Filters: make(client.Filters).Add("label", LabelServer+"="+ServerLabel(server))})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range list.Items {
				t.Errorf("container %s (%s) left after Close", c.ID[:12], c.State)
			}
		})
	}
}

// TestRuntime: a tool in the runner image gets the runtime of docs/spec.md §5b (Python 3.13,
// WeasyPrint, pandoc, python-docx, openpyxl, pandas, pypdf, Jinja2, pypandoc,
// rsvg-convert, the fonts), under the run's user and seccomp profile.
func TestRuntime(t *testing.T) {
	runnertest.RuntimePackages(t, newRunner(t))
}

func TestSandboxes(t *testing.T) {
	runnertest.RunSandboxes(t, func(t *testing.T) runner.Sandboxes { return newRunner(t) })
}
