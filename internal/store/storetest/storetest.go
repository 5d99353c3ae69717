// Package storetest opens fresh stores for the tests of the services above the store
// (run, catalog, account, janitor): a SQLite file in the test's temp dir, and a fresh
// PostgreSQL schema when SKRIP_TEST_DATABASE_URL names a server.
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// Each runs fn as a subtest once per dialect, each on a fresh, migrated and empty store
// that is closed when the subtest ends. The postgres subtest skips without
// SKRIP_TEST_DATABASE_URL (and fails instead when SKRIP_TEST_REQUIRE lists postgres).
func Each(t *testing.T, fn func(t *testing.T, st *store.Store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

// SQLite returns a fresh store in a SQLite file under t.TempDir().
func SQLite(t testing.TB) *store.Store {
	t.Helper()
	return open(t, "", filepath.Join(t.TempDir(), "skrip.db"))
}

// Postgres returns a fresh store in a schema of its own (testutil.PostgresURL), dropped
// when the test ends.
func Postgres(t testing.TB) *store.Store {
	t.Helper()
	return open(t, testutil.PostgresURL(t), "")
}

func open(t testing.TB, url, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
