package sandbox_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/config"
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

// TestSandboxOnAnotherServer: two servers share one database. A sandbox is used, deleted
// and expired only by the server that holds its box; the other refuses and leaves both
// the record and the box alone, so nothing is left running unaccounted for.
func TestSandboxOnAnotherServer(t *testing.T) {
	cfgA := apptest.Config(t, apptest.Backends[1])
	cfgB := cfgA
	cfgB.DataDir = t.TempDir()
	ctx := context.Background()
	open := func(cfg config.Config) *app.App {
		a, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
		if errors.Is(err, runner.ErrUnavailable) {
			testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap python3")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			a.Sandboxes.DestroyAll(context.Background())
			a.Close()
		})
		return a
	}
	a, b := open(cfgA), open(cfgB)
	admin, err := a.Store.UserByName(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := a.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{IdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sandboxes.Exec(ctx, admin, sb.ID, sandbox.ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, sandbox.ErrElsewhere) {
		t.Errorf("exec through the other server: %v, want ErrElsewhere", err)
	}
	if err := b.Sandboxes.Delete(ctx, admin, sb.ID); !errors.Is(err, sandbox.ErrElsewhere) {
		t.Errorf("delete through the other server: %v, want ErrElsewhere", err)
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := b.Sandboxes.Get(ctx, admin, sb.ID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("an idle sandbox through the other server: %v, want not found", err)
	}
	if n, err := b.Sandboxes.Expire(ctx); n != 0 || err != nil {
		t.Errorf("the other server expired %d sandboxes (%v)", n, err)
	}
	if _, err := a.Store.Sandbox(ctx, sb.ID); err != nil {
		t.Fatalf("the other server removed the record: %v", err)
	}
	if n, err := a.Sandboxes.Expire(ctx); n != 1 || err != nil {
		t.Errorf("the holding server expired %d sandboxes (%v), want 1", n, err)
	}
	if boxes, _ := a.Runner.Boxes(ctx); len(boxes) != 0 {
		t.Errorf("the holding server still has %v", boxes)
	}
}

// TestLostBoxIsCleanedUp: a box the runner no longer knows as a sandbox (its spec is
// gone) answers 404, and what is left of it goes with its record.
func TestLostBoxIsCleanedUp(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	admin, err := env.App.Store.UserByName(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := env.App.Sandboxes.Create(ctx, admin, sandbox.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(env.Config.DataDir, "work", "bwrap", "sandboxes", sb.ID)
	if err := os.Remove(filepath.Join(dir, "box.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Sandboxes.Exec(ctx, admin, sb.ID, sandbox.ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("exec in a lost box: %v, want not found", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lost box's directory is left: %v", err)
	}
	if _, err := env.App.Store.Sandbox(ctx, sb.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the lost box's record is left: %v", err)
	}
}
