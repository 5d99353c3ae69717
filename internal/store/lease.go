package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
)

// Lease is a named lock that at most one process among those sharing the database holds,
// for work that must run once per installation rather than once per node (the janitor).
//
// On PostgreSQL it is a session-level advisory lock held on a connection pinned out of the
// pool: the lock lives exactly as long as that connection, so a node that stops or dies
// frees it when its connection closes, with no clock and no renewal. On SQLite the
// database is one machine's file, and the lease is always held.
type Lease struct {
	st   *Store
	name string

	mu       sync.Mutex
	conn     *sql.Conn // holds the lock; nil while this process does not
	released bool
}

// Lease returns the lease called name, not taken yet: Held takes it when it is free.
func (s *Store) Lease(name string) *Lease {
	return &Lease{st: s, name: name}
}

// leaseLock takes the lock of a lease without waiting. Its key is the pair (schema, name),
// so that installations in separate schemas of one database never share a lease. The
// two-key form is a keyspace of its own: goose's migration lock and the sandbox locks
// use one bigint key.
const leaseLock = "SELECT pg_try_advisory_lock(hashtext(coalesce(current_schema(), '')), hashtext($1))"

// leaseKeepalive makes PostgreSQL probe the lock's connection after 30 s of silence, and
// give up after three unanswered probes 10 s apart. A holder whose machine vanishes
// without closing its connection then loses the lease within about a minute, instead of
// the two hours and more of the system's TCP defaults.
const leaseKeepalive = "SELECT set_config('tcp_keepalives_idle', '30', false), set_config('tcp_keepalives_interval', '10', false), set_config('tcp_keepalives_count', '3', false)"

// Held reports whether this process holds the lease now, taking it when it is free. A
// lease already held is confirmed first with SELECT 1 on its connection; if that
// connection died, the lock went with it, and Held tries to take the lease again on a new
// one. An error means the database could not tell; the lease then counts as not held.
// After Release, Held is always false.
func (l *Lease) Held(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return false, nil
	}
	if l.st.dialect != Postgres {
		return true, nil
	}
	if l.conn != nil {
		var one int
		err := l.conn.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		if err == nil {
			return true, nil
		}
		// Whatever went wrong, this session may no longer be trusted to hold the lock:
		// closing it makes sure it does not.
		l.drop()
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	return l.acquire(ctx)
}

// acquire tries to take the lock on a connection of its own.
func (l *Lease) acquire(ctx context.Context) (bool, error) {
	conn, err := l.st.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, leaseLock, l.name).Scan(&ok); err != nil {
		// The lock may have been taken with the answer lost: the session goes.
		discard(conn)
		return false, err
	}
	if !ok {
		conn.Close() // back to the pool: it holds nothing
		return false, nil
	}
	// Best effort: a server that refuses the keepalive settings keeps its own, and the
	// lease still holds.
	conn.ExecContext(ctx, leaseKeepalive)
	l.conn = conn
	return true, nil
}

// Release gives the lease up for good: the connection that holds the lock is closed, so
// another process can take the lease at once, and Held answers false from then on. It is
// safe to call more than once.
func (l *Lease) Release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released = true
	if l.conn != nil {
		l.drop()
	}
}

// drop closes the lease's connection, and with it the lock.
func (l *Lease) drop() {
	discard(l.conn)
	l.conn = nil
}

// discard closes conn's session instead of returning it to the pool, where it would go on
// holding whatever session locks it took. Reporting driver.ErrBadConn from Raw is how
// database/sql is told to close a connection.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}
