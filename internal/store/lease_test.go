package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestLeaseSQLite: on SQLite (one machine) the lease is always held, by every store on
// the file, until it is released.
func TestLeaseSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "skrip.db")
	a, b := openAt(t, "", path), openAt(t, "", path)
	la, lb := a.Lease("janitor"), b.Lease("janitor")
	for _, l := range []*Lease{la, lb, la} {
		if held, err := l.Held(ctx); !held || err != nil {
			t.Fatalf("Held = %v, %v; want true", held, err)
		}
	}
	la.Release()
	if held, err := la.Held(ctx); held || err != nil {
		t.Fatalf("Held after Release = %v, %v; want false", held, err)
	}
}

// TestLeasePostgres: of two stores on one PostgreSQL schema only one holds a lease; the
// other takes it once the holder releases it or its connection dies (its backend
// terminated, as when its node crashes), and a released lease is never taken again. Other
// names and other schemas have leases of their own.
func TestLeasePostgres(t *testing.T) {
	ctx := context.Background()
	url := testutil.PostgresURL(t)
	a, b := openAt(t, url, ""), openAt(t, url, "")
	held := func(l *Lease) bool {
		t.Helper()
		ok, err := l.Held(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	la, lb := a.Lease("janitor"), b.Lease("janitor")
	if !held(la) {
		t.Fatal("the first store did not take a free lease")
	}
	if held(lb) {
		t.Fatal("the second store took a lease the first holds")
	}
	if !held(la) {
		t.Fatal("the holder lost its lease on asking again")
	}
	if !held(b.Lease("dispatch")) {
		t.Fatal("a lease of another name was not free")
	}
	if other := openAt(t, testutil.PostgresURL(t), ""); !held(other.Lease("janitor")) {
		t.Fatal("the janitor lease of another schema was not free")
	}
	var idle string
	if err := la.conn.QueryRowContext(ctx, "SHOW tcp_keepalives_idle").Scan(&idle); err != nil || idle != "30" {
		t.Errorf("tcp_keepalives_idle of the lease's connection = %q, %v; want 30", idle, err)
	}

	la.Release()
	if !held(lb) {
		t.Fatal("the lease was not taken over after its holder released it")
	}
	if held(la) {
		t.Fatal("a released lease was taken again")
	}

	// lb's node crashes: its backend goes, and the lock with it.
	lc := a.Lease("janitor")
	if held(lc) {
		t.Fatal("a third lease took the lock lb holds")
	}
	var pid int
	if err := lb.conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := a.db.ExecContext(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !held(lc) {
		if time.Now().After(deadline) {
			t.Fatal("the lease was not taken over within 10 s of its holder's backend ending")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ok, _ := lb.Held(ctx); ok {
		t.Fatal("the holder whose connection died still holds the lease")
	}
	// Its connection gone, lb takes the lease again on a new one once it is free.
	lc.Release()
	// The lock goes when lc's backend ends, a moment after its connection closes.
	deadline = time.Now().Add(10 * time.Second)
	for !held(lb) {
		if time.Now().After(deadline) {
			t.Fatal("the lease was not taken again on a new connection after the old one died")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func openAt(t *testing.T, url, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
