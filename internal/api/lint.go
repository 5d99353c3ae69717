package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/hints"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// registerLint adds the editor's checks as you type: the linter and the completions.
func (s *Server) registerLint(m Mux) {
	m.Handle("POST /api/v1/editor/lint", s.authed(s.lint))
	m.Handle("GET /api/v1/editor/hints", s.authed(s.editorHints))
}

// editorChecksAllowed refuses a user who may not write tools (403 forbidden).
func editorChecksAllowed(u store.User) error {
	if !catalog.CanAuthor(u) {
		return errs.New(catalog.ErrForbidden, map[string]any{"role": u.Role}, "the editor's checks need the author or admin role; you are %s", u.Role)
	}
	return nil
}

// lint runs pyflakes over the source in a sandbox (run.Service.Lint) and answers with
// what it found.
func (s *Server) lint(w http.ResponseWriter, r *http.Request, u store.User) error {
	if err := editorChecksAllowed(u); err != nil {
		return err
	}
	var req wire.LintRequest
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Source == nil {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "source"}, "source is required: the Python code to check")
	}
	ds, err := s.svc.Runs.Lint(r.Context(), u.ID, *req.Source)
	if err != nil {
		return err
	}
	out := wire.LintResult{Diagnostics: make([]wire.Diagnostic, 0, len(ds))}
	for _, d := range ds {
		out.Diagnostics = append(out.Diagnostics, wire.Diagnostic(d))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

// editorHints answers with the runtime's modules and the helper modules' functions.
func (s *Server) editorHints(w http.ResponseWriter, r *http.Request, u store.User) error {
	if err := editorChecksAllowed(u); err != nil {
		return err
	}
	mods, found := hints.RuntimeModules(s.svc.RuntimeRoot)
	out := wire.Hints{Modules: mods, ModulesFromRuntime: found, Functions: []wire.HintFunction{}}
	for _, f := range hints.Toolkit() {
		out.Functions = append(out.Functions, wire.HintFunction(f))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}
