package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestReports: a report reads its run's summary and manifest, the tool and the
// reporter's name; a run has one report; a maintainer's listing holds only the reports
// on their tools, newest first, paged by id; closing is once; the count for the rate
// limit sees only the window; and a report goes with its reporter's purge, its run and
// its tool.
func TestReports(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []User{newUser("u_a", "ada", RoleAuthor), newUser("u_b", "bo", RoleAuthor), newUser("u_t", "tea", RoleUser)} {
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		for _, x := range []struct{ tool, slug, author string }{{"t_a", "ada-tool", "u_a"}, {"t_b", "bo-tool", "u_b"}} {
			v := ToolVersion{ID: "v_" + x.tool, ToolID: x.tool, Source: "s", Entrypoint: "run_tool", CreatedBy: x.author, CreatedAt: now}
			if _, err := s.CreateTool(ctx, Tool{ID: x.tool, Slug: x.slug, Title: x.slug, AuthorID: x.author, CreatedAt: now, UpdatedAt: now}, v, true); err != nil {
				t.Fatal(err)
			}
		}
		mkRun := func(id, tool string) {
			t.Helper()
			r := Run{ID: id, ToolID: tool, VersionID: "v_" + tool, UserID: "u_t", Context: "default", Kind: KindInitial, Status: StatusFailed,
				ErrorSummary: "Tool execution failed: boom " + id, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]",
				InputManifest: `{"files":[{"name":"klass.csv","bytes":12}]}`, CreatedAt: now}
			if err := s.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		// Ids grow with time, as ids.New's ULIDs do.
		report := func(id, run, tool string, at time.Time) {
			t.Helper()
			if err := s.CreateReport(ctx, Report{ID: id, RunID: run, ToolID: tool, VersionID: "v_" + tool, UserID: "u_t", Message: "hjälp " + id,
				ShareFiles: id == "pr_1", CreatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		for i, x := range []struct{ run, tool string }{{"r_1", "t_a"}, {"r_2", "t_a"}, {"r_3", "t_b"}, {"r_4", "t_a"}} {
			mkRun(x.run, x.tool)
			report("pr_"+x.run[2:], x.run, x.tool, now.Add(time.Duration(i-3)*time.Hour))
		}
		if err := s.CreateReport(ctx, Report{ID: "pr_9", RunID: "r_1", ToolID: "t_a", VersionID: "v_t_a", UserID: "u_t", CreatedAt: now}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a second report of a run: %v, want ErrConflict", err)
		}
		p, err := s.Report(ctx, "pr_1")
		if err != nil || p.RunID != "r_1" || p.UserName != "tea" || p.ToolSlug != "ada-tool" || p.Status != ReportOpen || !p.ShareFiles ||
			p.ErrorSummary != "Tool execution failed: boom r_1" || p.RunStatus != StatusFailed || p.Message != "hjälp pr_1" ||
			p.InputManifest != `{"files":[{"name":"klass.csv","bytes":12}]}` || !p.CreatedAt.Equal(now.Add(-3*time.Hour)) || p.ClosedAt != nil {
			t.Fatalf("Report = %+v, %v", p, err)
		}
		if p, err := s.RunReport(ctx, "r_3"); err != nil || p.ID != "pr_3" {
			t.Fatalf("RunReport(r_3) = %+v, %v", p, err)
		}
		if _, err := s.RunReport(ctx, "r_none"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("RunReport of an unreported run: %v", err)
		}

		ids := func(list []Report, err error) []string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, p := range list {
				out = append(out, p.ID)
			}
			return out
		}
		for _, c := range []struct {
			f    ReportFilter
			want []string
		}{
			{ReportFilter{MaintainerID: "u_a", Limit: 10}, []string{"pr_4", "pr_2", "pr_1"}},
			{ReportFilter{MaintainerID: "u_a", Limit: 2}, []string{"pr_4", "pr_2"}},
			{ReportFilter{MaintainerID: "u_a", Before: "pr_2", Limit: 2}, []string{"pr_1"}},
			{ReportFilter{MaintainerID: "u_b", Limit: 10}, []string{"pr_3"}},
			{ReportFilter{MaintainerID: "u_t", Limit: 10}, nil},
			{ReportFilter{Limit: 10}, []string{"pr_4", "pr_3", "pr_2", "pr_1"}},
		} {
			if got := ids(s.Reports(ctx, c.f)); !slices.Equal(got, c.want) {
				t.Errorf("Reports(%+v) = %v, want %v", c.f, got, c.want)
			}
		}

		if n, err := s.ReportsSince(ctx, "u_t", now.Add(-90*time.Minute)); err != nil || n != 2 {
			t.Fatalf("ReportsSince the last 90 minutes = %d, %v; want 2", n, err)
		}
		if ok, err := s.CloseReport(ctx, "pr_2", "u_a", now); err != nil || !ok {
			t.Fatalf("CloseReport = %v, %v", ok, err)
		}
		if ok, err := s.CloseReport(ctx, "pr_2", "u_a", now.Add(time.Minute)); err != nil || ok {
			t.Fatalf("closing a closed report = %v, %v; want false", ok, err)
		}
		if p, _ := s.Report(ctx, "pr_2"); p.Status != ReportClosed || p.ClosedAt == nil || !p.ClosedAt.Equal(now) || p.ClosedBy != "u_a" {
			t.Fatalf("a closed report: %+v", p)
		}
		if got := ids(s.UserReports(ctx, "u_t")); !slices.Equal(got, []string{"pr_1", "pr_2", "pr_3", "pr_4"}) {
			t.Fatalf("UserReports = %v", got)
		}

		// A report goes with its run.
		if err := s.DeleteRunRecord(ctx, "r_4"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Report(ctx, "pr_4"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the report of a deleted run: %v", err)
		}
		// And with its tool (skrip deletes no tool yet; the foreign key is ready).
		if _, err := s.exec(ctx, "DELETE FROM tools WHERE id = ?", "t_b"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Report(ctx, "pr_3"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the report of a deleted tool: %v", err)
		}
		// And with its reporter: PurgeUser empties it.
		if n, err := s.CountUserRows(ctx, "problem_reports", "user_id", "u_t"); err != nil || n != 2 {
			t.Fatalf("CountUserRows = %d, %v", n, err)
		}
		if err := s.PurgeUser(ctx, "u_t"); err != nil {
			t.Fatal(err)
		}
		if got := ids(s.Reports(ctx, ReportFilter{Limit: 10})); len(got) != 0 {
			t.Fatalf("reports after their reporter was purged: %v", got)
		}
	})
}
