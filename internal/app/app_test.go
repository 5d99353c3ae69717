package app_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/app"
	"github.com/skrip-dev/skrip/internal/apptest"
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
