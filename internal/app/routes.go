package app

import (
	"net/http"
	"path"
	"strings"

	"github.com/skrip-dev/skrip/internal/api"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/lifecycle"
	"github.com/skrip-dev/skrip/internal/resumable"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/version"
	"github.com/skrip-dev/skrip/internal/web"
)

// routes builds the root handler: one mux with the API's routes and the web UI's pages,
// inside httpkit's request ids, log and metrics. A request that matches no route gets
// the web UI's page when a browser asks outside /api/, and the JSON error otherwise.
func (a *App) routes(st *store.Store) (http.Handler, error) {
	mux := http.NewServeMux()
	front := httpkit.NewFront(a.cfg.PublicURL, a.cfg.TrustedProxies)
	uploads, err := resumable.New(a.Files, a.log)
	if err != nil {
		return nil, err
	}
	a.Uploads = uploads
	life := lifecycle.New(lifecycle.Deps{Store: st, Blobs: a.Blobs, Accounts: a.Accounts, Files: a.Files, Runs: a.Runs,
		Sessions: a.Sessions, Sandboxes: a.Sandboxes, Log: a.log})
	api.New(api.Services{Accounts: a.Accounts, Catalog: a.Catalog, Staging: a.Files, Runs: a.Runs, Workflow: a.Workflow,
		Sandboxes: a.Sandboxes, Janitor: a.Janitor, Uploads: uploads, Lifecycle: life, RuntimeRoot: rootfs.Choose(a.cfg.BwrapRootfs)},
		api.Ops{Metrics: a.Metrics, Version: version.Version, Front: front,
			Ready: []api.Check{{Name: "database", Ping: st.Ping}, {Name: "blob", Ping: a.Blobs.Ping}, {Name: "runner", Ping: a.Runner.Ping}}},
		a.log).Register(mux)
	ui, err := web.New(web.Deps{Accounts: a.Accounts, Catalog: a.Catalog, Runs: a.Runs, Workflow: a.Workflow, Staging: a.Files, Log: a.log, Lang: a.cfg.UILang, Front: front,
		SignOn: a.SignOn, Lifecycle: life})
	if err != nil {
		return nil, err
	}
	ui.Register(mux)
	notFound := ui.NotFound()
	root := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux would redirect an unclean path to its clean form, so a key such as
		// files/a/../b would reach files/b. Refuse it instead, also when only the clean
		// form is under /api/ (//api/..., /x/../api/...): the redirect keeps a PUT's
		// method and body.
		// (The resumable uploads' base path ends in a slash, as the tus protocol has it.)
		if p := r.URL.Path; p != path.Clean(p) && p != resumable.BasePath && (strings.HasPrefix(p, "/api/") || strings.HasPrefix(path.Clean(p), "/api/")) {
			httpkit.WriteError(w, r, a.log, uncleanPath(p))
			return
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			if !strings.HasPrefix(r.URL.Path, "/api/") && strings.Contains(r.Header.Get("Accept"), "text/html") {
				notFound.ServeHTTP(w, r)
				return
			}
			httpkit.WriteError(w, r, a.log, unmatched(mux, w, r))
			return
		}
		mux.ServeHTTP(w, r)
	})
	// Pages of the origins SKRIP_CORS_ORIGINS names may use the files API and tus.
	cors := httpkit.NewCORS(a.cfg.CORSOrigins, "/api/v1/files/", resumable.BasePath)
	return httpkit.Observe(cors.Wrap(root), a.log, a.Metrics, a.cfg.HTTPBodyIdleTimeout, front), nil
}

// uncleanPath is the refusal of API path p, which has an empty, . or .. segment.
func uncleanPath(p string) error {
	// The route p names, whatever its leading slashes.
	route := "/" + strings.TrimLeft(p, "/")
	if _, rest, ok := strings.Cut(route, "/fs/"); ok && strings.HasPrefix(route, "/api/v1/sandboxes/") {
		// A workspace path: say what is wrong with it as the sandbox would.
		if _, err := runner.CleanPath(rest); err != nil {
			return err
		}
	}
	kind, what := httpkit.ErrInvalidRequest, "path"
	if strings.HasPrefix(route, "/api/v1/files/") {
		kind, what = blob.ErrInvalidKey, "key"
	}
	return errs.New(kind, map[string]any{"path": p}, "the %s in %s has an empty, . or .. segment", what, p)
}

// unmatched is the refusal of r, which no route of mux serves: a 405 naming the methods
// the path takes (and an Allow header), or a 404.
func unmatched(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) error {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := mux.Handler(probe); p != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return errs.New(httpkit.ErrMethod, map[string]any{"allowed": allowed},
			"%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or "))
	}
	return errs.New(httpkit.ErrNoRoute, nil, "no route %s %s", r.Method, r.URL.Path)
}
