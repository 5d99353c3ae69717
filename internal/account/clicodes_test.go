package account_test

import (
	"context"
	"errors"
	"testing"

	"github.com/skrip-dev/skrip/internal/account"
)

// TestCLICodeFailuresSetting: SKRIP_CLI_CODE_FAILURES_PER_USER (CLILoginLimits.CodeFailures)
// is how many codes matching no login a user may enter before each further one waits:
// at 1 the second wrong code is refused with a wait (429 cli_code_throttled), where the
// default (5) still checks it; another user is not held back.
func TestCLICodeFailuresSetting(t *testing.T) {
	p := newPeople(t)
	ctx := context.Background()
	one := account.New(p.st, account.Limits{CLILogins: account.CLILoginLimits{CodeFailures: 1}})
	for _, tc := range []struct {
		name string
		svc  *account.Service
		want error
	}{{"the default", p.svc, account.ErrCLILoginNotFound}, {"a limit of 1", one, account.ErrCLICodeThrottled}} {
		if _, err := tc.svc.PendingCLILogin(ctx, p.ada, "BCDF-GHJK"); !errors.Is(err, account.ErrCLILoginNotFound) {
			t.Fatalf("%s: the first wrong code: %v", tc.name, err)
		}
		if _, err := tc.svc.PendingCLILogin(ctx, p.ada, "BCDF-GHJK"); !errors.Is(err, tc.want) {
			t.Fatalf("%s: the second wrong code: got %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := one.PendingCLILogin(ctx, p.ulf, "BCDF-GHJK"); !errors.Is(err, account.ErrCLILoginNotFound) {
		t.Fatalf("another user's wrong code: %v", err)
	}
}
