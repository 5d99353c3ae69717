package catalog

import (
	"context"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Categories: admins manage the list; an author picks a tool's categories by title (or
// slug), and a title that names no category yet becomes a proposal, carried by the tool
// but not shown on the home page until an admin approves it (or deleted by one).

// Errors of the categories.
var (
	// ErrNoCategory means no such category (or a proposal the user may not see).
	ErrNoCategory = errors.New("category not found")
	// ErrCategoryExists means a category with that slug already exists.
	ErrCategoryExists = errors.New("category exists")
	// ErrInvalidCategory means a category's title or slug, or a tool's list of them, is
	// not acceptable.
	ErrInvalidCategory = errors.New("invalid category")
	// ErrAdminOnly means only an admin may do this (manage the categories).
	ErrAdminOnly = errors.New("admin only")
)

// Caps on categories.
const (
	MaxCategoryTitleBytes = 60
	MaxToolCategories     = 8 // categories one tool may carry
)

// CategorySlug is the slug a category titled title gets: lower case, letters stripped of
// their accents (å ä → a, ö → o), every run of other characters one "-". It is "" when
// title holds no letter or digit.
func CategorySlug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFD.String(cases.Fold().String(title)) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
	}
	s := b.String()
	if len(s) > 64 {
		s = strings.TrimRight(s[:64], "-")
	}
	return s
}

// checkCategoryTitle trims title and checks it: not empty, within its cap, with a slug.
// A refusal names field as the one to correct.
func checkCategoryTitle(title, field string) (string, error) {
	title = strings.Join(strings.Fields(title), " ")
	switch {
	case title == "":
		return "", errs.New(ErrInvalidCategory, map[string]any{"field": field, "rule": "required"}, "a category's title is empty")
	case len(title) > MaxCategoryTitleBytes:
		return "", errs.New(ErrInvalidCategory, map[string]any{"field": field, "rule": "max_length", "limit_bytes": MaxCategoryTitleBytes},
			"the category title is %d bytes; the limit is %d bytes", len(title), MaxCategoryTitleBytes)
	case !utf8.ValidString(title):
		return "", errs.New(ErrInvalidCategory, map[string]any{"field": field, "rule": "utf8"}, "the category title is not valid UTF-8 text")
	case CategorySlug(title) == "":
		return "", errs.New(ErrInvalidCategory, map[string]any{"field": field, "rule": "pattern", "value": title},
			"the category title %q has no letter or digit", title)
	}
	return title, nil
}

// AdminOnly refuses u unless u is an admin: only admins manage the categories.
func AdminOnly(u store.User) error {
	if u.Role != store.RoleAdmin {
		return errs.New(ErrAdminOnly, map[string]any{"role": u.Role}, "only admins manage the categories; you are %s", u.Role)
	}
	return nil
}

// Categories lists the categories u sees, sorted by title (Swedish order), each with
// the number of tools u sees that carry it: the approved ones, and for an admin the
// proposals too.
func (s *Service) Categories(ctx context.Context, u store.User) ([]store.Category, error) {
	v, err := s.load(ctx, u)
	if err != nil {
		return nil, err
	}
	return v.categories(u), nil
}

// listing is what the catalogue's lists are made from: the tools a user sees, every
// category and which tool carries which.
type listing struct {
	tools []store.Tool
	cats  []store.Category
	links []store.ToolCategory
}

func (s *Service) load(ctx context.Context, u store.User) (listing, error) {
	var l listing
	var err error
	if l.tools, err = s.List(ctx, u); err != nil {
		return l, err
	}
	if l.cats, err = s.st.Categories(ctx); err != nil {
		return l, err
	}
	l.links, err = s.st.ToolCategories(ctx)
	return l, err
}

// categories are the categories u sees, each counting the tools of l that carry it,
// sorted by title.
func (l listing) categories(u store.User) []store.Category {
	seen := make(map[string]bool, len(l.tools))
	for _, t := range l.tools {
		seen[t.ID] = true
	}
	count := map[string]int{}
	for _, k := range l.links {
		if seen[k.ToolID] {
			count[k.CategoryID]++
		}
	}
	var out []store.Category
	for _, c := range l.cats {
		if c.Approved || u.Role == store.RoleAdmin {
			c.Tools = count[c.ID]
			out = append(out, c)
		}
	}
	SortCategories(out)
	return out
}

// byTool maps each tool's id to its categories, proposals included, each list sorted
// by title.
func (l listing) byTool() map[string][]store.Category {
	byID := make(map[string]store.Category, len(l.cats))
	for _, c := range l.cats {
		byID[c.ID] = c
	}
	out := map[string][]store.Category{}
	for _, k := range l.links {
		out[k.ToolID] = append(out[k.ToolID], byID[k.CategoryID])
	}
	for _, cs := range out {
		SortCategories(cs)
	}
	return out
}

// Category returns the category slug if u sees it (see Categories).
func (s *Service) Category(ctx context.Context, u store.User, slug string) (store.Category, error) {
	c, err := s.st.Category(ctx, slug)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !c.Approved && u.Role != store.RoleAdmin) {
		return store.Category{}, errs.New(ErrNoCategory, map[string]any{"category": slug}, "no category %q", slug)
	}
	return c, err
}

// CreateCategory adds an approved category titled title, if u is an admin. Its slug is
// slug, or made from the title when slug is "".
func (s *Service) CreateCategory(ctx context.Context, u store.User, title, slug string) (store.Category, error) {
	if err := AdminOnly(u); err != nil {
		return store.Category{}, err
	}
	title, err := checkCategoryTitle(title, "title")
	if err != nil {
		return store.Category{}, err
	}
	if slug == "" {
		slug = CategorySlug(title)
	} else if !ValidSlug(slug) {
		return store.Category{}, errs.New(ErrInvalidCategory, map[string]any{"field": "slug", "value": slug, "rule": "pattern"}, "slug %q must be "+SlugRule, slug)
	}
	c := store.Category{ID: ids.New("c"), Slug: slug, Title: title, Approved: true, CreatedAt: s.now()}
	err = s.st.CreateCategory(ctx, c)
	if errors.Is(err, store.ErrConflict) {
		return store.Category{}, errs.New(ErrCategoryExists, map[string]any{"slug": slug}, "a category with slug %q already exists", slug)
	}
	return c, err
}

// UpdateCategory renames the category slug (title not nil) or approves it (approve), if
// u is an admin. An approved category stays approved.
func (s *Service) UpdateCategory(ctx context.Context, u store.User, slug string, title *string, approve bool) (store.Category, error) {
	if err := AdminOnly(u); err != nil {
		return store.Category{}, err
	}
	c, err := s.Category(ctx, u, slug)
	if err != nil {
		return c, err
	}
	if title != nil {
		if c.Title, err = checkCategoryTitle(*title, "title"); err != nil {
			return store.Category{}, err
		}
	}
	c.Approved = c.Approved || approve
	return c, s.st.UpdateCategory(ctx, c)
}

// DeleteCategory removes the category slug, if u is an admin; its tools lose it. This
// is also how an admin turns a proposal down.
func (s *Service) DeleteCategory(ctx context.Context, u store.User, slug string) error {
	if err := AdminOnly(u); err != nil {
		return err
	}
	c, err := s.Category(ctx, u, slug)
	if err != nil {
		return err
	}
	return s.st.DeleteCategory(ctx, c.ID)
}

// SetCategories makes names the categories of the tool ref, if u owns it. A name is a
// category's slug or title (case and accents aside); a name that matches none is
// proposed as a new category by u. Empty names are skipped and repeats count once.
func (s *Service) SetCategories(ctx context.Context, u store.User, ref string, names []string) ([]store.Category, error) {
	t, err := s.Owned(ctx, u, ref)
	if err != nil {
		return nil, err
	}
	all, err := s.st.Categories(ctx)
	if err != nil {
		return nil, err
	}
	bySlug := make(map[string]store.Category, len(all))
	for _, c := range all {
		bySlug[c.Slug] = c
	}
	if err := CheckCategoryNames(names); err != nil {
		return nil, err
	}
	var want []store.Category
	picked := map[string]bool{}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			continue
		}
		c, ok := bySlug[strings.TrimSpace(n)]
		if !ok {
			title, _ := checkCategoryTitle(n, "categories")
			if c, ok = bySlug[CategorySlug(title)]; !ok {
				c = store.Category{ID: ids.New("c"), Slug: CategorySlug(title), Title: title, ProposedBy: u.ID, CreatedAt: s.now()}
			}
		}
		if !picked[c.Slug] {
			picked[c.Slug] = true
			want = append(want, c)
		}
	}
	if err := s.st.SetToolCategories(ctx, t.ID, want); err != nil {
		return nil, err
	}
	return s.CategoriesOf(ctx, t.ID)
}

// CheckCategoryNames checks the names an author gives a tool's categories: each a title
// a category may have (or empty, skipped), at most MaxToolCategories distinct ones.
func CheckCategoryNames(names []string) error {
	if len(names) > 8*MaxToolCategories {
		return errs.New(ErrInvalidCategory, map[string]any{"field": "categories", "rule": "max_items", "limit": MaxToolCategories},
			"a tool may carry at most %d categories; %d names were given", MaxToolCategories, len(names))
	}
	slugs := map[string]bool{}
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			continue
		}
		title, err := checkCategoryTitle(n, "categories")
		if err != nil {
			return err
		}
		slugs[CategorySlug(title)] = true
	}
	if len(slugs) > MaxToolCategories {
		return errs.New(ErrInvalidCategory, map[string]any{"field": "categories", "rule": "max_items", "limit": MaxToolCategories},
			"a tool may carry at most %d categories; %d were given", MaxToolCategories, len(slugs))
	}
	return nil
}

// CategoriesOf lists the categories tool id carries, proposals included, sorted by title.
func (s *Service) CategoriesOf(ctx context.Context, toolID string) ([]store.Category, error) {
	m, err := s.ToolCategories(ctx)
	return m[toolID], err
}

// ToolCategories maps each tool's id to its categories, proposals included, each list
// sorted by title.
func (s *Service) ToolCategories(ctx context.Context) (map[string][]store.Category, error) {
	var l listing
	var err error
	if l.cats, err = s.st.Categories(ctx); err != nil {
		return nil, err
	}
	if l.links, err = s.st.ToolCategories(ctx); err != nil {
		return nil, err
	}
	return l.byTool(), nil
}
