package app_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestBootstrapTokenIsIdempotentAcrossRestarts(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		var adminID string
		for i := range 3 {
			env := apptest.Start(t, cfg)
			me, err := env.Admin.Me(context.Background())
			if err != nil {
				t.Fatalf("restart %d: %v", i, err)
			}
			if me.Name != "admin" || me.Role != "admin" {
				t.Fatalf("restart %d: me = %+v", i, me)
			}
			if adminID == "" {
				adminID = me.ID
			} else if me.ID != adminID {
				t.Fatalf("restart %d made another admin: %s, was %s", i, me.ID, adminID)
			}
			users, err := env.Admin.Users(context.Background())
			if err != nil || len(users) != 1 {
				t.Fatalf("restart %d: users = %+v, %v; want one admin", i, users, err)
			}
			env.App.Close()
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "admin-token")); !os.IsNotExist(err) {
			t.Fatalf("with a bootstrap token no admin-token file is written (stat: %v)", err)
		}
	})
}

func TestFirstStartWritesAdminTokenFile(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.BootstrapAdminToken = ""
		env := apptest.Start(t, cfg)
		path := filepath.Join(cfg.DataDir, "admin-token")
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Fatalf("admin-token mode = %v, want 0600", st.Mode().Perm())
		}
		raw, _ := os.ReadFile(path)
		tok := strings.TrimSpace(string(raw))
		me, err := env.Client(t, tok).Me(context.Background())
		if err != nil || me.Role != "admin" {
			t.Fatalf("token from the file: %+v, %v", me, err)
		}
		env.App.Close()
		// A restart keeps the users and does not issue another token.
		os.Remove(path)
		env2 := apptest.Start(t, cfg)
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatal("a second start wrote a new admin-token although users exist")
		}
		if _, err := env2.Client(t, tok).Me(context.Background()); err != nil {
			t.Fatalf("the first token stopped working after a restart: %v", err)
		}
	})
}

func TestBootstrapRejectsShortToken(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.BootstrapAdminToken = "short"
	_, err := app.New(context.Background(), cfg, quiet)
	if err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("err = %v, want a message asking for at least 16 characters", err)
	}
}

func TestBootstrapTokenOfAnotherUserIsRefused(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	env := apptest.Start(t, cfg)
	_, u := env.User(t, "mallory", "user")
	env.App.Close()
	cfg.BootstrapAdminToken = u.Token
	_, err := app.New(context.Background(), cfg, quiet)
	if err == nil {
		t.Fatal("a user's token was accepted as the admin bootstrap token")
	}
}

// TestShutdownLetsRunsFinish: on shutdown a run that ends within the grace period
// finishes; one that does not is cancelled.
func TestShutdownLetsRunsFinish(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.ShutdownGrace = 3 * time.Second
	env := apptest.Start(t, cfg)
	ctx := context.Background()
	src := "import time, skrip_toolkit as tk\ndef run_tool(i, o):\n    time.sleep(tk.inputs()['s'])\n    return 'done'\n"
	if _, _, err := env.Admin.CreateTool(ctx, "sleep", "Sleep", "", src, true); err != nil {
		t.Fatal(err)
	}
	short, err := env.Admin.RunFiles(ctx, "sleep", nil, map[string]any{"s": 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	long, err := env.Admin.RunFiles(ctx, "sleep", nil, map[string]any{"s": 60}, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	env.App.Close()
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("shutdown took %v with a 3s grace", d)
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, filepath.Join(cfg.DataDir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for id, want := range map[string]string{short.RunID: store.StatusSucceeded, long.RunID: store.StatusCancelled} {
		r, err := st.GetRun(ctx, id)
		if err != nil || r.Status != want {
			t.Errorf("run %s: %q (%s), want %q", id, r.Status, r.ErrorSummary, want)
		}
	}
}
