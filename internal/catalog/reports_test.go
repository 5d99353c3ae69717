package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// TestReportRules: only a finished run's owner reports it, once, with a message within
// its cap; a user makes at most ReportsPerHour reports an hour; and only the tool's
// maintainers (its author, admins) see and close the reports.
func TestReportRules(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		c := newCatalog(t, st)
		f := newFixture(t, c, "crashy", true)
		n := 0
		newRun := func(user store.User, status string) store.Run {
			t.Helper()
			n++
			r := store.Run{ID: fmt.Sprintf("r_%02d", n), ToolID: f.tool.ID, VersionID: f.first.ID, UserID: user.ID, Context: "default", Kind: store.KindInitial,
				Status: status, ErrorSummary: "Tool execution failed", Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]",
				InputManifest: `{"files":[]}`, CreatedAt: time.Now()}
			if err := st.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			return r
		}
		rn := newRun(visitor, store.StatusFailed)
		for _, c2 := range []struct {
			name    string
			u       store.User
			run     store.Run
			message string
			want    error
			reason  string
		}{
			{"an admin on another's run", admin, rn, "", catalog.ErrRunNotReportable, ""},
			{"the tool's author on another's run", owner, rn, "", catalog.ErrRunNotReportable, ""},
			{"a message over the cap", visitor, rn, strings.Repeat("å", catalog.MaxReportBytes/2+1), catalog.ErrReportInvalid, "max_length"},
			{"a message that is not UTF-8", visitor, rn, "a\xffb", catalog.ErrReportInvalid, "utf8"},
			{"a running run", visitor, newRun(visitor, store.StatusRunning), "", catalog.ErrRunNotOver, ""},
		} {
			_, err := c.Report(ctx, c2.u, c2.run, c2.message, false)
			var e *errs.Error
			if !errors.Is(err, c2.want) || !errors.As(err, &e) || (c2.reason != "" && e.Details["rule"] != c2.reason) {
				t.Errorf("%s: err = %v, want %v", c2.name, err, c2.want)
			}
		}
		p, err := c.Report(ctx, visitor, rn, "  Det gick inte.\n", true)
		if err != nil || p.Message != "Det gick inte." || !p.ShareFiles || p.Status != store.ReportOpen || p.UserName != visitor.Name {
			t.Fatalf("Report = %+v, %v", p, err)
		}
		if _, err := c.Report(ctx, visitor, rn, "", false); !errors.Is(err, catalog.ErrReported) {
			t.Fatalf("a second report: %v", err)
		}
		if got, err := c.RunReport(ctx, visitor, rn); err != nil || got == nil || got.ID != p.ID {
			t.Fatalf("RunReport = %+v, %v", got, err)
		}
		if got, err := c.RunReport(ctx, owner, rn); err != nil || got != nil {
			t.Fatalf("RunReport for someone else = %+v, %v", got, err)
		}

		// Who sees it.
		for _, w := range []struct {
			u    store.User
			sees bool
		}{{owner, true}, {admin, true}, {other, false}, {visitor, false}} {
			list, _, err := c.Reports(ctx, w.u, "", 10)
			if err != nil || (len(list) == 1) != w.sees {
				t.Errorf("%s lists %d reports, %v", w.u.Name, len(list), err)
			}
			if _, err := c.MaintainedReport(ctx, w.u, p.ID); (err == nil) != w.sees || (err != nil && !errors.Is(err, catalog.ErrReportNotFound)) {
				t.Errorf("%s reads the report: %v", w.u.Name, err)
			}
		}
		if _, err := c.CloseReport(ctx, other, p.ID); !errors.Is(err, catalog.ErrReportNotFound) {
			t.Fatalf("another author closing it: %v", err)
		}
		if p, err := c.CloseReport(ctx, owner, p.ID); err != nil || p.Status != store.ReportClosed || p.ClosedBy != owner.ID {
			t.Fatalf("CloseReport = %+v, %v", p, err)
		}
		if p, err := c.CloseReport(ctx, owner, p.ID); err != nil || p.Status != store.ReportClosed {
			t.Fatalf("closing it again = %+v, %v", p, err)
		}
		for _, bad := range []struct {
			cursor string
			limit  int
		}{{"", 0}, {"", catalog.MaxReportPage + 1}, {"bm9wZQ", 10}, {"!", 10}} {
			if _, _, err := c.Reports(ctx, owner, bad.cursor, bad.limit); !errors.Is(err, catalog.ErrReportInvalid) {
				t.Errorf("Reports(%q, %d): %v", bad.cursor, bad.limit, err)
			}
		}

		// The hourly limit: ReportsPerHour in all, the one above included.
		for i := 1; i < catalog.ReportsPerHour; i++ {
			if _, err := c.Report(ctx, visitor, newRun(visitor, store.StatusFailed), "", false); err != nil {
				t.Fatalf("report %d: %v", i+1, err)
			}
		}
		_, err = c.Report(ctx, visitor, newRun(visitor, store.StatusFailed), "", false)
		if !errors.Is(err, catalog.ErrReportsThrottled) || errs.RetryAfterOf(err) <= 0 {
			t.Fatalf("a report over the limit: %v", err)
		}
		// Another user is not held back by it.
		if _, err := c.Report(ctx, other, newRun(other, store.StatusFailed), "", false); err != nil {
			t.Fatalf("another user's report: %v", err)
		}
		// SKRIP_REPORTS_PER_HOUR sets the limit: at 2, the other user's second report is
		// taken and a third refused, naming 2.
		c.SetReportsPerHour(2)
		if _, err := c.Report(ctx, other, newRun(other, store.StatusFailed), "", false); err != nil {
			t.Fatalf("another user's second report: %v", err)
		}
		_, err = c.Report(ctx, other, newRun(other, store.StatusFailed), "", false)
		if !errors.Is(err, catalog.ErrReportsThrottled) || !strings.Contains(err.Error(), "you made 2 problem reports") {
			t.Fatalf("a report over a limit of 2: %v", err)
		}
	})
}
