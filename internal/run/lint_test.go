package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// A lint is admitted as a syntax check is: with every run slot taken it does not wait
// behind the runs, it answers ErrBusy at once; and a source over the limit is refused
// before it reaches a sandbox.
func TestLintAdmission(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, 1, 0)
		ctx := context.Background()
		if _, err := e.svc.Lint(ctx, "u_1", strings.Repeat("#", run.MaxLintSource+1)); !errors.Is(err, run.ErrLintTooLarge) {
			t.Fatalf("a source over the limit: got %v, want ErrLintTooLarge", err)
		}
		if _, _, err := e.submit(t, e.marker(30)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Lint(ctx, "u_1", "x = 1\n"); !errors.Is(err, run.ErrBusy) {
			t.Fatalf("with every slot taken: got %v, want ErrBusy", err)
		}
	})
}

// One author cannot take every lint slot: with LintsPerUser of theirs running, their
// next lint is refused at once (ErrUserLints, with a wait to retry after) while
// another author's lint still runs; once one of theirs ends, theirs runs again.
func TestLintPerUser(t *testing.T) {
	st := storetest.SQLite(t)
	e := newEnv(t, st, 2*(run.LintsPerUser+1), 0) // lint slots: LintsPerUser+1
	ctx := context.Background()
	var held []func()
	for range run.LintsPerUser {
		release, err := e.svc.AdmitLint("u_1")
		if err != nil {
			t.Fatalf("lint %d of u_1: %v", len(held)+1, err)
		}
		held = append(held, release)
	}
	_, err := e.svc.Lint(ctx, "u_1", "x = 1\n")
	if !errors.Is(err, run.ErrUserLints) {
		t.Fatalf("u_1 with %d lints running: got %v, want ErrUserLints", run.LintsPerUser, err)
	}
	if errs.RetryAfterOf(err) <= 0 {
		t.Errorf("ErrUserLints without a wait to retry after: %v", err)
	}
	if d, err := e.svc.Lint(ctx, "u_2", "import os\n"); err != nil || len(d) != 1 {
		t.Fatalf("another author's lint beside them: got %v, %v; want one diagnostic", d, err)
	}
	held[0]()
	if d, err := e.svc.Lint(ctx, "u_1", "x = 1\n"); err != nil || len(d) != 0 {
		t.Fatalf("u_1 after one of theirs ended: got %v, %v; want a clean lint", d, err)
	}
	for _, release := range held[1:] {
		release()
	}
}

// SKRIP_LINTS_PER_USER (Config.LintsPerUser) sets the cap: at 1, a user's second lint
// while the first runs is refused, naming 1, while there are lint slots to spare and
// another author's lint runs.
func TestLintPerUserSetting(t *testing.T) {
	st := storetest.SQLite(t)
	e := newEnvWith(t, st, 2*(run.LintsPerUser+1), 0, func(c *run.Config) { c.LintsPerUser = 1 })
	ctx := context.Background()
	release, err := e.svc.AdmitLint("u_1")
	if err != nil {
		t.Fatalf("the first lint of u_1: %v", err)
	}
	defer release()
	_, err = e.svc.Lint(ctx, "u_1", "x = 1\n")
	if !errors.Is(err, run.ErrUserLints) || !strings.Contains(err.Error(), "you have 1 lints running") {
		t.Fatalf("u_1's second lint with a cap of 1: got %v, want ErrUserLints naming 1", err)
	}
	if d, err := e.svc.Lint(ctx, "u_2", "import os\n"); err != nil || len(d) != 1 {
		t.Fatalf("another author's lint beside it: got %v, %v; want one diagnostic", d, err)
	}
}
