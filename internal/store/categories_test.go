package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// seedTools stores author u_a and a published tool for each slug (t_<slug>).
func seedTools(t *testing.T, s *Store, now time.Time, slugs ...string) {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateUser(ctx, newUser("u_a", "author", RoleAuthor)); err != nil {
		t.Fatal(err)
	}
	for _, slug := range slugs {
		v := ToolVersion{ID: "v_" + slug, ToolID: "t_" + slug, Source: "def run_tool(i, o): pass", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: now}
		if _, err := s.CreateTool(ctx, Tool{ID: "t_" + slug, Slug: slug, Title: slug, AuthorID: "u_a", CreatedAt: now, UpdatedAt: now}, v, true); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCategories: an admin's categories and an author's proposals, the categories of a
// tool (a proposal of a slug that exists joins it), counts, renaming, approving, and
// deleting a category or a tool takes the links with it.
func TestCategories(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedTools(t, s, now, "apa", "zebra")
		sv := Category{ID: "c_sv", Slug: "svenska", Title: "Svenska", Approved: true, CreatedAt: now}
		if err := s.CreateCategory(ctx, sv); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateCategory(ctx, Category{ID: "c_x", Slug: "svenska", Title: "Svenska 2", CreatedAt: now}); !errors.Is(err, ErrConflict) {
			t.Fatalf("a second category with slug svenska: %v, want ErrConflict", err)
		}
		// apa: Svenska and a proposal; zebra proposes the same new one under another id.
		if err := s.SetToolCategories(ctx, "t_apa", []Category{sv, {ID: "c_p1", Slug: "bedomning", Title: "Bedömning", ProposedBy: "u_a", CreatedAt: now}}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetToolCategories(ctx, "t_zebra", []Category{{ID: "c_p2", Slug: "bedomning", Title: "bedömning", ProposedBy: "u_a", CreatedAt: now}}); err != nil {
			t.Fatal(err)
		}
		cats, err := s.Categories(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := func(cs []Category) []string {
			var out []string
			for _, c := range cs {
				out = append(out, c.ID+" "+c.Title+" "+map[bool]string{true: "approved", false: "proposed"}[c.Approved]+" "+string(rune('0'+c.Tools)))
			}
			return out
		}
		if want := []string{"c_p1 Bedömning proposed 2", "c_sv Svenska approved 1"}; !slices.Equal(got(cats), want) {
			t.Fatalf("categories %q, want %q", got(cats), want)
		}
		links, err := s.ToolCategories(ctx)
		if err != nil || !slices.Equal(links, []ToolCategory{{"t_apa", "c_p1"}, {"t_apa", "c_sv"}, {"t_zebra", "c_p1"}}) {
			t.Fatalf("links %v, %v", links, err)
		}

		// Setting again replaces; a proposal left with no tool goes (however often an
		// author changes their mind, proposals stay bounded by the tools' categories).
		for i := range 3 {
			if err := s.SetToolCategories(ctx, "t_apa", []Category{{ID: fmt.Sprint("c_n", i), Slug: fmt.Sprint("ny-", i), Title: "Ny", CreatedAt: now}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SetToolCategories(ctx, "t_apa", []Category{sv}); err != nil {
			t.Fatal(err)
		}
		if cats, _ := s.Categories(ctx); !slices.Equal(got(cats), []string{"c_p1 Bedömning proposed 1", "c_sv Svenska approved 1"}) {
			t.Fatalf("after changing apa's categories: %q; want no orphaned proposals", got(cats))
		}
		// Approving and renaming keep the id.
		p, err := s.Category(ctx, "bedomning")
		if err != nil || p.ProposedBy != "u_a" || p.Approved {
			t.Fatalf("the proposal: %+v %v", p, err)
		}
		p.Approved, p.Title = true, "Bedömning och betyg"
		if err := s.UpdateCategory(ctx, p); err != nil {
			t.Fatal(err)
		}
		if p2, _ := s.Category(ctx, "bedomning"); !p2.Approved || p2.Title != "Bedömning och betyg" {
			t.Fatalf("after approving and renaming: %+v", p2)
		}
		if _, err := s.Category(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("a missing category: %v", err)
		}

		// Deleting a category takes its links; deleting a tool takes its own.
		if err := s.DeleteCategory(ctx, "c_p1"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteCategory(ctx, "c_p1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("deleting a deleted category: %v", err)
		}
		if _, err := s.exec(ctx, "DELETE FROM tools WHERE id = ?", "t_apa"); err != nil {
			t.Fatal(err)
		}
		if links, err := s.ToolCategories(ctx); err != nil || len(links) != 0 {
			t.Fatalf("links after deleting the category and the tool: %v %v", links, err)
		}
	})
}

// TestFavouritesAndRecentTools: favourites are idempotent, per user, and go with their
// tool or user; recently used tools are the user's distinct tools by their last
// production run, newest first, at most the limit, from an indexed query.
func TestFavouritesAndRecentTools(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedTools(t, s, now, "apa", "zebra", "arlig")
		if err := s.CreateUser(ctx, newUser("u_b", "bea", RoleUser)); err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"t_zebra", "t_apa", "t_apa"} {
			if err := s.SetFavourite(ctx, "u_b", id, true, now.Add(time.Duration(i)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.SetFavourite(ctx, "u_a", "t_arlig", true, now); err != nil {
			t.Fatal(err)
		}
		if favs, err := s.Favourites(ctx, "u_b"); err != nil || !slices.Equal(favs, []string{"t_apa", "t_zebra"}) {
			t.Fatalf("bea's favourites %v, %v", favs, err)
		}
		for range 2 {
			if err := s.SetFavourite(ctx, "u_b", "t_zebra", false, now); err != nil {
				t.Fatal(err)
			}
		}
		if favs, _ := s.Favourites(ctx, "u_b"); !slices.Equal(favs, []string{"t_apa"}) {
			t.Fatalf("after unmarking zebra twice: %v", favs)
		}

		// Runs: zebra, apa, zebra again, arlig in the editor, and someone else's.
		for i, r := range []struct{ tool, user, ctx string }{
			{"zebra", "u_b", "default"}, {"apa", "u_b", "default"}, {"zebra", "u_b", "default"},
			{"arlig", "u_b", "sandbox:v_arlig"}, {"arlig", "u_a", "default"},
		} {
			rn := Run{ID: "r_" + string(rune('a'+i)), ToolID: "t_" + r.tool, VersionID: "v_" + r.tool, UserID: r.user, Context: r.ctx, Kind: KindInitial,
				Status: StatusSucceeded, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`,
				CreatedAt: now.Add(time.Duration(i) * time.Minute)}
			if err := s.CreateRun(ctx, rn); err != nil {
				t.Fatal(err)
			}
		}
		if got, err := s.RecentTools(ctx, "u_b", "default", 6); err != nil || !slices.Equal(got, []string{"t_zebra", "t_apa"}) {
			t.Fatalf("bea's recent tools %v, %v; want zebra, apa", got, err)
		}
		if got, _ := s.RecentTools(ctx, "u_b", "default", 1); !slices.Equal(got, []string{"t_zebra"}) {
			t.Fatalf("bea's one recent tool %v", got)
		}
		if s.dialect == SQLite {
			var plan []string
			rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN SELECT tool_id FROM runs WHERE user_id = ? AND context = ? GROUP BY tool_id ORDER BY MAX(created_at) DESC, tool_id LIMIT ?", "u_b", "default", 6)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id, parent, notused int
				var detail string
				rows.Scan(&id, &parent, &notused, &detail)
				plan = append(plan, detail)
			}
			rows.Close()
			if !strings.Contains(strings.Join(plan, "\n"), "runs_user_context_tool") {
				t.Errorf("the recent tools' query does not use its index:\n%s", strings.Join(plan, "\n"))
			}
		} else {
			var n int
			if err := s.queryRow(ctx, "SELECT COUNT(*) FROM pg_indexes WHERE indexname = 'runs_user_context_tool' AND schemaname = current_schema()").Scan(&n); err != nil || n != 1 {
				t.Errorf("runs_user_context_tool: %d indexes, %v", n, err)
			}
		}

		// A deleted tool leaves no favourites; a purged user neither.
		if _, err := s.exec(ctx, "DELETE FROM tools WHERE id = ?", "t_arlig"); err != nil {
			t.Fatal(err)
		}
		if favs, _ := s.Favourites(ctx, "u_a"); len(favs) != 0 {
			t.Fatalf("favourites of a deleted tool: %v", favs)
		}
		if err := s.PurgeUser(ctx, "u_b"); err != nil {
			t.Fatal(err)
		}
		if n, err := s.CountUserRows(ctx, "favourites", "user_id", "u_b"); err != nil || n != 0 {
			t.Fatalf("a purged user's favourites: %d, %v", n, err)
		}
	})
}
