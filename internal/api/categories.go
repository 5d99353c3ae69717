package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// The home page's routes: categories (admins manage them, authors propose them through
// a tool's categories) and each user's favourite tools.
func (s *Server) registerCatalogue(m Mux) {
	m.Handle("GET /api/v1/categories", s.authed(s.listCategories))
	m.Handle("POST /api/v1/categories", s.authed(s.createCategory))
	m.Handle("PATCH /api/v1/categories/{category}", s.authed(s.updateCategory))
	m.Handle("DELETE /api/v1/categories/{category}", s.authed(s.deleteCategory))
	m.Handle("PUT /api/v1/tools/{tool}/favourite", s.authed(s.setFavourite(true)))
	m.Handle("DELETE /api/v1/tools/{tool}/favourite", s.authed(s.setFavourite(false)))
}

// withCategories is tool t with the categories cats.
func withCategories(t wire.Tool, cats []store.Category) wire.Tool {
	t.Categories = make([]wire.ToolCategory, 0, len(cats))
	for _, c := range cats {
		t.Categories = append(t.Categories, wire.ToolCategory{Slug: c.Slug, Title: c.Title, Approved: c.Approved})
	}
	return t
}

// toolWithCategories is t as the API shows it, with its categories.
func (s *Server) toolWithCategories(r *http.Request, t store.Tool) (wire.Tool, error) {
	cats, err := s.svc.Catalog.CategoriesOf(r.Context(), t.ID)
	return withCategories(toolOf(t), cats), err
}

// writeTool answers 200 with t and its categories.
func (s *Server) writeTool(w http.ResponseWriter, r *http.Request, t store.Tool) error {
	out, err := s.toolWithCategories(r, t)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func categoryOf(c store.Category) wire.Category {
	return wire.Category{Slug: c.Slug, Title: c.Title, Approved: c.Approved, Tools: c.Tools, ProposedBy: c.ProposedBy}
}

func (s *Server) listCategories(w http.ResponseWriter, r *http.Request, u store.User) error {
	cats, err := s.svc.Catalog.Categories(r.Context(), u)
	if err != nil {
		return err
	}
	out := wire.CategoryList{Categories: make([]wire.Category, 0, len(cats))}
	for _, c := range cats {
		out.Categories = append(out.Categories, categoryOf(c))
	}
	out.Count = len(out.Categories)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) createCategory(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req wire.NewCategory
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	c, err := s.svc.Catalog.CreateCategory(r.Context(), u, req.Title, req.Slug)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, categoryOf(c))
	return nil
}

func (s *Server) updateCategory(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req wire.CategoryChange
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	c, err := s.svc.Catalog.UpdateCategory(r.Context(), u, r.PathValue("category"), req.Title, req.Approved)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, categoryOf(c))
	return nil
}

func (s *Server) deleteCategory(w http.ResponseWriter, r *http.Request, u store.User) error {
	if err := s.svc.Catalog.DeleteCategory(r.Context(), u, r.PathValue("category")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// setFavourite marks the tool as one of the caller's favourites (on) or not: idempotent,
// 204 either way; 404 for a tool the caller does not see.
func (s *Server) setFavourite(on bool) func(http.ResponseWriter, *http.Request, store.User) error {
	return func(w http.ResponseWriter, r *http.Request, u store.User) error {
		if _, err := s.svc.Catalog.SetFavourite(r.Context(), u, r.PathValue("tool"), on); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}
