package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// A tool's versions (docs/api.md "Tool versions"): the list with notes, the syntax check
// and the latest sandbox run of each, the diff of two versions, and restoring an old one.

func (s *Server) registerToolVersions(m Mux) {
	m.Handle("GET /api/v1/tools/{tool}/versions", s.authed(s.listToolVersions))
	m.Handle("GET /api/v1/tool-versions/{version}/diff", s.authed(s.diffVersions))
	m.Handle("POST /api/v1/tool-versions/{version}/restore", s.authed(s.restoreVersion))
}

// syntaxUnchecked is what a version saved through the API is marked with when its
// syntax check could not run, so the list does not say it compiles.
const syntaxUnchecked = "the syntax check did not run when the version was saved"

// checkSyntax compiles src in a sandbox, as the editor does on saving, and returns where
// it does not compile ("" and 0: it compiles). A source the catalogue will refuse is not
// checked.
func (s *Server) checkSyntax(r *http.Request, src string) (string, int) {
	if catalog.CheckSource(src) != nil || s.svc.Runs == nil {
		return "", 0
	}
	se, err := s.svc.Runs.CheckSyntax(r.Context(), src)
	switch {
	case err != nil:
		s.log.Warn("syntax check did not run", "error", err)
		return syntaxUnchecked, 0
	case se == nil:
		return "", 0
	default:
		return se.Message, se.Line
	}
}

func (s *Server) listToolVersions(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, list, err := s.svc.Catalog.VersionList(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	out := wire.VersionList{ToolID: t.ID, Versions: make([]wire.VersionSummary, 0, len(list))}
	for _, v := range list {
		out.Versions = append(out.Versions, wire.VersionSummary{ID: v.ID, Number: v.Number, Note: v.Note, CreatedBy: v.CreatedBy,
			CreatedByName: v.CreatorName, CreatedAt: v.CreatedAt, Published: v.ID == t.PublishedVersionID, Compiles: v.SyntaxError == "",
			SyntaxError: v.SyntaxError, SyntaxLine: v.SyntaxLine, LastSandboxStatus: v.LastSandboxStatus})
	}
	out.Count = len(out.Versions)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) diffVersions(w http.ResponseWriter, r *http.Request, u store.User) error {
	against := r.URL.Query().Get("against")
	if against == "" {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "against"}, "name the version to compare with: ?against=<version id>")
	}
	d, err := s.svc.Catalog.Diff(r.Context(), u, r.PathValue("version"), against)
	if err != nil {
		return err
	}
	out := wire.VersionDiff{ToolID: d.To.ToolID, From: wire.VersionRef{ID: d.From.ID, Number: d.From.Number},
		To: wire.VersionRef{ID: d.To.ID, Number: d.To.Number}, Unified: d.Unified()}
	for _, p := range d.Parts {
		out.Parts = append(out.Parts, wire.DiffPart{Name: p.Name, Changed: p.Changed, Unified: p.Unified})
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) restoreVersion(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, err := s.svc.Catalog.Restore(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, versionOf(v))
	return nil
}
