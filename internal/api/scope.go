package api

import (
	"net/http"
	"strings"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/errs"
)

// A route's area says which token scope reaches it (docs/api.md "Token scopes"):
//   - files: /api/v1/files, /api/v1/file-versions, /api/v1/links, /api/v1/uploads;
//   - runs: tools and their settings, versions, runs, tool sessions and session files,
//     start_action, the editor's sandbox routes, problem reports, categories and favourites;
//   - sandboxes: /api/v1/sandboxes;
//   - anything else (users, tokens, web sessions, admin routes, and any route added
//     later without an area) only "all".
//
// "read" reaches GET and HEAD of the three areas; GET /api/v1/me is open to every
// scope, and so is DELETE /api/v1/tokens/current, so that any token can log itself out.
func routeArea(path string) string {
	rest, ok := strings.CutPrefix(path, "/api/v1/")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "files", "file-versions", "links", "uploads", "upload-links":
		return account.ScopeFiles
	case "tools", "tool-versions", "runs", "start_action", "editor", "reports", "categories", "reviews":
		return account.ScopeRuns
	case "sandboxes":
		return account.ScopeSandboxes
	}
	return ""
}

// checkScope refuses r when its credential's scope does not reach r's route: 403
// forbidden, reason token_scope, naming the scope and what the route needs.
func checkScope(r *http.Request, scope account.Scope) error {
	if scope.All() {
		return nil
	}
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	path := r.URL.Path
	if (read && path == "/api/v1/me") || (r.Method == http.MethodDelete && path == "/api/v1/tokens/current") {
		return nil
	}
	area := routeArea(path)
	if area != "" && (scope.Has(area) || (read && scope.Has(account.ScopeRead))) {
		if err := checkAlsoFiles(r, scope); err != nil {
			return err
		}
		return nil
	}
	needs := []string{account.ScopeAll}
	if area != "" {
		needs = []string{area}
		if read {
			needs = append(needs, account.ScopeRead)
		}
	}
	return errs.New(account.ErrScope, map[string]any{"scope": scope.Words(), "needs": needs, "method": r.Method, "path": path},
		"%s %s is outside this token's scope (%s); it needs a token with the scope %s",
		r.Method, path, string(scope), strings.Join(needs, " or "))
}

// checkAlsoFiles asks for the files scope as well on the sandbox routes that reach the
// user's staged files: stage reads one (files or read will do), publish writes one
// (files). Without it a sandboxes token could copy any staged file into a sandbox and
// read it back from there, or overwrite one.
func checkAlsoFiles(r *http.Request, scope account.Scope) error {
	if r.Method != http.MethodPost || routeArea(r.URL.Path) != account.ScopeSandboxes {
		return nil
	}
	var needs []string
	switch {
	case strings.HasSuffix(r.URL.Path, "/stage"):
		if scope.Has(account.ScopeFiles) || scope.Has(account.ScopeRead) {
			return nil
		}
		needs = []string{account.ScopeFiles, account.ScopeRead}
	case strings.HasSuffix(r.URL.Path, "/publish"):
		if scope.Has(account.ScopeFiles) {
			return nil
		}
		needs = []string{account.ScopeFiles}
	default:
		return nil
	}
	return errs.New(account.ErrScope, map[string]any{"scope": scope.Words(), "needs": needs, "method": r.Method, "path": r.URL.Path},
		"%s %s reaches your staged files, outside this token's scope (%s); it needs the scope sandboxes and %s",
		r.Method, r.URL.Path, string(scope), strings.Join(needs, " or "))
}
