package catalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// Unpublish takes a tool away from its users, for its author and admins only; its
// versions stay, and publishing one brings it back.
func TestUnpublish(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		c := newCatalog(t, st)
		ctx := context.Background()
		f := newFixture(t, c, "letters", true)
		for _, u := range []store.User{other, visitor} {
			_, err := c.Unpublish(ctx, u, f.tool.Slug)
			check(t, "Unpublish by "+u.Name, err, catalog.ErrForbidden)
		}
		if _, _, err := c.Published(ctx, visitor, f.tool.Slug); err != nil {
			t.Fatalf("still published after refused unpublishes: %v", err)
		}
		for _, u := range []store.User{owner, admin} {
			tool, err := c.Unpublish(ctx, u, f.tool.Slug)
			if err != nil || tool.PublishedVersionID != "" {
				t.Fatalf("Unpublish by %s = %+v, %v", u.Name, tool, err)
			}
			_, _, err = c.Published(ctx, owner, f.tool.Slug)
			check(t, "Published after unpublish", err, catalog.ErrUnpublished)
			_, err = c.Visible(ctx, visitor, f.tool.Slug)
			check(t, "Visible to a user after unpublish", err, catalog.ErrNotFound)
			if vs, err := c.Versions(ctx, owner, f.tool); err != nil || len(vs) != 2 {
				t.Fatalf("versions after unpublish: %d, %v", len(vs), err)
			}
			if _, err := c.Publish(ctx, owner, f.draft.ID); err != nil {
				t.Fatal(err)
			}
			if tool, v, err := c.Published(ctx, visitor, f.tool.Slug); err != nil || v.ID != f.draft.ID || tool.PublishedVersionID != f.draft.ID {
				t.Fatalf("published again: %+v %s %v", tool, v.ID, err)
			}
		}
	})
}

// A version whose source does not compile is stored all the same, with where it does
// not, so the editor can mark it; a long message is cut.
func TestVersionKeepsItsSyntaxError(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		c := newCatalog(t, st)
		ctx := context.Background()
		f := newFixture(t, c, "broken", false)
		v, err := c.AddVersion(ctx, owner, f.tool.Slug, catalog.NewVersion{Source: "def run_tool(i, o)\n", SyntaxError: "expected ':'", SyntaxLine: 1})
		if err != nil {
			t.Fatal(err)
		}
		long, err := c.AddVersion(ctx, owner, f.tool.Slug, catalog.NewVersion{Source: "x(\n", SyntaxError: strings.Repeat("å", 400)})
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := c.OwnedVersion(ctx, owner, v.ID)
		if err != nil || got.SyntaxError != "expected ':'" || got.SyntaxLine != 1 {
			t.Fatalf("stored version: %q line %d, %v", got.SyntaxError, got.SyntaxLine, err)
		}
		got, _, err = c.OwnedVersion(ctx, owner, long.ID)
		if err != nil || len(got.SyntaxError) > 510 || !strings.HasSuffix(got.SyntaxError, "…") || !strings.HasPrefix(got.SyntaxError, "ååå") {
			t.Fatalf("long message stored as %d bytes: %q, %v", len(got.SyntaxError), got.SyntaxError, err)
		}
		if f.first.SyntaxError != "" {
			t.Fatalf("unchecked version marked: %q", f.first.SyntaxError)
		}
	})
}
