package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// The actors of the visibility table: the tool's author, an admin, another author and a
// plain user.
var (
	owner   = store.User{ID: "u_owner", Name: "owner", Role: store.RoleAuthor}
	admin   = store.User{ID: "u_admin", Name: "admin", Role: store.RoleAdmin}
	other   = store.User{ID: "u_other", Name: "other", Role: store.RoleAuthor}
	visitor = store.User{ID: "u_user", Name: "user", Role: store.RoleUser}
)

func newCatalog(t *testing.T, st *store.Store) *catalog.Service {
	t.Helper()
	for _, u := range []store.User{owner, admin, other, visitor} {
		u.CreatedAt = time.Now()
		if err := st.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
	return catalog.New(st, 10)
}

// fixture is one tool of the owner's: published or a draft, with a draft version beside
// the first one (never published).
type fixture struct {
	tool  store.Tool
	first store.ToolVersion // the published version of a published tool
	draft store.ToolVersion // a later version nobody published
}

func newFixture(t *testing.T, c *catalog.Service, slug string, published bool) fixture {
	t.Helper()
	ctx := context.Background()
	tool, first, err := c.Create(ctx, owner, catalog.NewTool{Slug: slug, Title: "T " + slug, Source: "def run_tool(i, o): pass", Publish: published})
	if err != nil {
		t.Fatal(err)
	}
	draft, err := c.AddVersion(ctx, owner, tool.ID, catalog.NewVersion{Source: "def run_tool(i, o): return None"})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{tool: tool, first: first, draft: draft}
}

// TestVisibilityAndOwnership is docs/spec.md §2's table for tools: published tools are everyone's
// to see and run; drafts, versions and changes are for the tool's author and admins.
// Something that exists but is not the caller's to see answers catalog.ErrNotFound (a
// version: ErrNoVersion), just as something that does not exist (existence never leaks); a tool the caller sees but may
// not change answers ErrForbidden (403).
func TestVisibilityAndOwnership(t *testing.T) {
	notFound, forbidden, unpublished := catalog.ErrNotFound, catalog.ErrForbidden, catalog.ErrUnpublished
	noVersion := catalog.ErrNoVersion // a version the caller may not see answers as a missing one
	cases := []struct {
		actor     store.User
		published bool
		// What each call answers: nil, or the sentinel it must wrap.
		visible, prod, owned, version, draft, versions, publish error
		listed                                                  bool
	}{
		{owner, true, nil, nil, nil, nil, nil, nil, nil, true},
		{owner, false, nil, unpublished, nil, nil, nil, nil, nil, true},
		{admin, true, nil, nil, nil, nil, nil, nil, nil, true},
		{admin, false, nil, unpublished, nil, nil, nil, nil, nil, true},
		{other, true, nil, nil, forbidden, noVersion, noVersion, notFound, noVersion, true},
		{other, false, notFound, notFound, notFound, noVersion, noVersion, notFound, noVersion, false},
		{visitor, true, nil, nil, forbidden, noVersion, noVersion, notFound, noVersion, true},
		{visitor, false, notFound, notFound, notFound, noVersion, noVersion, notFound, noVersion, false},
	}
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		c := newCatalog(t, st)
		ctx := context.Background()
		for i, tc := range cases {
			name := fmt.Sprintf("%s/published=%v", tc.actor.Name, tc.published)
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, c, fmt.Sprintf("tool-%d", i), tc.published)
				u := tc.actor

				for _, ref := range []string{f.tool.ID, f.tool.Slug} {
					got, err := c.Visible(ctx, u, ref)
					check(t, "Visible("+ref+")", err, tc.visible)
					if err == nil && got.ID != f.tool.ID {
						t.Errorf("Visible(%s) = %s, want %s", ref, got.ID, f.tool.ID)
					}
				}
				tool, v, err := c.Published(ctx, u, f.tool.Slug)
				check(t, "Published", err, tc.prod)
				if err == nil && (tool.ID != f.tool.ID || v.ID != f.first.ID) {
					t.Errorf("Published = %s, version %s; want %s, the published version %s (not the draft %s)", tool.ID, v.ID, f.tool.ID, f.first.ID, f.draft.ID)
				}
				_, err = c.Owned(ctx, u, f.tool.Slug)
				check(t, "Owned", err, tc.owned)
				_, err = c.AddVersion(ctx, u, f.tool.Slug, catalog.NewVersion{Source: "def run_tool(i, o): pass"})
				check(t, "AddVersion", err, tc.owned)
				_, err = c.UpdateInfo(ctx, u, f.tool.Slug, "New title", "", "", "")
				check(t, "UpdateInfo", err, tc.owned)
				gotV, gotT, err := c.OwnedVersion(ctx, u, f.first.ID)
				check(t, "OwnedVersion(first)", err, tc.version)
				if err == nil && (gotV.ID != f.first.ID || gotT.ID != f.tool.ID) {
					t.Errorf("OwnedVersion(first) = %s of %s", gotV.ID, gotT.ID)
				}
				_, _, err = c.OwnedVersion(ctx, u, f.draft.ID)
				check(t, "OwnedVersion(draft)", err, tc.draft)
				vs, err := c.Versions(ctx, u, f.tool)
				check(t, "Versions", err, tc.versions)
				if err == nil && len(vs) < 2 {
					t.Errorf("Versions = %d versions, want at least 2", len(vs))
				}
				list, err := c.List(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				listed := slices.ContainsFunc(list, func(x store.Tool) bool { return x.ID == f.tool.ID })
				if listed != tc.listed {
					t.Errorf("List holds the tool: %v, want %v", listed, tc.listed)
				}

				// Publish last: it changes what the rows above read.
				pub, err := c.Publish(ctx, u, f.draft.ID)
				check(t, "Publish(draft)", err, tc.publish)
				after, _ := st.Tool(ctx, f.tool.ID)
				if err == nil {
					if pub.PublishedVersionID != f.draft.ID || after.PublishedVersionID != f.draft.ID {
						t.Errorf("Publish(draft) left %q published (stored %q), want %s", pub.PublishedVersionID, after.PublishedVersionID, f.draft.ID)
					}
					// Published now: the plain user sees it and runs the new version.
					if _, v, err := c.Published(ctx, visitor, f.tool.Slug); err != nil || v.ID != f.draft.ID {
						t.Errorf("after Publish, the user runs %s, %v; want %s", v.ID, err, f.draft.ID)
					}
				} else if after.PublishedVersionID != f.tool.PublishedVersionID {
					t.Errorf("a refused Publish changed the published version to %q", after.PublishedVersionID)
				}
			})
		}
	})
}

// TestNotFoundLeaksNothing: a draft someone may not see answers exactly as a tool or a
// version that does not exist does, by id and by slug: same sentinel, same message
// shape, same details.
func TestNotFoundLeaksNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		c := newCatalog(t, st)
		ctx := context.Background()
		f := newFixture(t, c, "secret", false)
		for _, u := range []store.User{other, visitor} {
			for _, pair := range [][2]string{{f.tool.ID, "t_01NOSUCHTOOL00000000000000"}, {f.tool.Slug, "no-such-tool"}} {
				hidden, missing := pair[0], pair[1]
				_, errHidden := c.Visible(ctx, u, hidden)
				_, errMissing := c.Visible(ctx, u, missing)
				sameAnswer(t, u.Name+" Visible", catalog.ErrNotFound, errHidden, errMissing, hidden, missing)
				_, errHidden = c.Owned(ctx, u, hidden)
				_, errMissing = c.Owned(ctx, u, missing)
				sameAnswer(t, u.Name+" Owned", catalog.ErrNotFound, errHidden, errMissing, hidden, missing)
			}
			_, _, errHidden := c.OwnedVersion(ctx, u, f.first.ID)
			_, _, errMissing := c.OwnedVersion(ctx, u, "v_01NOSUCHVERSION000000000000")
			sameAnswer(t, u.Name+" OwnedVersion", catalog.ErrNoVersion, errHidden, errMissing, f.first.ID, "v_01NOSUCHVERSION000000000000")
			_, errHidden = c.Publish(ctx, u, f.first.ID)
			_, errMissing = c.Publish(ctx, u, "v_01NOSUCHVERSION000000000000")
			sameAnswer(t, u.Name+" Publish", catalog.ErrNoVersion, errHidden, errMissing, f.first.ID, "v_01NOSUCHVERSION000000000000")
		}
	})
}

// TestCreateNeedsTheAuthorRole: authors and admins create tools; a plain user is refused
// with ErrForbidden (signed in, allowed to be here, not permitted this), and nothing is
// stored.
func TestCreateNeedsTheAuthorRole(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		c := newCatalog(t, st)
		ctx := context.Background()
		for _, tc := range []struct {
			u    store.User
			want error
		}{{owner, nil}, {admin, nil}, {visitor, catalog.ErrForbidden}} {
			slug := "by-" + tc.u.Name
			tool, _, err := c.Create(ctx, tc.u, catalog.NewTool{Slug: slug, Title: "T", Source: "def run_tool(i, o): pass"})
			check(t, "Create by "+tc.u.Role, err, tc.want)
			_, serr := st.Tool(ctx, slug)
			switch {
			case err == nil && (serr != nil || tool.AuthorID != tc.u.ID):
				t.Errorf("Create by %s: stored %v, author %q", tc.u.Name, serr, tool.AuthorID)
			case err != nil && !errors.Is(serr, store.ErrNotFound):
				t.Errorf("a refused Create by %s stored the tool: %v", tc.u.Name, serr)
			}
		}
	})
}

// check fails t unless err is nil when want is, or wraps want.
func check(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil && err != nil {
		t.Errorf("%s: %v, want success", what, err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// sameAnswer fails t unless both errors wrap sentinel (ErrNotFound, or ErrNoVersion for a
// version) and say the same, in message and details, once each names its own ref.
func sameAnswer(t *testing.T, what string, sentinel, hidden, missing error, hiddenRef, missingRef string) {
	t.Helper()
	if !errors.Is(hidden, sentinel) || !errors.Is(missing, sentinel) {
		t.Errorf("%s: hidden %v, missing %v; want %v for both", what, hidden, missing, sentinel)
		return
	}
	var h, m *errs.Error
	if !errors.As(hidden, &h) || !errors.As(missing, &m) {
		t.Errorf("%s: %T and %T, want *errs.Error for both", what, hidden, missing)
		return
	}
	say := func(e *errs.Error, ref string) string {
		return strings.ReplaceAll(fmt.Sprint(e.Message, e.Details), ref, "REF")
	}
	if a, b := say(h, hiddenRef), say(m, missingRef); a != b {
		t.Errorf("%s: the hidden one says %q, a missing one %q", what, a, b)
	}
}
