package janitor_test

import (
	"context"
	"database/sql"
	"log/slog"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// Messages of the janitor that the lease test counts.
const (
	passed         = "janitor pass"
	skippedPass    = "skipping the janitor pass: another server holds the janitor lease"
	skippedAtStart = "skipping the leftovers at start: another server holds the janitor lease"
)

// TestOneJanitorPerDatabase: two servers on one PostgreSQL database run one janitor
// between them. Only the server holding the lease removes leftovers at start and passes;
// the other skips its ticks. When the holder crashes (its goroutines stop and its
// connections close) the other takes over within an interval, and when that one stops
// cleanly (Close) the first, started again, takes over in turn.
func TestOneJanitorPerDatabase(t *testing.T) {
	ctx := context.Background()
	base := testutil.PostgresURL(t)
	const interval = 100 * time.Millisecond
	var servers [2]*server
	for i := range servers {
		servers[i] = newServer(t, base, i)
	}
	a, b := servers[0], servers[1]

	a.janitor.Leftovers(ctx)
	b.janitor.Leftovers(ctx)
	if a.log.count(skippedAtStart) != 0 || b.log.count(skippedAtStart) != 1 {
		t.Fatalf("leftovers at start skipped %d and %d times; want only by the second server",
			a.log.count(skippedAtStart), b.log.count(skippedAtStart))
	}

	stopA, stopB := a.run(interval), b.run(interval)
	waitFor(t, "three passes of the holder", func() bool { return a.log.count(passed) >= 3 })
	if n := b.log.count(passed); n != 0 {
		t.Fatalf("the server without the lease passed %d times", n)
	}
	if b.log.count(skippedPass) == 0 {
		t.Fatal("the server without the lease never skipped a pass")
	}

	// The holder crashes: its janitor stops and PostgreSQL sees its connections close.
	stopA()
	a.crash(t, base)
	expired := expiredSignIn(t, b.st)
	took := time.Now()
	waitFor(t, "the other server to take over", func() bool { return b.log.count(passed) > 0 })
	t.Logf("took over %v after the holder's crash (interval %v)", time.Since(took).Round(time.Millisecond), interval)
	waitFor(t, "the expired sign-in to go", func() bool {
		_, err := account.New(b.st, account.Limits{}).SessionUser(ctx, expired)
		return err != nil
	})

	// The first server starts its janitor again: the lease is taken, so it skips.
	skips := a.log.count(skippedPass)
	stopA = a.run(interval)
	waitFor(t, "the restarted server to skip", func() bool { return a.log.count(skippedPass) > skips })
	passes := a.log.count(passed)
	// The holder stops cleanly, and the other takes over.
	stopB()
	b.janitor.Close()
	waitFor(t, "the restarted server to take over", func() bool { return a.log.count(passed) > passes })
	stopA()
}

// server is one skrip server's janitor on a database shared with others, with its own
// connections (named by PostgreSQL's application_name) and its own log.
type server struct {
	*deps
	name string
	log  *countLog
}

func newServer(t *testing.T, base string, i int) *server {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	name := "janitor-test-" + string(rune('a'+i))
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	st, err := store.Open(context.Background(), u.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := &countLog{n: map[string]int{}}
	return &server{deps: newDeps(t, st, slog.New(log)), name: name, log: log}
}

// run starts the janitor's timed passes; stop ends them and waits.
func (s *server) run(interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.janitor.Run(ctx, interval)
	}()
	return func() { cancel(); <-done }
}

// crash ends every PostgreSQL session of the server, as its process's death would, over a
// connection of the test's own to base.
func (s *server) crash(t *testing.T, base string) {
	t.Helper()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", s.name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the crashed server had no session to end")
	}
}

// expiredSignIn stores a browser sign-in that expired an hour ago and returns its secret.
func expiredSignIn(t *testing.T, st *store.Store) string {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	u := store.User{ID: "u_lease", Name: "lease", Role: store.RoleUser, CreatedAt: now}
	if err := st.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	secret := auth.NewToken()
	ws := store.WebSession{Hash: auth.HashToken(secret), UserID: u.ID, CreatedAt: now.Add(-31 * 24 * time.Hour), ExpiresAt: now.Add(-time.Hour)}
	if err := st.CreateWebSession(ctx, ws); err != nil {
		t.Fatal(err)
	}
	return secret
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countLog is a slog.Handler that counts the messages logged at any level.
type countLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *countLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *countLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[r.Message]++
	return nil
}

func (h *countLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countLog) WithGroup(string) slog.Handler      { return h }

func (h *countLog) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[msg]
}
