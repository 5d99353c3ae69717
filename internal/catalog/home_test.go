package catalog_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

func titles(tools []store.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Title
	}
	return out
}

func TestSortToolsSwedish(t *testing.T) {
	tools := []store.Tool{{Title: "Ärlig", Slug: "a"}, {Title: "Zebra", Slug: "b"}, {Title: "apa", Slug: "c"}, {Title: "Öga", Slug: "d"},
		{Title: "Åka", Slug: "e"}, {Title: "Ost", Slug: "f"}}
	catalog.SortTools(tools)
	if want := []string{"apa", "Ost", "Zebra", "Åka", "Ärlig", "Öga"}; !slices.Equal(titles(tools), want) {
		t.Fatalf("sorted %q, want %q", titles(tools), want)
	}
}

func TestCategorySlug(t *testing.T) {
	for in, want := range map[string]string{"Svenska": "svenska", "Bedömning": "bedomning", "  Språk & Kultur ": "sprak-kultur",
		"Åk 7–9": "ak-7-9", "!!!": "", "Matematik": "matematik"} {
		if got := catalog.CategorySlug(in); got != want {
			t.Errorf("CategorySlug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCategoriesAndHome: authors propose categories, admins manage them, and the home
// page gathers favourites, recently used tools and the sections by category, sorted by
// title in Swedish order; search finds a category's title.
func TestCategoriesAndHome(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		c := newCatalog(t, st)
		ctx := context.Background()
		mk := func(slug, title string, cats ...string) store.Tool {
			tool, _, err := c.Create(ctx, owner, catalog.NewTool{Slug: slug, Title: title, Source: "def run_tool(i, o): pass", Publish: true, Categories: cats})
			if err != nil {
				t.Fatal(err)
			}
			return tool
		}
		// Only admins manage.
		for _, u := range []store.User{owner, visitor} {
			if _, err := c.CreateCategory(ctx, u, "Svenska", ""); !errors.Is(err, catalog.ErrAdminOnly) {
				t.Fatalf("%s creating a category: %v", u.Name, err)
			}
		}
		if _, err := c.CreateCategory(ctx, admin, "Svenska", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateCategory(ctx, admin, "svenska", ""); !errors.Is(err, catalog.ErrCategoryExists) {
			t.Fatalf("a second Svenska: %v", err)
		}
		if _, err := c.CreateCategory(ctx, admin, strings.Repeat("x", 61), ""); !errors.Is(err, catalog.ErrInvalidCategory) {
			t.Fatalf("a long title: %v", err)
		}
		arlig := mk("arlig", "Ärlig", "svenska", "Bedömning")
		mk("zebra", "Zebra", "Svenska")
		mk("apa", "Apa", "Svenska")
		mk("ost", "Ost")
		if _, _, err := c.Create(ctx, owner, catalog.NewTool{Slug: "many", Title: "M", Source: "x = 1",
			Categories: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}}); !errors.Is(err, catalog.ErrInvalidCategory) {
			t.Fatalf("nine categories: %v", err)
		}
		if _, err := c.Visible(ctx, owner, "many"); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("a refused tool was stored: %v", err)
		}
		if _, err := c.SetCategories(ctx, visitor, "apa", []string{"Svenska"}); !errors.Is(err, catalog.ErrForbidden) {
			t.Fatalf("someone else setting a tool's categories: %v", err)
		}

		// The proposal Bedömning: an admin sees it, a user does not, nor can browse it.
		slugsOf := func(u store.User) []string {
			cats, err := c.Categories(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, k := range cats {
				out = append(out, k.Slug)
			}
			return out
		}
		if got := slugsOf(admin); !slices.Equal(got, []string{"bedomning", "svenska"}) {
			t.Fatalf("an admin's categories %q", got)
		}
		if got := slugsOf(visitor); !slices.Equal(got, []string{"svenska"}) {
			t.Fatalf("a user's categories %q", got)
		}
		if _, _, err := c.CategoryTools(ctx, visitor, "bedomning"); !errors.Is(err, catalog.ErrNoCategory) {
			t.Fatalf("a user browsing a proposal: %v", err)
		}
		if _, err := c.UpdateCategory(ctx, owner, "bedomning", nil, true); !errors.Is(err, catalog.ErrAdminOnly) {
			t.Fatalf("an author approving: %v", err)
		}
		if _, err := c.UpdateCategory(ctx, admin, "bedomning", nil, true); err != nil {
			t.Fatal(err)
		}
		cat, tools, err := c.CategoryTools(ctx, visitor, "svenska")
		if err != nil || cat.Title != "Svenska" || !slices.Equal(titles(tools), []string{"Apa", "Zebra", "Ärlig"}) {
			t.Fatalf("Svenska lists %q (%v)", titles(tools), err)
		}

		// The home page.
		for _, ref := range []string{"zebra", "arlig", "arlig"} {
			if _, err := c.SetFavourite(ctx, visitor, ref, true); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.SetFavourite(ctx, visitor, "nope", true); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("a favourite of a missing tool: %v", err)
		}
		home, err := c.Home(ctx, visitor, "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(titles(home.Favourites), []string{"Zebra", "Ärlig"}) || len(home.Recent) != 0 {
			t.Fatalf("favourites %q, recent %q", titles(home.Favourites), titles(home.Recent))
		}
		var sections []string
		for _, s := range home.Sections {
			sections = append(sections, s.Category.Title+": "+strings.Join(titles(s.Tools), ", "))
		}
		if want := []string{"Bedömning: Ärlig", "Svenska: Apa, Zebra, Ärlig", ": Ost"}; !slices.Equal(sections, want) {
			t.Fatalf("sections %q, want %q", sections, want)
		}
		if home, _ := c.Home(ctx, visitor, "BEDÖMNING"); !slices.Equal(titles(home.Tools), []string{"Ärlig"}) {
			t.Fatalf("searching a category's title finds %q", titles(home.Tools))
		}
		if fav, err := c.IsFavourite(ctx, visitor, arlig.ID); !fav || err != nil {
			t.Fatalf("IsFavourite: %v %v", fav, err)
		}

		// Deleting a category: its tools lose it.
		if err := c.DeleteCategory(ctx, admin, "bedomning"); err != nil {
			t.Fatal(err)
		}
		if cats, _ := c.CategoriesOf(ctx, arlig.ID); len(cats) != 1 || cats[0].Slug != "svenska" {
			t.Fatalf("Ärlig's categories after deleting Bedömning: %+v", cats)
		}
	})
}
