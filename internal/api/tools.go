package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
)

type toolJSON struct {
	ID                 string    `json:"id"`
	Slug               string    `json:"slug"`
	Title              string    `json:"title"`
	Description        string    `json:"description"`
	Summary            string    `json:"summary"`
	UsageInstructions  string    `json:"usage_instructions"`
	AuthorID           string    `json:"author_id"`
	PublishedVersionID *string   `json:"published_version_id"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

func toToolJSON(t store.Tool) toolJSON {
	out := toolJSON{ID: t.ID, Slug: t.Slug, Title: t.Title, Description: t.Description, Summary: t.Summary, UsageInstructions: t.UsageInstructions,
		AuthorID: t.AuthorID, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if t.PublishedVersionID != "" {
		out.PublishedVersionID = &t.PublishedVersionID
	}
	return out
}

// toolDetailJSON is one tool with what its published version asks for: its input_schema
// and settings_schema (null when it has none, or nothing is published).
type toolDetailJSON struct {
	toolJSON
	InputSchema    json.RawMessage `json:"input_schema"`
	SettingsSchema json.RawMessage `json:"settings_schema"`
}

type versionJSON struct {
	ID             string          `json:"id"`
	ToolID         string          `json:"tool_id"`
	Source         string          `json:"source"`
	InputSchema    json.RawMessage `json:"input_schema"`
	SettingsSchema json.RawMessage `json:"settings_schema"`
	Entrypoint     string          `json:"entrypoint"`
	CreatedBy      string          `json:"created_by"`
	CreatedAt      time.Time       `json:"created_at"`
}

func toVersionJSON(v store.ToolVersion) versionJSON {
	return versionJSON{ID: v.ID, ToolID: v.ToolID, Source: v.Source, InputSchema: v.InputSchema, SettingsSchema: v.SettingsSchema,
		Entrypoint: v.Entrypoint, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt}
}

func (s *Server) createTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req struct {
		Slug              string          `json:"slug"`
		Title             string          `json:"title"`
		Description       string          `json:"description"`
		Summary           string          `json:"summary"`
		UsageInstructions string          `json:"usage_instructions"`
		Source            string          `json:"source"`
		InputSchema       json.RawMessage `json:"input_schema"`
		SettingsSchema    json.RawMessage `json:"settings_schema"`
		Publish           bool            `json:"publish"`
	}
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	t, v, err := s.svc.Catalog.Create(r.Context(), u, catalog.NewTool{Slug: req.Slug, Title: req.Title, Description: req.Description,
		Summary: req.Summary, UsageInstructions: req.UsageInstructions, Source: req.Source,
		InputSchema: req.InputSchema, SettingsSchema: req.SettingsSchema, Publish: req.Publish})
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, map[string]any{"tool": toToolJSON(t), "version": toVersionJSON(v)})
	return nil
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request, u store.User) error {
	tools, err := s.svc.Catalog.List(r.Context(), u)
	if err != nil {
		return err
	}
	out := make([]toolJSON, 0, len(tools))
	for _, t := range tools {
		out = append(out, toToolJSON(t))
	}
	httpkit.WriteJSON(w, http.StatusOK, map[string]any{"tools": out, "count": len(out)})
	return nil
}

func (s *Server) getTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.svc.Catalog.Visible(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	out := toolDetailJSON{toolJSON: toToolJSON(t)}
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
	var req struct {
		Title             *string `json:"title"`
		Description       *string `json:"description"`
		Summary           *string `json:"summary"`
		UsageInstructions *string `json:"usage_instructions"`
	}
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
	httpkit.WriteJSON(w, http.StatusOK, toToolJSON(t))
	return nil
}

func (s *Server) createVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	if _, err := s.svc.Catalog.Owned(r.Context(), u, r.PathValue("tool")); err != nil {
		return err
	}
	var req struct {
		Source         string          `json:"source"`
		InputSchema    json.RawMessage `json:"input_schema"`
		SettingsSchema json.RawMessage `json:"settings_schema"`
	}
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	v, err := s.svc.Catalog.AddVersion(r.Context(), u, r.PathValue("tool"),
		catalog.NewVersion{Source: req.Source, InputSchema: req.InputSchema, SettingsSchema: req.SettingsSchema})
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, toVersionJSON(v))
	return nil
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, _, err := s.svc.Catalog.OwnedVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, toVersionJSON(v))
	return nil
}

func (s *Server) publishVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.svc.Catalog.Publish(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, toToolJSON(t))
	return nil
}
