package store

import (
	"context"
	"testing"
	"time"
)

// TestRunHeldBytes: what a run holds against its user's quota, through its life. Its
// attempt reserves artifacts' bytes while they fit in the user's quota and the store's
// total, and gives back those it did not store; a new attempt starts from nothing; the
// record sets the exact count, which a late release does not change; the count goes
// when the run's artifacts expire, or when the run ends without keeping any. The user's
// usage counts what the runs hold.
func TestRunHeldBytes(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		if err := s.CreateUser(ctx, newUser("u_a", "ada", RoleAuthor)); err != nil {
			t.Fatal(err)
		}
		v := ToolVersion{ID: "v_1", ToolID: "t_1", Source: "pass", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		if _, err := s.CreateTool(ctx, Tool{ID: "t_1", Slug: "t", Title: "T", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v, true); err != nil {
			t.Fatal(err)
		}
		newRun := func(id string) Run {
			t.Helper()
			r := Run{ID: id, ToolID: "t_1", VersionID: "v_1", UserID: "u_a", Context: "default", Kind: "initial", Status: StatusQueued,
				Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`, CreatedAt: now}
			if err := s.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			return r
		}
		claim := func(id string, attempt int64) {
			t.Helper()
			if ok, err := s.ClaimRun(ctx, id, attempt, "node-a", now); !ok || err != nil {
				t.Fatalf("ClaimRun(%s, %d) = %v, %v", id, attempt, ok, err)
			}
		}
		held := func(id string, want int64) {
			t.Helper()
			if r, err := s.GetRun(ctx, id); err != nil || r.HeldBytes != want {
				t.Fatalf("run %s holds %d, %v; want %d", id, r.HeldBytes, err, want)
			}
			if u, _, err := s.UserUsage(ctx, "u_a", now); err != nil || u.Runs != want || u.Total() != want {
				t.Fatalf("usage = %+v, %v; want %d held by runs, nothing else", u, err, want)
			}
		}
		r := newRun("r_1")
		claim("r_1", 1)
		for _, c := range []struct {
			n, quota, total int64
			ok              bool
			before, after   int64 // what the user's runs held before, and the run holds after
		}{
			{600, 1000, 10_000, true, 0, 600},
			{500, 1000, 10_000, false, 600, 600}, // past the quota
			{400, 1000, 10_000, true, 600, 1000}, // exactly the quota
			{1, 10_000, 1000, false, 1000, 1000}, // past the store's total
		} {
			room, err := s.ReserveRunBytes(ctx, "r_1", "u_a", c.n, c.quota, c.total, now)
			if err != nil || room.OK != c.ok || room.User.Runs != c.before || room.Total != c.before {
				t.Fatalf("reserving %d in %d (total %d) = %+v, %v; want ok %v beside %d", c.n, c.quota, c.total, room, err, c.ok, c.before)
			}
			held("r_1", c.after)
		}
		if err := s.ReleaseRunBytes(ctx, "r_1", 400); err != nil {
			t.Fatal(err)
		}
		held("r_1", 600)

		// A new attempt stores artifacts of its own.
		claim("r_1", 2)
		held("r_1", 0)
		if room, err := s.ReserveRunBytes(ctx, "r_1", "u_a", 300, 1000, 10_000, now); err != nil || !room.OK {
			t.Fatalf("reserving for attempt 2: %+v, %v", room, err)
		}
		finished := now.Add(time.Minute)
		r.Status, r.FinishedAt, r.HeldBytes = StatusSucceeded, &finished, 350 // the artifacts and the record
		if _, ok, err := s.RecordRun(ctx, r, 2, nil); !ok || err != nil {
			t.Fatalf("RecordRun = %v, %v", ok, err)
		}
		held("r_1", 350)
		if err := s.ReleaseRunBytes(ctx, "r_1", 300); err != nil {
			t.Fatal(err)
		}
		held("r_1", 350)

		// Its artifacts expire: before the cutoff reaches its end nothing goes.
		for _, c := range []struct {
			cutoff time.Time
			n      int64
			after  int64
		}{{finished.Add(-time.Millisecond), 0, 350}, {finished, 1, 0}} {
			if n, err := s.ReleaseFinishedRuns(ctx, c.cutoff); err != nil || n != c.n {
				t.Fatalf("ReleaseFinishedRuns(%v) = %d, %v; want %d", c.cutoff, n, err, c.n)
			}
			held("r_1", c.after)
		}

		// A run ended by a node, its worker lost, keeps nothing.
		newRun("r_2")
		claim("r_2", 1)
		if room, err := s.ReserveRunBytes(ctx, "r_2", "u_a", 200, 1000, 10_000, now); err != nil || !room.OK {
			t.Fatalf("reserving for r_2: %+v, %v", room, err)
		}
		held("r_2", 200)
		if ok, err := s.EndRun(ctx, "r_2", StatusFailed, "the worker was lost", now); !ok || err != nil {
			t.Fatalf("EndRun = %v, %v", ok, err)
		}
		held("r_2", 0)
	})
}
