package sandbox_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestSandboxesSurviveARestart stops a server and starts another on the same data dir: a
// sandbox whose box survived is there with its files; a record whose box is gone, and a
// box without a record, are both cleaned up.
func TestSandboxesSurviveARestart(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		ctx := context.Background()
		log := slog.New(slog.DiscardHandler)
		start := func() *app.App {
			a, err := app.New(ctx, cfg, log)
			if errors.Is(err, runner.ErrUnavailable) {
				testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap python3")
			}
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		a := start()
		admin, err := a.Store.UserByName(ctx, "admin")
		if err != nil {
			t.Fatal(err)
		}
		kept, err := a.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		lost, err := a.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Sandboxes.WriteFile(ctx, admin, kept.ID, "notes/today.txt", strings.NewReader("still here")); err != nil {
			t.Fatal(err)
		}
		orphan := "sb_orphan"
		if err := a.Runner.CreateBox(ctx, runner.BoxSpec{ID: orphan, Limits: app.SandboxConfig(cfg).Limits, WorkspaceBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		if err := a.Runner.RemoveBox(ctx, lost.ID); err != nil {
			t.Fatal(err)
		}
		a.Close()

		a = start()
		t.Cleanup(func() {
			a.Sandboxes.DestroyAll(context.Background())
			a.Close()
		})
		rc, _, err := a.Sandboxes.ReadFile(ctx, admin, kept.ID, "notes/today.txt")
		if err != nil {
			t.Fatalf("the kept sandbox after a restart: %v", err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != "still here" {
			t.Errorf("its file holds %q", got)
		}
		if _, err := a.Sandboxes.Get(ctx, admin, lost.ID); !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("a sandbox whose box was lost: %v, want not found", err)
		}
		if _, err := a.Store.Sandbox(ctx, lost.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the lost sandbox's record is still there: %v", err)
		}
		boxes, _ := a.Runner.Boxes(ctx)
		if len(boxes) != 1 || boxes[0] != kept.ID {
			t.Errorf("the runner holds %v after the restart, want only %s", boxes, kept.ID)
		}
	})
}
