package store

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestMaintainers: a new tool's author is its first maintainer; added maintainers show
// on the tool (MaintainerIDs), in "my tools" and in their reports listing; adding twice
// changes nothing; removing refuses a non-maintainer and the last one; a purged user's
// rows go.
func TestMaintainers(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_a", "ada", RoleAuthor), newUser("u_b", "bo", RoleAuthor), newUser("u_c", "cy", RoleAuthor)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		v := ToolVersion{ID: "v_1", ToolID: "t_1", Source: "s", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		created, err := s.CreateTool(ctx, Tool{ID: "t_1", Slug: "draft", Title: "Draft", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v, false)
		if err != nil || !slices.Equal(created.MaintainerIDs, []string{"u_a"}) {
			t.Fatalf("CreateTool = %+v, %v", created, err)
		}
		ids := func() []string {
			t.Helper()
			tl, err := s.Tool(ctx, "draft")
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(tl.MaintainerIDs)
			return tl.MaintainerIDs
		}
		if got := ids(); !slices.Equal(got, []string{"u_a"}) {
			t.Fatalf("a new tool's maintainers = %v, want its author", got)
		}
		mine := func(user string) bool {
			t.Helper()
			list, err := s.Tools(ctx, user, false)
			if err != nil {
				t.Fatal(err)
			}
			return slices.ContainsFunc(list, func(tl Tool) bool { return tl.ID == "t_1" })
		}
		if mine("u_b") {
			t.Fatal("bo sees ada's draft before he maintains it")
		}
		if added, err := s.AddMaintainer(ctx, "t_1", "u_b", "u_a", now.Add(time.Second)); err != nil || !added {
			t.Fatalf("AddMaintainer = %v, %v", added, err)
		}
		if added, err := s.AddMaintainer(ctx, "t_1", "u_b", "u_a", now.Add(2*time.Second)); err != nil || added {
			t.Fatalf("adding bo again = %v, %v; want false, nil", added, err)
		}
		if got := ids(); !slices.Equal(got, []string{"u_a", "u_b"}) {
			t.Fatalf("maintainers = %v", got)
		}
		if !mine("u_b") {
			t.Fatal("bo does not see the draft he maintains")
		}
		list, err := s.Maintainers(ctx, "t_1")
		if err != nil || len(list) != 2 || list[0].Name != "ada" || list[1].Name != "bo" || list[1].AddedBy != "u_a" ||
			!list[1].AddedAt.Equal(now.Add(time.Second)) || list[1].Role != RoleAuthor || list[1].State != StateActive {
			t.Fatalf("Maintainers = %+v, %v", list, err)
		}
		// Reports on the tool reach bo.
		if err := s.CreateRun(ctx, Run{ID: "r_1", ToolID: "t_1", VersionID: "v_1", UserID: "u_c", Context: "default", Kind: KindInitial, Status: StatusFailed,
			Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: "{}", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateReport(ctx, Report{ID: "pr_1", RunID: "r_1", ToolID: "t_1", VersionID: "v_1", UserID: "u_c", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		for user, want := range map[string]int{"u_a": 1, "u_b": 1, "u_c": 0} {
			got, err := s.Reports(ctx, ReportFilter{MaintainerID: user, Limit: 10})
			if err != nil || len(got) != want {
				t.Fatalf("%s's reports = %d, %v; want %d", user, len(got), err, want)
			}
		}
		if err := s.RemoveMaintainer(ctx, "t_1", "u_c"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("removing a non-maintainer: %v, want ErrNotFound", err)
		}
		if err := s.RemoveMaintainer(ctx, "t_1", "u_b"); err != nil {
			t.Fatal(err)
		}
		if mine("u_b") {
			t.Fatal("bo still sees the draft after his removal")
		}
		if err := s.RemoveMaintainer(ctx, "t_1", "u_a"); !errors.Is(err, ErrConflict) {
			t.Fatalf("removing the last maintainer: %v, want ErrConflict", err)
		}
		// A purged user's rows go with them; the tool stays.
		if _, err := s.AddMaintainer(ctx, "t_1", "u_b", "u_a", now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ClaimEditLock(ctx, "t_1", "u_b", now, now.Add(-time.Minute), false); err != nil {
			t.Fatal(err)
		}
		if err := s.PurgeUser(ctx, "u_b"); err != nil {
			t.Fatal(err)
		}
		if got := ids(); !slices.Equal(got, []string{"u_a"}) {
			t.Fatalf("maintainers after bo's purge = %v", got)
		}
		if _, err := s.EditLockOf(ctx, "t_1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("bo's edit lock after his purge: %v, want ErrNotFound", err)
		}
	})
}

// TestEditLock: the first to claim holds the lock; the holder's claims keep Since; a
// fresh lock of another is not taken without take; a stale one is.
func TestEditLock(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		t0 := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_a", "ada", RoleAuthor), newUser("u_b", "bo", RoleAuthor)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		v := ToolVersion{ID: "v_1", ToolID: "t_1", Source: "s", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: t0}
		if _, err := s.CreateTool(ctx, Tool{ID: "t_1", Slug: "x", Title: "X", AuthorID: "u_a", CreatedAt: t0, UpdatedAt: t0}, v, false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EditLockOf(ctx, "t_1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("no lock yet: %v", err)
		}
		ttl := 10 * time.Minute
		claim := func(user string, at time.Time, take bool) EditLock {
			t.Helper()
			l, err := s.ClaimEditLock(ctx, "t_1", user, at, at.Add(-ttl), take)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		if l := claim("u_a", t0, false); l.UserID != "u_a" || l.Name != "ada" || !l.Since.Equal(t0) {
			t.Fatalf("first claim = %+v", l)
		}
		if l := claim("u_a", t0.Add(time.Minute), false); l.UserID != "u_a" || !l.Since.Equal(t0) || !l.SeenAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("heartbeat = %+v; want since kept, seen moved", l)
		}
		if l := claim("u_b", t0.Add(5*time.Minute), false); l.UserID != "u_a" || !l.Since.Equal(t0) {
			t.Fatalf("bo's claim of a fresh lock = %+v; want ada's, unchanged", l)
		}
		if l := claim("u_b", t0.Add(6*time.Minute), true); l.UserID != "u_b" || !l.Since.Equal(t0.Add(6*time.Minute)) {
			t.Fatalf("bo's take-over = %+v", l)
		}
		// Bo's page goes quiet; past the TTL ada gets it back without taking.
		if l := claim("u_a", t0.Add(6*time.Minute+ttl+time.Second), false); l.UserID != "u_a" || !l.Since.Equal(t0.Add(6*time.Minute+ttl+time.Second)) {
			t.Fatalf("ada's claim of a stale lock = %+v", l)
		}
	})
}

// TestRemoveMaintainerRace: once the author is gone, two maintainers removing each other
// at the same moment leave one of them: a tool never ends with none.
func TestRemoveMaintainerRace(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_a", "ada", RoleAuthor), newUser("u_b", "bo", RoleAuthor), newUser("u_c", "cy", RoleAuthor)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		for round := range 10 {
			id := "t_" + string(rune('a'+round))
			v := ToolVersion{ID: "v" + id, ToolID: id, Source: "s", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
			if _, err := s.CreateTool(ctx, Tool{ID: id, Slug: id, Title: id, AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v, false); err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{"u_b", "u_c"} {
				if _, err := s.AddMaintainer(ctx, id, u, "u_a", now); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.RemoveMaintainer(ctx, id, "u_a"); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, u := range []string{"u_b", "u_c"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = s.RemoveMaintainer(ctx, id, u)
				}()
			}
			wg.Wait()
			list, err := s.Maintainers(ctx, id)
			if err != nil || len(list) != 1 || (errs[0] == nil) == (errs[1] == nil) {
				t.Fatalf("round %d: left %+v (%v); removals %v", round, list, err, errs)
			}
			for _, e := range errs {
				if e != nil && !errors.Is(e, ErrConflict) {
					t.Fatalf("round %d: the losing removal failed with %v, want ErrConflict", round, e)
				}
			}
		}
	})
}
