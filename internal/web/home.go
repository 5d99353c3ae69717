package web

import (
	"errors"
	"net/http"
	"regexp"
	"strings"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/signon"
	"github.com/skrip-dev/skrip/internal/store"
)

// The home page (the user's favourites, the tools they used last and the catalogue by
// category), a category's page, the star that makes a tool a favourite, and the admins'
// page of categories. The rules are catalog's; these handlers only translate HTTP.

// toolCard is one tool as a card on the home page and a category's page.
type toolCard struct {
	store.Tool
	Draft      bool
	Mine       bool
	Favourite  bool
	Categories []store.Category // the approved ones, as links
	H3         bool             // the card's title is an <h3> (it sits in a section)
	CSRF       string
	Back       string // the page the star's form comes back to
	// Place says where on the page the card is ("fav", "recent", a category's slug…):
	// a tool may show in several places, and its star's id must be unique.
	Place string
}

// Anchor is the id of the card's star, which the star's form comes back to.
func (c toolCard) Anchor() string { return "star-" + c.Place + "-" + c.Slug }

// anchorPattern is what an anchor the star's form sends back may be.
var anchorPattern = regexp.MustCompile(`^[a-z0-9_-]{1,200}$`)

// cards makes tools into cards for c.
func (h *Handler) cards(c *call, home catalog.Home, tools []store.Tool, h3 bool, back, place string) []toolCard {
	out := make([]toolCard, 0, len(tools))
	for _, t := range tools {
		card := toolCard{Tool: t, Draft: t.PublishedVersionID == "", Mine: catalog.Owns(c.User, t), Favourite: home.Favourite[t.ID],
			H3: h3, CSRF: c.CSRF, Back: back, Place: place}
		for _, cat := range home.ByTool[t.ID] {
			if cat.Approved {
				card.Categories = append(card.Categories, cat)
			}
		}
		out = append(out, card)
	}
	return out
}

// homeSection is one category of the home page, with its cards; Slug is "" for the
// tools without a category ("Övrigt").
type homeSection struct {
	Slug, Title string
	Cards       []toolCard
}

func (h *Handler) catalogue(w http.ResponseWriter, r *http.Request, c *call) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	home, err := h.catalog.Home(r.Context(), c.User, q)
	if err != nil {
		return err
	}
	back := r.URL.RequestURI()
	data := map[string]any{"Title": h.langOf(r).T("lists.catalogue.title"), "Query": q, "Count": home.All, "Any": len(home.Tools) > 0}
	if q != "" {
		data["Tools"] = h.cards(c, home, home.Tools, false, back, "q")
	} else {
		data["Favourites"] = h.cards(c, home, home.Favourites, true, back, "fav")
		data["Recent"] = h.cards(c, home, home.Recent, true, back, "recent")
		var sections []homeSection
		for _, s := range home.Sections {
			sections = append(sections, homeSection{Slug: s.Category.Slug, Title: s.Category.Title, Cards: h.cards(c, home, s.Tools, true, back, "c-"+s.Category.Slug)})
		}
		data["Sections"] = sections
		var nav []store.Category
		for _, cat := range home.Categories {
			if cat.Approved && cat.Tools > 0 {
				nav = append(nav, cat)
			}
		}
		data["Categories"] = nav
	}
	h.render(w, r, http.StatusOK, "catalogue", c, data)
	return nil
}

// categoryPage lists the tools of one category.
func (h *Handler) categoryPage(w http.ResponseWriter, r *http.Request, c *call) error {
	cat, tools, err := h.catalog.CategoryTools(r.Context(), c.User, r.PathValue("category"))
	if err != nil {
		return err
	}
	home, err := h.catalog.Home(r.Context(), c.User, "")
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "category", c, map[string]any{"Title": cat.Title, "Category": cat,
		"Cards": h.cards(c, home, tools, false, r.URL.RequestURI(), "c-"+cat.Slug)})
	return nil
}

// star makes a tool one of the user's favourites (on=1) or not (on=0), then goes back
// to the page the form was on. It works without JavaScript: a plain form post.
func (h *Handler) star(w http.ResponseWriter, r *http.Request, c *call) error {
	t, err := h.catalog.SetFavourite(r.Context(), c.User, r.PathValue("tool"), r.PostFormValue("on") == "1")
	if err != nil {
		return err
	}
	back := r.PostFormValue("back")
	if back == "" {
		back = "/tools/" + t.Slug
	}
	back, _, _ = strings.Cut(signon.LocalPath(back), "#")
	if a := r.PostFormValue("anchor"); anchorPattern.MatchString(a) {
		back += "#" + a
	}
	redirect(w, r, back)
	return nil
}

// categoriesPage is the admins' list of categories: the approved ones, and the authors'
// proposals waiting for approval.
func (h *Handler) categoriesPage(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.showCategories(w, r, c, http.StatusOK, map[string]any{})
}

func (h *Handler) showCategories(w http.ResponseWriter, r *http.Request, c *call, status int, extra map[string]any) error {
	if err := catalog.AdminOnly(c.User); err != nil {
		return err
	}
	cats, err := h.catalog.Categories(r.Context(), c.User)
	if err != nil {
		return err
	}
	var approved, proposed []store.Category
	for _, cat := range cats {
		if cat.Approved {
			approved = append(approved, cat)
		} else {
			proposed = append(proposed, cat)
		}
	}
	extra["Title"], extra["Approved"], extra["Proposed"] = h.langOf(r).T("home.admin.title"), approved, proposed
	h.render(w, r, status, "categories", c, extra)
	return nil
}

// categoryRefused shows the categories page again with a refusal's message, or returns
// err when it is not the admin's to correct.
func (h *Handler) categoryRefused(w http.ResponseWriter, r *http.Request, c *call, err error, extra map[string]any) error {
	status, _ := h.statusOf(w, err)
	if status >= 500 || errors.Is(err, catalog.ErrAdminOnly) {
		return err
	}
	extra["Error"] = h.message(r, err)
	return h.showCategories(w, r, c, status, extra)
}

func (h *Handler) createCategory(w http.ResponseWriter, r *http.Request, c *call) error {
	title := r.PostFormValue("title")
	if _, err := h.catalog.CreateCategory(r.Context(), c.User, title, ""); err != nil {
		return h.categoryRefused(w, r, c, err, map[string]any{"NewTitle": title})
	}
	redirect(w, r, "/admin/categories")
	return nil
}

// changeCategory renames a category (title) and approves a proposal (approve=1).
func (h *Handler) changeCategory(w http.ResponseWriter, r *http.Request, c *call) error {
	var title *string
	if _, ok := r.PostForm["title"]; ok {
		t := r.PostFormValue("title")
		title = &t
	}
	if _, err := h.catalog.UpdateCategory(r.Context(), c.User, r.PathValue("category"), title, r.PostFormValue("approve") == "1"); err != nil {
		return h.categoryRefused(w, r, c, err, map[string]any{})
	}
	redirect(w, r, "/admin/categories")
	return nil
}

func (h *Handler) deleteCategory(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := h.catalog.DeleteCategory(r.Context(), c.User, r.PathValue("category")); err != nil {
		return h.categoryRefused(w, r, c, err, map[string]any{})
	}
	redirect(w, r, "/admin/categories")
	return nil
}

// addCategoryField adds the tool's categories to the editor's info panel p: their titles,
// separated by commas, with the categories there are to pick from in the hint.
func (h *Handler) addCategoryField(r *http.Request, l *Lang, p *panel, t store.Tool) error {
	mine, err := h.catalog.CategoriesOf(r.Context(), t.ID)
	if err != nil {
		return err
	}
	all, err := h.catalog.Categories(r.Context(), store.User{})
	if err != nil {
		return err
	}
	titles := func(cs []store.Category) string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Title
		}
		return strings.Join(out, ", ")
	}
	f := newFields([]contract.Field{{Name: "categories", Label: l.T("home.editor.categories"), Kind: contract.FieldString}}, "info", "info.")[0]
	f.Value = titles(mine)
	f.Hint = l.T("home.editor.categories_hint")
	if len(all) > 0 {
		f.Hint += " " + l.T("home.editor.categories_known", "Titles", titles(all))
	}
	p.Fields = append(p.Fields, f)
	return nil
}

// categoryNames splits the editor's categories field at its commas.
func categoryNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
