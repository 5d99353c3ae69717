package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
		if _, err := e.svc.Lint(ctx, strings.Repeat("#", run.MaxLintSource+1)); !errors.Is(err, run.ErrLintTooLarge) {
			t.Fatalf("a source over the limit: got %v, want ErrLintTooLarge", err)
		}
		if _, _, err := e.submit(t, e.marker(30)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Lint(ctx, "x = 1\n"); !errors.Is(err, run.ErrBusy) {
			t.Fatalf("with every slot taken: got %v, want ErrBusy", err)
		}
	})
}
