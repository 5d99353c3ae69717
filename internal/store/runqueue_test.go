package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAdmitRunCaps: 70 inserts of one user's runs at once, each on its own connection
// as API nodes would make them, make exactly PerUser runs; the others are ErrUserRuns,
// another user is still admitted, and a run that ends frees its place. Past Total,
// ErrAllRuns.
func TestAdmitRunCaps(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_a", "ada", RoleUser), newUser("u_b", "bo", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		v := ToolVersion{ID: "v_1", ToolID: "t_1", Source: "x", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		if _, err := s.CreateTool(ctx, Tool{ID: "t_1", Slug: "t", Title: "T", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v, true); err != nil {
			t.Fatal(err)
		}
		runOf := func(id, user string) Run {
			return Run{ID: id, ToolID: "t_1", VersionID: "v_1", UserID: user, Context: "default", Kind: "initial", Status: StatusQueued,
				Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`, CreatedAt: now}
		}
		caps := RunCaps{PerUser: 8, Total: 20}
		var mu sync.Mutex
		var admitted, refused int
		var first string // a run that was admitted
		var wg sync.WaitGroup
		for i := range 70 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("r_a%02d", i)
				err := s.AdmitRun(ctx, runOf(id, "u_a"), caps)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted++
					first = id
				case errors.Is(err, ErrUserRuns):
					refused++
				default:
					t.Errorf("AdmitRun: %v", err)
				}
			}()
		}
		wg.Wait()
		if admitted != 8 || refused != 62 {
			t.Fatalf("70 at once: %d admitted, %d refused; want 8 and 62", admitted, refused)
		}
		if n, err := s.UnfinishedRuns(ctx, "u_a"); err != nil || n != 8 {
			t.Fatalf("UnfinishedRuns = %d, %v", n, err)
		}
		if err := s.AdmitRun(ctx, runOf("r_b1", "u_b"), caps); err != nil {
			t.Fatalf("another user: %v", err)
		}
		if _, err := s.EndRun(ctx, first, StatusCancelled, "cancelled", "", now); err != nil {
			t.Fatal(err)
		}
		if err := s.AdmitRun(ctx, runOf("r_a99", "u_a"), caps); err != nil {
			t.Fatalf("after one ended: %v", err)
		}
		if err := s.AdmitRun(ctx, runOf("r_b2", "u_b"), RunCaps{PerUser: 8, Total: 9}); !errors.Is(err, ErrAllRuns) {
			t.Fatalf("past the total: %v", err)
		}
	})
}

// heldRun makes queued run id of user, made at created, and holds its queue message.
func heldRun(t *testing.T, s *Store, id, user string, created time.Time) {
	t.Helper()
	ctx := context.Background()
	r := queuedRun(id, created)
	r.UserID = user
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.HoldRun(ctx, id, `{"run":"`+id+`"}`); err != nil || !ok {
		t.Fatalf("HoldRun(%s) = %v, %v", id, ok, err)
	}
}

// TestHeldRunsEveryUser: a user with more runs waiting than the scheduler sends at once
// (1200 here, past the 1000 it used to read) does not hide another user's one run:
// HeldRuns gives each user's oldest, so both are candidates.
func TestHeldRunsEveryUser(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		if err := s.CreateUser(ctx, newUser("u_b", "bo", RoleUser)); err != nil {
			t.Fatal(err)
		}
		err := s.tx(ctx, func(tx *sql.Tx) error {
			for i := range 1200 {
				r := queuedRun(fmt.Sprintf("r_a%04d", i), now.Add(time.Duration(i)*time.Millisecond))
				if _, err := s.txExec(ctx, tx, insertRun, runValues(r)...); err != nil {
					return err
				}
				if _, err := s.txExec(ctx, tx, "UPDATE runs SET dispatch = ? WHERE id = ?", "{}", r.ID); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		heldRun(t, s, "r_b", "u_b", now.Add(time.Hour))
		held, err := s.HeldRuns(ctx, 2, now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range held {
			ids = append(ids, h.ID)
		}
		if fmt.Sprint(ids) != "[r_a0000 r_a0001 r_b]" {
			t.Fatalf("HeldRuns(2) = %v; want ada's two oldest and bo's run", ids)
		}
		if held[2].Message != `{"run":"r_b"}` || held[2].UserID != "u_b" || !held[2].CreatedAt.Equal(now.Add(time.Hour)) {
			t.Fatalf("bo's held run: %+v", held[2])
		}
	})
}

// TestHeldRunsLastSent: the scheduler serves first the user whose last run it sent
// longest ago, by when it sent it (dispatched_at), however long that run had waited.
// ada's last run waited two hours and was sent 10 minutes ago, bo's 20 minutes ago: bo
// goes before ada (counting only runs made within the hour, ada looked never served and
// jumped ahead). cy's last send is older than since and dag has none: both not lately.
func TestHeldRunsLastSent(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		for _, u := range []User{newUser("u_b", "bo", RoleUser), newUser("u_c", "cy", RoleUser), newUser("u_d", "dag", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		sent := map[string]struct{ created, sent time.Duration }{
			"u_a": {2 * time.Hour, 10 * time.Minute},
			"u_b": {30 * time.Minute, 20 * time.Minute},
			"u_c": {3 * time.Hour, 2 * time.Hour},
		}
		for u, c := range sent {
			heldRun(t, s, "r_sent_"+u, u, now.Add(-c.created))
			if ok, err := s.MarkDispatched(ctx, "r_sent_"+u, true, now.Add(-c.sent)); err != nil || !ok {
				t.Fatalf("MarkDispatched = %v, %v", ok, err)
			}
		}
		for i, u := range []string{"u_a", "u_b", "u_c", "u_d"} {
			heldRun(t, s, "r_wait_"+u, u, now.Add(-time.Minute+time.Duration(i)*time.Second))
		}
		held, err := s.HeldRuns(ctx, 8, now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]time.Time{}
		var users []string
		for _, h := range held {
			users = append(users, h.UserID)
			last[h.UserID] = h.LastSent
		}
		if fmt.Sprint(users) != "[u_a u_b u_c u_d]" {
			t.Fatalf("HeldRuns gave the runs of %v; want one of each user, oldest first", users)
		}
		for u, want := range map[string]time.Time{"u_a": now.Add(-10 * time.Minute), "u_b": now.Add(-20 * time.Minute), "u_c": {}, "u_d": {}} {
			if !last[u].Equal(want) {
				t.Errorf("%s last sent %v; want %v", u, last[u], want)
			}
		}
		// Longest ago first (zero: not lately).
		sort.SliceStable(users, func(i, j int) bool { return last[users[i]].Before(last[users[j]]) })
		if fmt.Sprint(users) != "[u_c u_d u_b u_a]" {
			t.Errorf("users served in the order %v; want [u_c u_d u_b u_a]", users)
		}
	})
}

// TestDispatchCleared: a run's held queue message (runs.dispatch) goes once the run is
// claimed (the stream has it then) or final, however it ends; a run still waiting keeps
// it.
func TestDispatchCleared(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		for _, c := range []struct {
			name string
			end  func(id string) (bool, error)
		}{
			{"claimed", func(id string) (bool, error) { return s.ClaimRun(ctx, id, 1, "w1", now) }},
			{"recorded", func(id string) (bool, error) {
				if ok, err := s.ClaimRun(ctx, id, 1, "w1", now); err != nil || !ok {
					return ok, err
				}
				// Held again as a claimed run never is, so that the record's own clearing shows.
				if _, err := s.exec(ctx, "UPDATE runs SET dispatch = ? WHERE id = ?", "{}", id); err != nil {
					return false, err
				}
				r := queuedRun(id, now)
				r.Status, r.FinishedAt = StatusSucceeded, &now
				_, ok, err := s.RecordRun(ctx, r, 1, nil)
				return ok, err
			}},
			{"recorded while queued", func(id string) (bool, error) {
				r := queuedRun(id, now)
				r.Status, r.FinishedAt = StatusFailed, &now
				_, ok, err := s.RecordRun(ctx, r, 0, nil)
				return ok, err
			}},
			{"ended", func(id string) (bool, error) { return s.EndRun(ctx, id, StatusFailed, "worker lost", "", now) }},
			{"cancelled", func(id string) (bool, error) { return s.CancelQueuedRun(ctx, id, "cancelled", now) }},
			{"cancel requested", func(id string) (bool, error) {
				_, ok, err := s.RequestCancel(ctx, id, "cancelled", now)
				return ok, err
			}},
		} {
			id := "r_" + strings.ReplaceAll(c.name, " ", "_")
			heldRun(t, s, id, "u_a", now)
			if ok, err := s.MarkDispatched(ctx, id, true, now); err != nil || !ok {
				t.Fatalf("%s: MarkDispatched = %v, %v", c.name, ok, err)
			}
			if ok, err := c.end(id); err != nil || !ok {
				t.Fatalf("%s: %v, %v", c.name, ok, err)
			}
			if qs, err := s.RunQueueState(ctx, id); err != nil || qs.Held {
				t.Errorf("%s: the run's queue message is still held (%+v, %v)", c.name, qs, err)
			}
		}
		heldRun(t, s, "r_waiting", "u_a", now)
		if qs, err := s.RunQueueState(ctx, "r_waiting"); err != nil || !qs.Held {
			t.Fatalf("a waiting run: %+v, %v; want its message held", qs, err)
		}
		if n, err := s.FailUnfinishedRuns(ctx, "interrupted", "", now); err != nil || n != 2 { // it and the claimed one
			t.Fatalf("FailUnfinishedRuns = %d, %v", n, err)
		}
		if qs, err := s.RunQueueState(ctx, "r_waiting"); err != nil || qs.Held {
			t.Fatalf("a run failed at a restart: %+v, %v; want its message gone", qs, err)
		}
	})
}
