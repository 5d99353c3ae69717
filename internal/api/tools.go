package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// toolOf is tool t as the API shows it.
func toolOf(t store.Tool) wire.Tool {
	out := wire.Tool{ID: t.ID, Slug: t.Slug, Title: t.Title, Description: t.Description, Summary: t.Summary, UsageInstructions: t.UsageInstructions,
		AuthorID: t.AuthorID, Author: t.AuthorName, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Categories: []wire.ToolCategory{}}
	if t.PublishedVersionID != "" {
		out.PublishedVersionID = &t.PublishedVersionID
	}
	return out
}

// versionOf is tool version v as the API shows it.
func versionOf(v store.ToolVersion) wire.Version {
	return wire.Version{ID: v.ID, ToolID: v.ToolID, Source: v.Source, InputSchema: v.InputSchema, SettingsSchema: v.SettingsSchema,
		Entrypoint: v.Entrypoint, CreatedBy: v.CreatedBy, CreatedByName: v.CreatorName, CreatedAt: v.CreatedAt, Number: v.Number, Note: v.Note}
}

func (s *Server) createTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req wire.NewTool
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	n := catalog.NewTool{Slug: req.Slug, Title: req.Title, Description: req.Description,
		Summary: req.Summary, UsageInstructions: req.UsageInstructions, Source: req.Source,
		InputSchema: req.InputSchema, SettingsSchema: req.SettingsSchema, Publish: req.Publish, Categories: req.Categories}
	if catalog.CanAuthor(u) {
		n.SyntaxError, n.SyntaxLine = s.checkSyntax(r, n.Source)
	}
	t, v, err := s.svc.Catalog.Create(r.Context(), u, n)
	if err != nil {
		return err
	}
	out, err := s.toolWithCategories(r, t)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, wire.CreatedTool{Tool: out, Version: versionOf(v)})
	return nil
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request, u store.User) error {
	tools, err := s.svc.Catalog.List(r.Context(), u)
	if err != nil {
		return err
	}
	cats, err := s.svc.Catalog.ToolCategories(r.Context())
	if err != nil {
		return err
	}
	out := wire.ToolList{Tools: make([]wire.Tool, 0, len(tools))}
	for _, t := range tools {
		out.Tools = append(out.Tools, withCategories(toolOf(t), cats[t.ID]))
	}
	out.Count = len(out.Tools)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.svc.Catalog.Visible(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	tool, err := s.toolWithCategories(r, t)
	if err != nil {
		return err
	}
	out := wire.ToolDetail{Tool: tool}
	if t.PublishedVersionID != "" {
		_, v, err := s.svc.Catalog.Published(r.Context(), u, t.ID)
		if err != nil {
			return err
		}
		out.InputSchema, out.SettingsSchema = v.InputSchema, v.SettingsSchema
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

// updateTool changes a tool's title, description, summary or usage_instructions: the
// fields the body holds; the others stay as they are.
func (s *Server) updateTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.svc.Catalog.Owned(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	var req wire.ToolInfo
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	pick := func(p *string, old string) string {
		if p == nil {
			return old
		}
		return *p
	}
	t, err = s.svc.Catalog.UpdateInfo(r.Context(), u, t.ID, pick(req.Title, t.Title), pick(req.Description, t.Description),
		pick(req.Summary, t.Summary), pick(req.UsageInstructions, t.UsageInstructions))
	if err != nil {
		return err
	}
	if req.Categories != nil {
		if _, err := s.svc.Catalog.SetCategories(r.Context(), u, t.ID, *req.Categories); err != nil {
			return err
		}
	}
	return s.writeTool(w, r, t)
}

func (s *Server) createVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	if _, err := s.svc.Catalog.Owned(r.Context(), u, r.PathValue("tool")); err != nil {
		return err
	}
	var req wire.NewVersion
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	n := catalog.NewVersion{Source: req.Source, InputSchema: req.InputSchema, SettingsSchema: req.SettingsSchema, Note: req.Note}
	n.SyntaxError, n.SyntaxLine = s.checkSyntax(r, n.Source)
	v, err := s.svc.Catalog.AddVersion(r.Context(), u, r.PathValue("tool"), n)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, versionOf(v))
	return nil
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, _, err := s.svc.Catalog.ReadableVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, versionOf(v))
	return nil
}

func (s *Server) publishVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.svc.Catalog.Publish(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	return s.writeTool(w, r, t)
}

func (s *Server) unpublishTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.svc.Catalog.Unpublish(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	return s.writeTool(w, r, t)
}
