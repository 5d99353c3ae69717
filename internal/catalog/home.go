package catalog

import (
	"context"
	"slices"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/skrip-dev/skrip/internal/store"
)

// MaxRecent is how many recently used tools the home page shows.
const MaxRecent = 6

// productionContext is the run context of a tool's own page (session.Production), the
// one whose runs make a tool recently used; the editor's sandbox runs do not.
const productionContext = "default"

// swedish returns a collator for Swedish order (å ä ö after z, case aside). A collator
// keeps a buffer, so each sort makes its own.
func swedish() *collate.Collator { return collate.New(language.Swedish, collate.IgnoreCase) }

// SortTools sorts tools by title in Swedish order, then by slug.
func SortTools(tools []store.Tool) {
	c := swedish()
	slices.SortStableFunc(tools, func(a, b store.Tool) int {
		if n := c.CompareString(a.Title, b.Title); n != 0 {
			return n
		}
		return c.CompareString(a.Slug, b.Slug)
	})
}

// SortCategories sorts categories by title in Swedish order, then by slug.
func SortCategories(cats []store.Category) {
	c := swedish()
	slices.SortStableFunc(cats, func(a, b store.Category) int {
		if n := c.CompareString(a.Title, b.Title); n != 0 {
			return n
		}
		return c.CompareString(a.Slug, b.Slug)
	})
}

// SetFavourite marks the tool ref as a favourite of u (on) or not, if u sees it. It is
// idempotent.
func (s *Service) SetFavourite(ctx context.Context, u store.User, ref string, on bool) (store.Tool, error) {
	t, err := s.Visible(ctx, u, ref)
	if err != nil {
		return t, err
	}
	return t, s.st.SetFavourite(ctx, u.ID, t.ID, on, s.now())
}

// Section is one category of the home page with its tools; Category is the zero value for
// the tools that carry no approved category ("Other").
type Section struct {
	Category store.Category
	Tools    []store.Tool
}

// Home is what the home page shows u. Every list is sorted by title in Swedish order,
// except Recent, which is the most recently run first.
type Home struct {
	All        int                         // how many tools u sees, before the search
	Tools      []store.Tool                // the tools u sees that match the search
	Favourites []store.Tool                // u's favourites among them
	Recent     []store.Tool                // the tools u ran last (production runs), at most MaxRecent
	Sections   []Section                   // the approved categories with tools, then the tools with none
	Categories []store.Category            // the categories u sees, with their tool counts (Categories)
	ByTool     map[string][]store.Category // each tool's categories by tool id, proposals included
	Favourite  map[string]bool             // whether a tool (by id) is one of u's favourites
}

// Home gathers u's home page. q, when not empty, keeps only the tools that match it
// (Matches, or the title of one of their approved categories).
func (s *Service) Home(ctx context.Context, u store.User, q string) (Home, error) {
	var h Home
	l, err := s.load(ctx, u)
	if err != nil {
		return h, err
	}
	favs, err := s.st.Favourites(ctx, u.ID)
	if err != nil {
		return h, err
	}
	recent, err := s.st.RecentTools(ctx, u.ID, productionContext, MaxRecent)
	if err != nil {
		return h, err
	}
	h.All, h.Categories, h.ByTool = len(l.tools), l.categories(u), l.byTool()
	h.Favourite = make(map[string]bool, len(favs))
	for _, id := range favs {
		h.Favourite[id] = true
	}
	byID := make(map[string]store.Tool, len(l.tools))
	for _, t := range l.tools {
		if s.matches(t, h.ByTool[t.ID], q) {
			h.Tools = append(h.Tools, t)
			byID[t.ID] = t
		}
	}
	SortTools(h.Tools)
	for _, t := range h.Tools {
		if h.Favourite[t.ID] {
			h.Favourites = append(h.Favourites, t)
		}
	}
	for _, id := range recent {
		if t, ok := byID[id]; ok {
			h.Recent = append(h.Recent, t)
		}
	}
	in := map[string][]store.Tool{}
	var other []store.Tool
	for _, t := range h.Tools {
		n := 0
		for _, c := range h.ByTool[t.ID] {
			if c.Approved {
				in[c.ID] = append(in[c.ID], t)
				n++
			}
		}
		if n == 0 {
			other = append(other, t)
		}
	}
	for _, c := range h.Categories {
		if len(in[c.ID]) > 0 {
			h.Sections = append(h.Sections, Section{Category: c, Tools: in[c.ID]})
		}
	}
	if len(other) > 0 {
		h.Sections = append(h.Sections, Section{Tools: other})
	}
	return h, nil
}

// matches is Matches over the tool with the titles of its approved categories, so that
// "svenska" finds the tools in the category Svenska.
func (s *Service) matches(t store.Tool, cats []store.Category, q string) bool {
	for _, c := range cats {
		if c.Approved {
			t.Title += "\n" + c.Title
		}
	}
	return Matches(t, q)
}

// CategoryTools lists the tools u sees in the category slug, sorted by title.
func (s *Service) CategoryTools(ctx context.Context, u store.User, slug string) (store.Category, []store.Tool, error) {
	c, err := s.Category(ctx, u, slug)
	if err != nil {
		return c, nil, err
	}
	l, err := s.load(ctx, u)
	if err != nil {
		return c, nil, err
	}
	carries := map[string]bool{}
	for _, k := range l.links {
		if k.CategoryID == c.ID {
			carries[k.ToolID] = true
		}
	}
	var out []store.Tool
	for _, t := range l.tools {
		if carries[t.ID] {
			out = append(out, t)
		}
	}
	SortTools(out)
	return c, out, nil
}

// IsFavourite reports whether tool id is one of u's favourites.
func (s *Service) IsFavourite(ctx context.Context, u store.User, id string) (bool, error) {
	favs, err := s.st.Favourites(ctx, u.ID)
	return slices.Contains(favs, id), err
}
