package api

import (
	"net/http"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/store"
)

type toolJSON struct {
	ID                 string    `json:"id"`
	Slug               string    `json:"slug"`
	Title              string    `json:"title"`
	Description        string    `json:"description"`
	AuthorID           string    `json:"author_id"`
	PublishedVersionID *string   `json:"published_version_id"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

func toToolJSON(t store.Tool) toolJSON {
	out := toolJSON{ID: t.ID, Slug: t.Slug, Title: t.Title, Description: t.Description, AuthorID: t.AuthorID, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if t.PublishedVersionID != "" {
		out.PublishedVersionID = &t.PublishedVersionID
	}
	return out
}

type versionJSON struct {
	ID         string    `json:"id"`
	ToolID     string    `json:"tool_id"`
	Source     string    `json:"source"`
	Entrypoint string    `json:"entrypoint"`
	CreatedBy  string    `json:"created_by"`
	CreatedAt  time.Time `json:"created_at"`
}

func toVersionJSON(v store.ToolVersion) versionJSON {
	return versionJSON{ID: v.ID, ToolID: v.ToolID, Source: v.Source, Entrypoint: v.Entrypoint, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt}
}

func (s *Server) createTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req struct {
		Slug        string `json:"slug"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Source      string `json:"source"`
		Publish     bool   `json:"publish"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	t, v, err := s.catalog.Create(r.Context(), u, catalog.NewTool{Slug: req.Slug, Title: req.Title, Description: req.Description, Source: req.Source, Publish: req.Publish})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"tool": toToolJSON(t), "version": toVersionJSON(v)})
	return nil
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request, u store.User) error {
	tools, err := s.catalog.List(r.Context(), u)
	if err != nil {
		return err
	}
	out := make([]toolJSON, 0, len(tools))
	for _, t := range tools {
		out = append(out, toToolJSON(t))
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out, "count": len(out)})
	return nil
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.catalog.Visible(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toToolJSON(t))
	return nil
}

func (s *Server) createVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	if _, err := s.catalog.Owned(r.Context(), u, r.PathValue("tool")); err != nil {
		return err
	}
	var req struct {
		Source string `json:"source"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	v, err := s.catalog.AddVersion(r.Context(), u, r.PathValue("tool"), req.Source)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toVersionJSON(v))
	return nil
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, _, err := s.catalog.OwnedVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toVersionJSON(v))
	return nil
}

func (s *Server) publishVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.catalog.Publish(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toToolJSON(t))
	return nil
}
