package dispatch

import (
	"errors"
	"testing"

	"github.com/skrip-dev/skrip/internal/dispatch/protocol"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
)

// TestBoxErrAcrossTheWire: a worker's budget refusal reaches the API node's services as
// sandbox.ErrBudget (507), with the worker's words and numbers, though the worker names
// it with protocol.ErrBudget; the runner's errors arrive as themselves.
func TestBoxErrAcrossTheWire(t *testing.T) {
	cases := []struct{ sent, want error }{
		{protocol.ErrBudget, sandbox.ErrBudget},
		{runner.ErrNoSpace, runner.ErrNoSpace},
		{runner.ErrNoBox, runner.ErrNoBox},
	}
	for _, c := range cases {
		err := boxErr(protocol.BoxErrorOf(errs.New(c.sent, map[string]any{"budget_bytes": 7}, "no room for %s", "it")), "w1")
		var e *errs.Error
		if !errors.Is(err, c.want) || !errors.As(err, &e) || e.Details["budget_bytes"] != 7 || err.Error() != "no room for it" {
			t.Errorf("%v arrives as %v (%#v), want %v with its details", c.sent, err, err, c.want)
		}
	}
	if err := boxErr(protocol.BoxErrorOf(errors.New("the disk broke")), "w1"); err.Error() != "worker w1: the disk broke" {
		t.Errorf("an error for the log arrives as %q", err)
	}
}
