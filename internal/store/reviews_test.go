package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// TestReviews: a user may be a reviewer; a submission is pending with its audit event;
// the same version twice conflicts, another version of the tool supersedes the waiting
// one; approving publishes exactly the review's version and records who and when, with
// its audit event; a decided review is not decided again (ErrNotPending) and a missing
// one is ErrNotFound, neither changing anything; listings filter by status and tool and
// page by id.
func TestReviews(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		for _, u := range []store.User{{ID: "u_a", Name: "ada", Role: store.RoleAuthor}, {ID: "u_r", Name: "rita", Role: store.RoleReviewer}} {
			u.CreatedAt, u.State = now, store.StateActive
			if err := s.CreateUser(ctx, u); err != nil {
				t.Fatalf("creating %s (%s): %v", u.Name, u.Role, err)
			}
		}
		if u, err := s.User(ctx, "u_r"); err != nil || u.Role != store.RoleReviewer {
			t.Fatalf("the reviewer: %+v, %v", u, err)
		}
		if err := s.SetRole(ctx, "u_a", store.RoleReviewer); err != nil {
			t.Fatal(err)
		}
		if err := s.SetRole(ctx, "u_a", store.RoleAuthor); err != nil {
			t.Fatal(err)
		}
		v := func(id string) store.ToolVersion {
			return store.ToolVersion{ID: id, ToolID: "t_1", Source: "s " + id, Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		}
		if _, err := s.CreateTool(ctx, store.Tool{ID: "t_1", Slug: "kalk", Title: "Kalk", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v("v_1"), false); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"v_2", "v_3"} {
			if err := s.CreateVersion(ctx, v(id)); err != nil {
				t.Fatal(err)
			}
		}
		ev := func(id, action string) store.AuditEvent {
			return store.AuditEvent{ID: id, At: now, ActorID: "u_a", Actor: "ada", Action: action, Target: "kalk"}
		}
		submit := func(id, version string) error {
			return s.SubmitReview(ctx, store.Review{ID: id, ToolID: "t_1", VersionID: version, SubmittedBy: "u_a", Note: "not " + id, SubmittedAt: now}, ev("ev_"+id, "review_submitted"))
		}
		if err := submit("rv_1", "v_1"); err != nil {
			t.Fatal(err)
		}
		if err := submit("rv_1b", "v_1"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("the same version twice: %v, want ErrConflict", err)
		}
		r, err := s.Review(ctx, "rv_1")
		if err != nil || r.Status != store.ReviewPending || r.SubmitterName != "ada" || r.ToolSlug != "kalk" || r.Note != "not rv_1" ||
			r.DecidedAt != nil || r.PublishedVersionID != "" || !r.SubmittedAt.Equal(now) {
			t.Fatalf("Review = %+v, %v", r, err)
		}
		if err := submit("rv_2", "v_2"); err != nil {
			t.Fatal(err)
		}
		if r, _ := s.Review(ctx, "rv_1"); r.Status != store.ReviewSuperseded {
			t.Fatalf("the waiting review of v_1 is %s, want superseded", r.Status)
		}
		if err := s.DecideReview(ctx, "rv_1", store.ReviewApproved, "u_r", "", now, ev("ev_x", "review_approved")); !errors.Is(err, store.ErrNotPending) {
			t.Fatalf("approving a superseded review: %v, want ErrNotPending", err)
		}
		if err := s.DecideReview(ctx, "rv_nope", store.ReviewApproved, "u_r", "", now, ev("ev_y", "review_approved")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("approving a missing review: %v, want ErrNotFound", err)
		}
		if tool, _ := s.Tool(ctx, "t_1"); tool.PublishedVersionID != "" {
			t.Fatalf("a refused approval published %s", tool.PublishedVersionID)
		}
		later := now.Add(time.Minute)
		if err := s.DecideReview(ctx, "rv_2", store.ReviewChangesRequested, "u_r", "Rubrik saknas", later, ev("ev_2c", "review_changes_requested")); err != nil {
			t.Fatal(err)
		}
		r, _ = s.Review(ctx, "rv_2")
		if r.Status != store.ReviewChangesRequested || r.Comment != "Rubrik saknas" || r.DeciderName != "rita" || r.DecidedAt == nil || !r.DecidedAt.Equal(later) {
			t.Fatalf("changes requested: %+v", r)
		}
		if err := submit("rv_3", "v_3"); err != nil {
			t.Fatal(err)
		}
		if err := s.DecideReview(ctx, "rv_3", store.ReviewApproved, "u_r", "", later, ev("ev_3a", "review_approved")); err != nil {
			t.Fatal(err)
		}
		if tool, _ := s.Tool(ctx, "t_1"); tool.PublishedVersionID != "v_3" {
			t.Fatalf("approving rv_3 published %q, want v_3", tool.PublishedVersionID)
		}
		if r, _ := s.Review(ctx, "rv_3"); r.PublishedVersionID != "v_3" || r.Status != store.ReviewApproved {
			t.Fatalf("the approved review: %+v", r)
		}
		events, err := s.Audit(ctx, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range events {
			actions = append(actions, e.ID+":"+e.Action)
		}
		// Newest first, at equal times by id; ev_x and ev_y were refused with their decisions.
		want := map[string]bool{"ev_rv_1:review_submitted": true, "ev_rv_2:review_submitted": true, "ev_2c:review_changes_requested": true,
			"ev_rv_3:review_submitted": true, "ev_3a:review_approved": true}
		if len(actions) != len(want) {
			t.Fatalf("audit events %v, want %v", actions, want)
		}
		for _, a := range actions {
			if !want[a] {
				t.Fatalf("audit events %v, want %v", actions, want)
			}
		}
		for _, tc := range []struct {
			f    store.ReviewFilter
			want []string
		}{
			{store.ReviewFilter{Limit: 10}, []string{"rv_3", "rv_2", "rv_1"}},
			{store.ReviewFilter{Status: store.ReviewPending, Limit: 10}, nil},
			{store.ReviewFilter{Status: store.ReviewSuperseded, Limit: 10}, []string{"rv_1"}},
			{store.ReviewFilter{ToolID: "t_1", Limit: 2}, []string{"rv_3", "rv_2"}},
			{store.ReviewFilter{ToolID: "t_1", Before: "rv_2", Limit: 2}, []string{"rv_1"}},
			{store.ReviewFilter{ToolID: "t_other", Limit: 2}, nil},
		} {
			list, err := s.Reviews(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range list {
				got = append(got, r.ID)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) || (len(got) > 1 && got[len(got)-1] != tc.want[len(tc.want)-1]) {
				t.Errorf("Reviews(%+v) = %v, want %v", tc.f, got, tc.want)
			}
		}
	})
}

// TestDecideReviewOnce: reviewers deciding one review at once (approving and asking for
// changes) leave exactly one decision, with exactly one audit event; the others get
// ErrNotPending and change nothing.
func TestDecideReviewOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		if err := s.CreateUser(ctx, store.User{ID: "u_a", Name: "ada", Role: store.RoleAuthor, CreatedAt: now, State: store.StateActive}); err != nil {
			t.Fatal(err)
		}
		v := store.ToolVersion{ID: "v_1", ToolID: "t_1", Source: "s", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		if _, err := s.CreateTool(ctx, store.Tool{ID: "t_1", Slug: "kalk", Title: "Kalk", AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v, false); err != nil {
			t.Fatal(err)
		}
		if err := s.SubmitReview(ctx, store.Review{ID: "rv_1", ToolID: "t_1", VersionID: "v_1", SubmittedBy: "u_a", SubmittedAt: now},
			store.AuditEvent{ID: "ev_s", At: now, Action: "review_submitted"}); err != nil {
			t.Fatal(err)
		}
		const n = 8
		errs := make(chan error, n)
		for i := range n {
			go func() {
				status, action := store.ReviewApproved, "review_approved"
				if i%2 == 1 {
					status, action = store.ReviewChangesRequested, "review_changes_requested"
				}
				errs <- s.DecideReview(ctx, "rv_1", status, "u_a", "c", now, store.AuditEvent{ID: "ev_" + string(rune('a'+i)), At: now, Action: action})
			}()
		}
		won := 0
		for range n {
			switch err := <-errs; {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrNotPending):
				t.Errorf("a losing decision: %v, want ErrNotPending", err)
			}
		}
		events, err := s.Audit(ctx, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := s.Review(ctx, "rv_1")
		tool, _ := s.Tool(ctx, "t_1")
		if won != 1 || len(events) != 2 || (r.Status == store.ReviewApproved) != (tool.PublishedVersionID == "v_1") {
			t.Fatalf("%d decisions won, %d audit events, review %s, published %q", won, len(events), r.Status, tool.PublishedVersionID)
		}
	})
}
