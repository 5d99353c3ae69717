package api

import (
	"errors"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
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

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// maxSourceBytes caps a tool version's source.
const maxSourceBytes = 512 << 10

func checkSource(src string) error {
	if strings.TrimSpace(src) == "" {
		return errs.New(errInvalidRequest, map[string]any{"field": "source"}, "source is empty; send the tool's Python code")
	}
	if len(src) > maxSourceBytes {
		return errs.New(errTooLarge, map[string]any{"field": "source", "limit_bytes": maxSourceBytes}, "source is %d bytes; the limit is %d", len(src), maxSourceBytes)
	}
	return nil
}

func canAuthor(u store.User) bool { return u.Role == store.RoleAuthor || u.Role == store.RoleAdmin }

func ownsTool(u store.User, t store.Tool) bool {
	return u.Role == store.RoleAdmin || t.AuthorID == u.ID
}

// visibleTool returns the tool named in the path if u may see it: published tools are
// everyone's, drafts their author's and the admins'.
func (s *Server) visibleTool(r *http.Request, u store.User) (store.Tool, error) {
	ref := r.PathValue("tool")
	t, err := s.store.Tool(r.Context(), ref)
	if errors.Is(err, store.ErrNotFound) || (err == nil && t.PublishedVersionID == "" && !ownsTool(u, t)) {
		return store.Tool{}, errs.New(errNotFound, map[string]any{"tool": ref}, "no tool %q", ref)
	}
	return t, err
}

// ownedVersion returns the version named in the path if u is its tool's author or an admin.
func (s *Server) ownedVersion(r *http.Request, u store.User) (store.ToolVersion, store.Tool, error) {
	id := r.PathValue("version")
	notFound := errs.New(errNotFound, map[string]any{"version": id}, "no tool version %q", id)
	v, err := s.store.ToolVersion(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return store.ToolVersion{}, store.Tool{}, notFound
	}
	if err != nil {
		return store.ToolVersion{}, store.Tool{}, err
	}
	t, err := s.store.Tool(r.Context(), v.ToolID)
	if err != nil {
		return store.ToolVersion{}, store.Tool{}, err
	}
	if !ownsTool(u, t) {
		return store.ToolVersion{}, store.Tool{}, notFound
	}
	return v, t, nil
}

func (s *Server) createTool(w http.ResponseWriter, r *http.Request, u store.User) error {
	if !canAuthor(u) {
		return errs.New(errForbidden, map[string]any{"role": u.Role}, "creating tools needs the author or admin role; you are %s", u.Role)
	}
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
	if !slugPattern.MatchString(req.Slug) {
		return errs.New(errInvalidRequest, map[string]any{"field": "slug", "value": req.Slug},
			"slug %q must be 1 to 64 lower-case letters, digits, _ or -, starting with a letter or digit", req.Slug)
	}
	if strings.TrimSpace(req.Title) == "" {
		return errs.New(errInvalidRequest, map[string]any{"field": "title"}, "title is empty")
	}
	if err := checkSource(req.Source); err != nil {
		return err
	}
	now := time.Now()
	t := store.Tool{ID: ids.New("t"), Slug: req.Slug, Title: strings.TrimSpace(req.Title), Description: req.Description, AuthorID: u.ID, CreatedAt: now, UpdatedAt: now}
	v := store.ToolVersion{ID: ids.New("v"), ToolID: t.ID, Source: req.Source, Entrypoint: "run_tool", CreatedBy: u.ID, CreatedAt: now}
	t, err := s.store.CreateTool(r.Context(), t, v, req.Publish)
	if errors.Is(err, store.ErrConflict) {
		return errs.New(store.ErrConflict, map[string]any{"slug": req.Slug}, "a tool with slug %q already exists", req.Slug)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"tool": toToolJSON(t), "version": toVersionJSON(v)})
	return nil
}

func (s *Server) listTools(w http.ResponseWriter, r *http.Request, u store.User) error {
	tools, err := s.store.Tools(r.Context(), u.ID, u.Role == store.RoleAdmin)
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
	t, err := s.visibleTool(r, u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toToolJSON(t))
	return nil
}

func (s *Server) createVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.visibleTool(r, u)
	if err != nil {
		return err
	}
	if !ownsTool(u, t) {
		return errs.New(errForbidden, map[string]any{"tool": t.Slug}, "only the author of %s or an admin may add versions", t.Slug)
	}
	var req struct {
		Source string `json:"source"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := checkSource(req.Source); err != nil {
		return err
	}
	v := store.ToolVersion{ID: ids.New("v"), ToolID: t.ID, Source: req.Source, Entrypoint: "run_tool", CreatedBy: u.ID, CreatedAt: time.Now()}
	if err := s.store.CreateVersion(r.Context(), v); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toVersionJSON(v))
	return nil
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, _, err := s.ownedVersion(r, u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toVersionJSON(v))
	return nil
}

func (s *Server) publishVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.ownedVersion(r, u)
	if err != nil {
		return err
	}
	now := time.Now()
	if err := s.store.Publish(r.Context(), t.ID, v.ID, now); err != nil {
		return err
	}
	t.PublishedVersionID, t.UpdatedAt = v.ID, now
	writeJSON(w, http.StatusOK, toToolJSON(t))
	return nil
}
