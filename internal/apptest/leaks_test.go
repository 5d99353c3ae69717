package apptest

import "testing"

// TestInternalNames: the leak check finds the drivers' and stores' names, and not the
// same letters inside an id (a flaky failure once: run r_01M8AT3SYA3M1B6GK03DWFGA6D's page
// was taken for a pgx leak because an id on it held "PGX").
func TestInternalNames(t *testing.T) {
	for _, s := range []string{"pgx: conn closed", "failed: pgx", "pgconn.PgError", "sql: no rows in result set", "nats: timeout",
		"panic: runtime error", "/x/skrip/internal/store/runs.go:12"} {
		if !internalNames.MatchString(s) {
			t.Errorf("the leak check misses %q", s)
		}
	}
	for _, s := range []string{"/runs/r_01M8AT3SYA3PGXB6GK03DWFGA6", "v_01PGX8ARYPP1D7TF2BS0DJKMW4", "csrf abcPGXdef"} {
		if internalNames.MatchString(s) {
			t.Errorf("the leak check takes %q for a leak", s)
		}
	}
}
