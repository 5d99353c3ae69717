package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestToolsAndRuns(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_a", "author", RoleAuthor), newUser("u_b", "other", RoleAuthor)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		v1 := ToolVersion{ID: "v_1", ToolID: "t_1", Source: "def run_tool(i, o): pass", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		tool, err := s.CreateTool(ctx, Tool{ID: "t_1", Slug: "csv", Title: "CSV", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v1, false)
		if err != nil || tool.PublishedVersionID != "" {
			t.Fatalf("CreateTool = %+v, %v", tool, err)
		}
		if _, err := s.CreateTool(ctx, Tool{ID: "t_2", Slug: "csv", Title: "x", AuthorID: "u_b", CreatedAt: now, UpdatedAt: now},
			ToolVersion{ID: "v_x", ToolID: "t_2", Entrypoint: "run_tool", CreatedBy: "u_b", CreatedAt: now}, true); !errors.Is(err, ErrConflict) {
			t.Fatalf("duplicate slug: %v", err)
		}
		if _, err := s.ToolVersion(ctx, "v_x"); !errors.Is(err, ErrNotFound) {
			t.Fatal("a failed CreateTool left its version behind")
		}
		// Unpublished: only its author (or everyone with all) sees it.
		for _, c := range []struct {
			author string
			all    bool
			n      int
		}{{"u_a", false, 1}, {"u_b", false, 0}, {"", true, 1}} {
			if got, _ := s.Tools(ctx, c.author, c.all); len(got) != c.n {
				t.Errorf("Tools(%q, %v) = %d tools, want %d", c.author, c.all, len(got), c.n)
			}
		}
		v2 := ToolVersion{ID: "v_2", ToolID: "t_1", Source: "v2", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now.Add(time.Second)}
		if err := s.CreateVersion(ctx, v2); err != nil {
			t.Fatal(err)
		}
		if err := s.Publish(ctx, "t_1", "v_2", now); err != nil {
			t.Fatal(err)
		}
		bySlug, err := s.Tool(ctx, "csv")
		if err != nil || bySlug.PublishedVersionID != "v_2" {
			t.Fatalf("Tool(csv) = %+v, %v", bySlug, err)
		}
		if got, _ := s.Tools(ctx, "u_b", false); len(got) != 1 {
			t.Fatal("a published tool is not listed for everyone")
		}
		if vs, _ := s.Versions(ctx, "t_1"); len(vs) != 2 || vs[0].ID != "v_2" {
			t.Fatalf("Versions = %+v", vs)
		}

		run := Run{ID: "r_01", ToolID: "t_1", VersionID: "v_2", UserID: "u_b", Context: "default", Kind: KindInitial, Status: StatusQueued,
			Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`, CreatedAt: now}
		if err := s.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetRun(ctx, "r_01"); got.Attempts != 0 || got.Worker != "" {
			t.Fatalf("a queued run has attempts %d, worker %q; want 0, ''", got.Attempts, got.Worker)
		}
		if ok, err := s.ClaimRun(ctx, "r_01", 1, "node-a", now); !ok || err != nil {
			t.Fatalf("ClaimRun = %v, %v", ok, err)
		}
		if got, _ := s.GetRun(ctx, "r_01"); got.Status != StatusRunning || got.Attempts != 1 || got.Worker != "node-a" ||
			got.StartedAt == nil || !got.StartedAt.Equal(now) {
			t.Fatalf("claimed run = %s, attempts %d, worker %q, started %v; want running, 1, node-a, %v",
				got.Status, got.Attempts, got.Worker, got.StartedAt, now)
		}
		if ok, _ := s.ClaimRun(ctx, "r_01", 1, "node-b", now); ok {
			t.Fatal("a running run was claimed twice as the same attempt")
		}
		// The same claim again, its answer lost: it is still that worker's.
		if ok, err := s.ClaimRun(ctx, "r_01", 1, "node-a", now); !ok || err != nil {
			t.Fatalf("the same claim again = %v, %v; want it granted", ok, err)
		}
		fin := now.Add(time.Second)
		run.Status, run.ErrorSummary, run.FinishedAt = StatusSucceeded, "", &fin
		run.Stdout, run.StdoutTruncated = []byte("out\x00with nul"), true
		if rev, ok, err := s.RecordRun(ctx, run, 1, &SessionEffect{Start: true, State: "{}"}); !ok || err != nil || rev == nil || *rev != 1 {
			t.Fatalf("RecordRun = %v, %v, %v; want revision 1", rev, ok, err)
		}
		run.Status = StatusFailed
		if _, ok, _ := s.RecordRun(ctx, run, 1, nil); ok {
			t.Fatal("a finished run was finished again")
		}
		got, err := s.GetRun(ctx, "r_01")
		if err != nil || got.Status != StatusSucceeded || got.StateRev == nil || *got.StateRev != 1 || string(got.Stdout) != "out\x00with nul" || !got.StdoutTruncated ||
			got.StartedAt == nil || !got.FinishedAt.Equal(fin) {
			t.Fatalf("GetRun = %+v, %v", got, err)
		}
		for i, id := range []string{"r_02", "r_03"} {
			r := run
			r.ID, r.Status, r.StateRev, r.FinishedAt, r.UserID = id, StatusQueued, nil, nil, []string{"u_a", "u_b"}[i]
			s.CreateRun(ctx, r)
		}
		all, _ := s.ListRuns(ctx, RunFilter{Limit: 10})
		mine, _ := s.ListRuns(ctx, RunFilter{UserID: "u_b", ToolID: "t_1", Limit: 10})
		page, _ := s.ListRuns(ctx, RunFilter{Before: "r_03", Limit: 1})
		queued, _ := s.ListRuns(ctx, RunFilter{Status: StatusQueued, Limit: 10})
		if len(queued) != 2 || queued[0].ID != "r_03" || queued[1].ID != "r_02" {
			t.Fatalf("ListRuns by status: %+v", queued)
		}
		if len(all) != 3 || all[0].ID != "r_03" || len(mine) != 2 || len(page) != 1 || page[0].ID != "r_02" {
			t.Fatalf("ListRuns: all %d (%s first), mine %d, page %+v", len(all), all[0].ID, len(mine), page)
		}
		n, err := s.FailUnfinishedRuns(ctx, "interrupted by server restart", "", now)
		if err != nil || n != 2 {
			t.Fatalf("FailUnfinishedRuns = %d, %v", n, err)
		}
		if r, _ := s.GetRun(ctx, "r_02"); r.Status != StatusFailed || r.ErrorSummary != "interrupted by server restart" {
			t.Fatalf("after restart: %+v", r)
		}
	})
}

// TestConcurrentFileSetSwaps: of concurrent swaps of one session's files, each returns the
// set it really replaced, so every replaced set is handed back exactly once.
func TestConcurrentFileSetSwaps(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now()
		s.CreateUser(ctx, newUser("u_a", "a", RoleUser))
		s.CreateTool(ctx, Tool{ID: "t_1", Slug: "t", Title: "t", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now},
			ToolVersion{ID: "v_1", ToolID: "t_1", Source: "x", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}, true)
		k := SessionKey{ToolID: "t_1", UserID: "u_a", Context: "default"}
		const n = 8
		var mu sync.Mutex
		returned := map[string]int{}
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				old, err := s.SwapSessionFiles(ctx, FileSet{SessionKey: k, SetID: fmt.Sprintf("s_%d", i), Files: "[]", CreatedAt: now, LastAccessedAt: now}, 0, 0, now)
				if err != nil {
					t.Error(err)
					return
				}
				if old != nil {
					mu.Lock()
					returned[old.SetID]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		cur, _ := s.SessionFiles(ctx, k)
		if len(returned) != n-1 || returned[cur.SetID] != 0 {
			t.Fatalf("replaced sets handed back: %v (current %s); want each of the other %d once", returned, cur.SetID, n-1)
		}
		for id, times := range returned {
			if times != 1 {
				t.Fatalf("set %s handed back %d times", id, times)
			}
		}
	})
}

// TestClaimRun: a claim applies to a queued run, or to a running one claimed by an
// earlier attempt; never to a run that is over or to an attempt already made. The first
// claim's start time stays.
func TestClaimRun(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		if err := s.CreateRun(ctx, queuedRun("r_c", now)); err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			attempt  int64
			worker   string
			ok       bool
			attempts int64
			wantBy   string
		}{
			{1, "w1", true, 1, "w1"},
			{1, "w2", false, 1, "w1"}, // the same attempt again
			{2, "w2", true, 2, "w2"},  // handed to another worker
			{1, "w1", false, 2, "w2"}, // an older attempt
		}
		for i, st := range steps {
			ok, err := s.ClaimRun(ctx, "r_c", st.attempt, st.worker, now.Add(time.Duration(i)*time.Second))
			if err != nil || ok != st.ok {
				t.Fatalf("step %d: ClaimRun(%d, %s) = %v, %v; want %v", i, st.attempt, st.worker, ok, err, st.ok)
			}
			got, _ := s.GetRun(ctx, "r_c")
			if got.Attempts != st.attempts || got.Worker != st.wantBy || got.StartedAt == nil || !got.StartedAt.Equal(now) {
				t.Fatalf("step %d: attempts %d, worker %q, started %v; want %d, %q, %v", i, got.Attempts, got.Worker, got.StartedAt, st.attempts, st.wantBy, now)
			}
		}
		if ok, _ := s.CancelQueuedRun(ctx, "r_c", "cancelled", now); ok {
			t.Fatal("a running run was cancelled as queued")
		}
		if err := s.CreateRun(ctx, queuedRun("r_d", now)); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.CancelQueuedRun(ctx, "r_d", "cancelled", now); !ok {
			t.Fatal("CancelQueuedRun refused a queued run")
		}
		if ok, _ := s.ClaimRun(ctx, "r_d", 1, "w1", now); ok {
			t.Fatal("a cancelled run was claimed")
		}
		if got, _ := s.GetRun(ctx, "r_d"); got.Status != StatusCancelled || got.Attempts != 0 {
			t.Fatalf("cancelled run: %s with attempts %d", got.Status, got.Attempts)
		}
	})
}

// seedRunTool creates the user u_a and its tool t_1 with version v_1, for runs to name.
func seedRunTool(t *testing.T, s *Store, now time.Time) {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateUser(ctx, newUser("u_a", "author", RoleAuthor)); err != nil {
		t.Fatal(err)
	}
	v := ToolVersion{ID: "v_1", ToolID: "t_1", Source: "def run_tool(i, o): pass", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
	if _, err := s.CreateTool(ctx, Tool{ID: "t_1", Slug: "csv", Title: "CSV", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v, true); err != nil {
		t.Fatal(err)
	}
}

// queuedRun is a queued initial run of seedRunTool's tool.
func queuedRun(id string, now time.Time) Run {
	return Run{ID: id, ToolID: "t_1", VersionID: "v_1", UserID: "u_a", Context: "default", Kind: KindInitial, Status: StatusQueued,
		Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`, CreatedAt: now}
}

// TestRecordRunStaleAttempt: a run claimed again finishes only as its latest attempt; the
// late result of an earlier one changes nothing.
func TestRecordRunStaleAttempt(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		run := queuedRun("r_s", now)
		if err := s.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		for _, attempt := range []int64{1, 2} {
			if ok, err := s.ClaimRun(ctx, "r_s", attempt, fmt.Sprintf("w%d", attempt), now); !ok || err != nil {
				t.Fatalf("ClaimRun(%d) = %v, %v", attempt, ok, err)
			}
		}
		fin := now.Add(time.Second)
		for _, c := range []struct {
			attempt int64
			status  string
			ok      bool
			want    string // the run's status after
		}{
			{1, StatusFailed, false, StatusRunning},     // stale: attempt 2 holds the run
			{3, StatusFailed, false, StatusRunning},     // never claimed
			{2, StatusSucceeded, true, StatusSucceeded}, // the current attempt
			{2, StatusFailed, false, StatusSucceeded},   // already final
		} {
			r := run
			r.Status, r.ErrorSummary, r.FinishedAt, r.Stdout = c.status, "from attempt "+fmt.Sprint(c.attempt), &fin, []byte("out")
			_, ok, err := s.RecordRun(ctx, r, c.attempt, nil)
			if err != nil || ok != c.ok {
				t.Fatalf("RecordRun(%s, attempt %d) = %v, %v; want %v", c.status, c.attempt, ok, err, c.ok)
			}
			got, _ := s.GetRun(ctx, "r_s")
			if got.Status != c.want || got.Attempts != 2 || got.Worker != "w2" {
				t.Fatalf("after RecordRun(%s, attempt %d): %s, attempts %d, worker %q; want %s, 2, w2",
					c.status, c.attempt, got.Status, got.Attempts, got.Worker, c.want)
			}
			if got.Status == StatusRunning && (got.ErrorSummary != "" || got.FinishedAt != nil || len(got.Stdout) != 0) {
				t.Fatalf("a refused RecordRun changed the run: %+v", got)
			}
		}
		if got, _ := s.GetRun(ctx, "r_s"); got.ErrorSummary != "from attempt 2" {
			t.Fatalf("the run recorded %q, want attempt 2's result", got.ErrorSummary)
		}
	})
}

// TestRecordRunSessionOnce: the results of two attempts of one action run, and of a
// second run at the same revision, move the session once; a stale attempt's result
// changes neither the run nor the session.
func TestRecordRunSessionOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		k := SessionKey{ToolID: "t_1", UserID: "u_a", Context: "default"}
		if _, err := s.WriteSession(ctx, k, `{"step":1}`, "r_0", now); err != nil {
			t.Fatal(err)
		}
		expected := int64(1)
		for _, id := range []string{"r_x", "r_y"} {
			r := queuedRun(id, now)
			r.Kind, r.ActionID, r.ExpectedRev = KindAction, "next", &expected
			if err := s.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.GetRun(ctx, "r_x"); got.ExpectedRev == nil || *got.ExpectedRev != 1 {
			t.Fatalf("the run's expected revision = %v, want 1", got.ExpectedRev)
		}
		for _, attempt := range []int64{1, 2} {
			if ok, err := s.ClaimRun(ctx, "r_x", attempt, fmt.Sprintf("w%d", attempt), now); !ok || err != nil {
				t.Fatalf("ClaimRun(%d) = %v, %v", attempt, ok, err)
			}
		}
		fin := now.Add(time.Second)
		result := func(id, state string) (Run, *SessionEffect) {
			r := queuedRun(id, now)
			r.Status, r.FinishedAt = StatusSucceeded, &fin
			return r, &SessionEffect{Expected: 1, State: state}
		}
		// The stale attempt 1: nothing changes.
		r, eff := result("r_x", `{"from":"attempt 1"}`)
		if rev, ok, err := s.RecordRun(ctx, r, 1, eff); ok || rev != nil || err != nil {
			t.Fatalf("RecordRun(stale attempt) = %v, %v, %v; want not recorded", rev, ok, err)
		}
		if sess, _ := s.Session(ctx, k); sess.StateRev != 1 || sess.State != `{"step":1}` {
			t.Fatalf("a stale attempt moved the session to %d, %s", sess.StateRev, sess.State)
		}
		// Attempt 2 records and moves the session once; its repeat does nothing.
		r, eff = result("r_x", `{"from":"attempt 2"}`)
		for i := range 2 {
			rev, ok, err := s.RecordRun(ctx, r, 2, eff)
			if err != nil || ok != (i == 0) || (i == 0 && (rev == nil || *rev != 2)) {
				t.Fatalf("RecordRun(attempt 2, call %d) = %v, %v, %v", i+1, rev, ok, err)
			}
		}
		sess, _ := s.Session(ctx, k)
		if sess.StateRev != 2 || sess.State != `{"from":"attempt 2"}` || sess.LatestRunID != "r_x" {
			t.Fatalf("session = rev %d, %s, latest %s; want 2, attempt 2's state, r_x", sess.StateRev, sess.State, sess.LatestRunID)
		}
		if got, _ := s.GetRun(ctx, "r_x"); got.StateRev == nil || *got.StateRev != 2 {
			t.Fatalf("the run's state_rev = %v, want 2", got.StateRev)
		}
		// Another run submitted at revision 1 succeeds, but lost the race: no state_rev.
		if ok, _ := s.ClaimRun(ctx, "r_y", 1, "w1", now); !ok {
			t.Fatal("ClaimRun(r_y) refused")
		}
		r, eff = result("r_y", `{"from":"r_y"}`)
		if rev, ok, err := s.RecordRun(ctx, r, 1, eff); !ok || rev != nil || err != nil {
			t.Fatalf("RecordRun(lost race) = %v, %v, %v; want recorded without a revision", rev, ok, err)
		}
		if got, _ := s.GetRun(ctx, "r_y"); got.Status != StatusSucceeded || got.StateRev != nil {
			t.Fatalf("the run that lost the race: %s, state_rev %v", got.Status, got.StateRev)
		}
		if sess, _ := s.Session(ctx, k); sess.StateRev != 2 {
			t.Fatalf("the run that lost the race moved the session to %d", sess.StateRev)
		}
	})
}

// TestClaimRunCancelRequested: a cancel asked while a run runs keeps it from being
// claimed again, and a queued run is cancelled at once.
func TestClaimRunCancelRequested(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		for _, id := range []string{"r_q", "r_r"} {
			if err := s.CreateRun(ctx, queuedRun(id, now)); err != nil {
				t.Fatal(err)
			}
		}
		if got, ended, err := s.RequestCancel(ctx, "r_q", "cancelled", now); err != nil || !ended || got.Status != StatusCancelled || got.CancelRequested {
			t.Fatalf("RequestCancel(queued) = %s (ended %v, requested %v), %v; want cancelled", got.Status, ended, got.CancelRequested, err)
		}
		if ok, _ := s.ClaimRun(ctx, "r_r", 1, "w1", now); !ok {
			t.Fatal("ClaimRun refused a queued run")
		}
		if got, ended, err := s.RequestCancel(ctx, "r_r", "cancelled", now); err != nil || ended || got.Status != StatusRunning || !got.CancelRequested {
			t.Fatalf("RequestCancel(running) = %s (ended %v, requested %v), %v; want running, requested", got.Status, ended, got.CancelRequested, err)
		}
		if ok, _ := s.ClaimRun(ctx, "r_r", 2, "w2", now); ok {
			t.Fatal("a run whose cancel was asked was claimed again")
		}
		r := queuedRun("r_r", now)
		r.Status, r.FinishedAt = StatusCancelled, &now
		if _, ok, _ := s.RecordRun(ctx, r, 1, nil); !ok {
			t.Fatal("the cancelled attempt's result was refused")
		}
		if got, _ := s.GetRun(ctx, "r_r"); got.Status != StatusCancelled || got.CancelRequested {
			t.Fatalf("after recording: %s, requested %v", got.Status, got.CancelRequested)
		}
		if got, _, _ := s.RequestCancel(ctx, "r_r", "again", now); got.Status != StatusCancelled {
			t.Fatalf("RequestCancel of a final run changed it to %s", got.Status)
		}
		if ok, _ := s.EndRun(ctx, "r_r", StatusFailed, "worker lost", "", now); ok {
			t.Fatal("EndRun changed a final run")
		}
	})
}

// TestRecentSources: the sources the last n runs ran, each once; older runs' versions
// are left out.
func TestRecentSources(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		if err := s.CreateUser(ctx, newUser("u_a", "author", RoleAuthor)); err != nil {
			t.Fatal(err)
		}
		v := func(id, src string) ToolVersion {
			return ToolVersion{ID: id, ToolID: "t_1", Source: src, Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		}
		if _, err := s.CreateTool(ctx, Tool{ID: "t_1", Slug: "a", Title: "A", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v("v_1", "import pandas"), true); err != nil {
			t.Fatal(err)
		}
		for _, ver := range []ToolVersion{v("v_2", "import docx"), v("v_3", "import weasyprint")} {
			if err := s.CreateVersion(ctx, ver); err != nil {
				t.Fatal(err)
			}
		}
		// Run ids sort by creation: r_1 is the oldest.
		for i, ver := range []string{"v_1", "v_2", "v_3", "v_3"} {
			r := Run{ID: fmt.Sprintf("r_%d", i+1), ToolID: "t_1", VersionID: ver, UserID: "u_a", Context: "default", Kind: KindInitial,
				Status: StatusQueued, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`, CreatedAt: now}
			if err := s.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.RecentSources(ctx, 3)
		slices.Sort(got)
		if err != nil || fmt.Sprint(got) != "[import docx import weasyprint]" {
			t.Fatalf("RecentSources(3) = %q, %v", got, err)
		}
	})
}
