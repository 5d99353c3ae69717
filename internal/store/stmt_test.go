package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestStatementsReused: on SQLite, a run's statements, those of RecordRun's transaction
// too, are prepared once and reused by the next runs, which come out the same; the cache
// does not grow with the number of runs, and a closed store holds none.
func TestStatementsReused(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		cached := func() (int, int) {
			s.wstmts.mu.Lock()
			defer s.wstmts.mu.Unlock()
			s.rstmts.mu.Lock()
			defer s.rstmts.mu.Unlock()
			return len(s.wstmts.stmts), len(s.rstmts.stmts)
		}
		var w, r int
		for i := range 5 {
			run := queuedRun(fmt.Sprintf("r_%d", i), now)
			if err := s.CreateRun(ctx, run); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.ClaimRun(ctx, run.ID, 1, "w", now); !ok || err != nil {
				t.Fatalf("ClaimRun = %v, %v", ok, err)
			}
			fin := now.Add(time.Second)
			run.Status, run.FinishedAt, run.Stdout = StatusSucceeded, &fin, []byte(run.ID)
			rev, ok, err := s.RecordRun(ctx, run, 1, &SessionEffect{Start: true, State: run.ID})
			if err != nil || !ok || rev == nil || *rev != int64(i+1) {
				t.Fatalf("RecordRun %d = %v, %v, %v", i, rev, ok, err)
			}
			got, err := s.GetRun(ctx, run.ID)
			if err != nil || got.Status != StatusSucceeded || string(got.Stdout) != run.ID || got.StateRev == nil || *got.StateRev != int64(i+1) {
				t.Fatalf("GetRun %d = %+v, %v", i, got, err)
			}
			switch {
			case s.Dialect() != SQLite:
				if w, r := cached(); w+r != 0 {
					t.Fatalf("%d and %d statements cached on %s; pgx caches its own", w, r, s.Dialect())
				}
			case i == 1:
				w, r = cached()
				// CreateRun, ClaimRun and RecordRun's four (UPDATE, upsert of the session,
				// state_rev) on the writer; GetRun on the reader.
				if w < 5 || r < 1 {
					t.Fatalf("%d and %d statements cached, want at least 5 and 1", w, r)
				}
			case i > 1:
				if w2, r2 := cached(); w2 != w || r2 != r {
					t.Fatalf("run %d: %d and %d statements cached, want %d and %d", i, w2, r2, w, r)
				}
			}
		}
		s.Close()
		if w, r := cached(); w+r != 0 {
			t.Fatalf("a closed store holds %d and %d statements", w, r)
		}
	})
}

// TestStatementPrepareWhileInTransaction: a statement prepared for the first time while a
// transaction holds SQLite's only writer connection waits for it, and the transaction
// meanwhile runs statements of its own (it once waited for the preparing one's lock: a
// deadlock).
func TestStatementPrepareWhileInTransaction(t *testing.T) {
	s, err := Open(context.Background(), "", filepath.Join(t.TempDir(), "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateUser(ctx, newUser("u_a", "author", RoleAuthor)); err != nil {
		t.Fatal(err)
	}
	waits := s.db.Stats().WaitCount
	prepared := make(chan error, 1)
	err = s.tx(ctx, func(tx *sql.Tx) error {
		go func() {
			_, err := s.exec(ctx, "UPDATE users SET role = ? WHERE id = ?", RoleAdmin, "u_a")
			prepared <- err
		}()
		for s.db.Stats().WaitCount == waits { // until the statement waits for the connection
			runtime.Gosched()
		}
		_, err := s.txExec(ctx, tx, "UPDATE users SET name = ? WHERE id = ?", "renamed", "u_a")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-prepared; err != nil {
		t.Fatal(err)
	}
	u, err := s.UserByName(ctx, "renamed")
	if err != nil || u.Role != RoleAdmin {
		t.Fatalf("after both updates: %+v, %v", u, err)
	}
}
