package store

import (
	"context"
	"fmt"
	"math"
	"slices"
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
			room, err := s.ReserveRunBytes(ctx, "r_1", 1, "u_a", []int64{c.n}, c.quota, c.total, now)
			if err != nil || room.Kept[0] != c.ok || room.Ended || room.User.Runs != c.before || room.Total != c.before {
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
		if room, err := s.ReserveRunBytes(ctx, "r_1", 2, "u_a", []int64{300}, 1000, 10_000, now); err != nil || !room.Kept[0] {
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
		if room, err := s.ReserveRunBytes(ctx, "r_2", 0, "u_a", []int64{200}, 1000, 10_000, now); err != nil || !room.Kept[0] {
			t.Fatalf("reserving for r_2: %+v, %v", room, err)
		}
		held("r_2", 200)
		if ok, err := s.EndRun(ctx, "r_2", StatusFailed, "the worker was lost", "", now); !ok || err != nil {
			t.Fatalf("EndRun = %v, %v", ok, err)
		}
		held("r_2", 0)
	})
}

// TestReserveRunBytesAtOnce: a run's artifacts are reserved in one call, in order: each
// that fits beside what the user holds and the ones kept before it is kept, a later,
// smaller one too; the run holds their sum, and the usage they were checked against is
// the one before any of them.
func TestReserveRunBytesAtOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		if err := s.CreateRun(ctx, queuedRun("r_1", now)); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.ClaimRun(ctx, "r_1", 1, "w", now); !ok || err != nil {
			t.Fatalf("ClaimRun = %v, %v", ok, err)
		}
		for _, c := range []struct {
			sizes        []int64
			quota, total int64
			kept         []bool
			held         int64 // what the run holds after
		}{
			{[]int64{400, 500, 300, 100, 0}, 1000, 10_000, []bool{true, true, false, true, true}, 1000},
			{[]int64{1}, 1000, 10_000, []bool{false}, 1000},              // the quota is full
			{[]int64{500, 200}, 10_000, 1600, []bool{true, false}, 1500}, // the store's total
			{nil, 10_000, 10_000, []bool{}, 1500},                        // nothing to reserve
		} {
			before, _, err := s.UserUsage(ctx, "u_a", now)
			if err != nil {
				t.Fatal(err)
			}
			room, err := s.ReserveRunBytes(ctx, "r_1", 1, "u_a", c.sizes, c.quota, c.total, now)
			if err != nil || room.Ended || !slices.Equal(room.Kept, c.kept) || (len(c.sizes) > 0 && room.User != before) {
				t.Fatalf("reserving %v in %d (total %d) = %+v, %v; want %v beside %+v", c.sizes, c.quota, c.total, room, err, c.kept, before)
			}
			if r, err := s.GetRun(ctx, "r_1"); err != nil || r.HeldBytes != c.held {
				t.Fatalf("after reserving %v the run holds %d, %v; want %d", c.sizes, r.HeldBytes, err, c.held)
			}
		}
	})
}

// TestReserveRunBytesOnlyForALiveAttempt: a reservation for a run that is recorded or
// ended, or for an attempt that no longer holds it, reserves nothing (Room.Ended) and
// leaves what the run holds as it was: ReleaseRunBytes would never give such bytes back,
// and they would count against the user until the run's artifacts expire.
func TestReserveRunBytesOnlyForALiveAttempt(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		var elsewhere int64 // what the user's other runs hold
		reserve := func(id string, attempt int64, want bool, held int64) {
			t.Helper()
			room, err := s.ReserveRunBytes(ctx, id, attempt, "u_a", []int64{100, 50}, 1000, 10_000, now)
			if err != nil || room.Ended == want || slices.Contains(room.Kept, !want) {
				t.Fatalf("reserving for %s attempt %d = %+v, %v; want reserved %v", id, attempt, room, err, want)
			}
			if r, err := s.GetRun(ctx, id); err != nil || r.HeldBytes != held {
				t.Fatalf("run %s holds %d, %v; want %d", id, r.HeldBytes, err, held)
			}
			if u, err := s.OwnerUsage(ctx, "u_a", now); err != nil || u.Runs != held+elsewhere {
				t.Fatalf("usage %+v, %v; want %d held by runs", u, err, held+elsewhere)
			}
		}
		// Recorded: a duplicate record of the attempt after the first committed.
		r := queuedRun("r_1", now)
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		reserve("r_1", 0, true, 150) // queued
		if ok, err := s.ClaimRun(ctx, "r_1", 1, "w", now); !ok || err != nil {
			t.Fatalf("ClaimRun = %v, %v", ok, err)
		}
		reserve("r_1", 1, true, 150)
		if ok, err := s.ClaimRun(ctx, "r_1", 2, "w2", now); !ok || err != nil {
			t.Fatalf("ClaimRun = %v, %v", ok, err)
		}
		reserve("r_1", 1, false, 0) // attempt 2 holds it
		reserve("r_1", 2, true, 150)
		finished := now.Add(time.Second)
		r.Status, r.FinishedAt, r.HeldBytes = StatusSucceeded, &finished, 170
		if _, ok, err := s.RecordRun(ctx, r, 2, nil); !ok || err != nil {
			t.Fatalf("RecordRun = %v, %v", ok, err)
		}
		reserve("r_1", 2, false, 170)
		reserve("r_1", 0, false, 170)

		// Ended while its artifacts were being collected.
		elsewhere = 170
		if err := s.CreateRun(ctx, queuedRun("r_2", now)); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.ClaimRun(ctx, "r_2", 1, "w", now); !ok || err != nil {
			t.Fatalf("ClaimRun = %v, %v", ok, err)
		}
		if ok, err := s.EndRun(ctx, "r_2", StatusFailed, "stopped", "", now); !ok || err != nil {
			t.Fatalf("EndRun = %v, %v", ok, err)
		}
		reserve("r_2", 0, false, 0)
	})
}

// TestOwnerUsage: what a user holds, by kind, as GET /me shows it, is summed over that
// user's rows alone, beside other users' files, versions, uploads, runs, session files
// and retired bytes. Two other users' retired blobs whose sizes together pass what an
// int64 holds make any store-wide sum fail: OwnerUsage answers, so it computes none,
// while UserUsage, which is for checks against the store's total, does.
func TestOwnerUsage(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []string{"u_1", "u_2"} {
			if err := s.CreateUser(ctx, newUser(u, u, RoleUser)); err != nil {
				t.Fatal(err)
			}
		}
		for i, f := range []struct {
			owner, key string
			size       int64
		}{{"u_1", "files/a", 10}, {"u_1", "files/a", 20}, {"u_1", "files/b", 5}, {"u_2", "files/a", 1000}, {"u_2", "files/a", 2000}} {
			id := fmt.Sprint(i)
			if err := s.CommitFile(ctx, File{Key: f.key, OwnerID: f.owner, Size: f.size, Checksum: "sha256:" + id, BlobKey: "b_" + id,
				ContentType: "text/plain", CreatedAt: now, VersionID: "v_" + id}, 1, 1<<40, 1<<40, now); err != nil {
				t.Fatal(err)
			}
		}
		for _, b := range []struct {
			owner string
			size  int64
		}{{"u_1", 7}, {"u_2", math.MaxInt64 / 2}, {"", math.MaxInt64/2 + 10}} {
			if _, err := s.exec(ctx, "INSERT INTO retired_file_blobs (blob_key, size, retired_at, owner_id) VALUES (?, ?, ?, ?)",
				"r_"+b.owner+fmt.Sprint(b.size), b.size, ms(now), b.owner); err != nil {
				t.Fatal(err)
			}
		}
		want := Usage{Files: 25, Versions: 10, Retained: 7}
		if u, err := s.OwnerUsage(ctx, "u_1", now); err != nil || u != want {
			t.Fatalf("OwnerUsage(u_1) = %+v, %v; want %+v", u, err, want)
		}
		if _, _, err := s.UserUsage(ctx, "u_1", now); err == nil {
			t.Fatalf("UserUsage summed a store past what an int64 holds without an error: the test no longer tells a store-wide sum")
		}
	})
}
