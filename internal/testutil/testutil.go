// Package testutil holds helpers shared by tests: the rule for skipping when a real
// component is missing (SKRIP_TEST_REQUIRE turns such a skip into a failure) and fresh
// PostgreSQL schemas for store tests.
package testutil

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// Required reports whether CI said it installed component (SKRIP_TEST_REQUIRE is a comma
// separated list, e.g. "postgres,bwrap").
func Required(component string) bool {
	for _, c := range strings.Split(os.Getenv("SKRIP_TEST_REQUIRE"), ",") {
		if strings.TrimSpace(c) == component {
			return true
		}
	}
	return false
}

// Missing skips the test because component is not available, or fails it when
// SKRIP_TEST_REQUIRE lists the component.
func Missing(t testing.TB, component, why, install string) {
	t.Helper()
	if Required(component) {
		t.Fatalf("%s is required (SKRIP_TEST_REQUIRE) but not available: %s", component, why)
	}
	t.Skipf("%s not available: %s (%s)", component, install, why)
}

// PostgresURL returns a URL for a fresh, empty schema in the database named by
// SKRIP_TEST_DATABASE_URL, dropped when the test ends. Without that variable the test is
// skipped (or fails, when postgres is required).
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv("SKRIP_TEST_DATABASE_URL")
	const install = "apt-get install postgresql, start it, and set SKRIP_TEST_DATABASE_URL=postgres://…"
	if base == "" {
		Missing(t, "postgres", "SKRIP_TEST_DATABASE_URL is empty", install)
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("SKRIP_TEST_DATABASE_URL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		Missing(t, "postgres", err.Error(), install)
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "test_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		t.Fatalf("creating schema: %v", err)
	}
	t.Cleanup(func() {
		db.Exec("DROP SCHEMA " + schema + " CASCADE")
		db.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("SKRIP_TEST_DATABASE_URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
