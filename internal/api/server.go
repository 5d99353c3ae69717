// Package api owns skrip's HTTP JSON API under /api/v1, the health and metrics routes,
// bearer-token authentication, and the one table that maps package errors to the error
// codes of SPEC §3.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/janitor"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
)

// Check is one dependency that /readyz asks.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Deps are what the API serves from.
type Deps struct {
	Store    *store.Store
	Accounts *account.Service
	Files    *staging.Service
	Janitor  *janitor.Janitor
	Runs     *run.Service
	Sessions *session.Service
	Blobs    blob.Store
	Catalog  *catalog.Service
	Steps    *run.Steps
	// Sandboxes are the persistent agent sandboxes.
	Sandboxes *sandbox.Service
	// SandboxTimeout is the wall time of editor sandbox runs.
	SandboxTimeout time.Duration
	Uploads        upload.Limits
	// BodyIdleTimeout cuts off a request body that sends nothing for this long; 0 never does.
	BodyIdleTimeout time.Duration
	Metrics         *metrics.Metrics
	Log             *slog.Logger
	Ready           []Check
	Version         string
}

// Server is the HTTP API.
type Server struct {
	store     *store.Store
	accounts  *account.Service
	files     *staging.Service
	janitor   *janitor.Janitor
	runs      *run.Service
	sessions  *session.Service
	blobs     blob.Store
	catalog   *catalog.Service
	steps     *run.Steps
	sandboxes *sandbox.Service
	metrics   *metrics.Metrics
	log       *slog.Logger
	ready     []Check
	version   string
	mux       *http.ServeMux
	notFound  http.Handler

	uploadLimits   upload.Limits
	sandboxTimeout time.Duration
	bodyIdle       time.Duration
}

// New builds the API's routes.
func New(d Deps) *Server {
	s := &Server{store: d.Store, accounts: d.Accounts, files: d.Files, janitor: d.Janitor, runs: d.Runs, sessions: d.Sessions, blobs: d.Blobs, catalog: d.Catalog, steps: d.Steps, sandboxes: d.Sandboxes, uploadLimits: d.Uploads, sandboxTimeout: d.SandboxTimeout, bodyIdle: d.BodyIdleTimeout, metrics: d.Metrics, log: d.Log, ready: d.Ready, version: d.Version, mux: http.NewServeMux()}
	s.routes()
	return s
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /healthz", s.healthz)
	m.HandleFunc("GET /readyz", s.readyz)
	m.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))

	m.Handle("GET /api/v1/me", s.authed(s.me))
	m.Handle("GET /api/v1/users", s.authed(adminOnly(s.listUsers)))
	m.Handle("POST /api/v1/users", s.authed(adminOnly(s.createUser)))
	m.Handle("PATCH /api/v1/users/{id}", s.authed(adminOnly(s.updateUser)))
	m.Handle("POST /api/v1/users/{id}/tokens", s.authed(s.createToken))
	m.Handle("PUT /api/v1/users/{id}/password", s.authed(s.setPassword))

	m.Handle("POST /api/v1/files", s.authed(s.uploadFile))
	m.Handle("GET /api/v1/files", s.authed(s.listFiles))
	m.Handle("PUT /api/v1/files/{key...}", s.authed(s.putFile))
	m.Handle("GET /api/v1/files/{key...}", s.authed(s.getFile))
	m.Handle("DELETE /api/v1/files/{key...}", s.authed(s.deleteFile))

	m.Handle("POST /api/v1/admin/cleanup", s.authed(adminOnly(s.cleanup)))

	m.Handle("POST /api/v1/tools", s.authed(s.createTool))
	m.Handle("GET /api/v1/tools", s.authed(s.listTools))
	m.Handle("GET /api/v1/tools/{tool}", s.authed(s.getTool))
	m.Handle("PATCH /api/v1/tools/{tool}", s.authed(s.updateTool))
	m.Handle("GET /api/v1/tools/{tool}/settings", s.authed(s.getSettings(s.toolSettings())))
	m.Handle("PUT /api/v1/tools/{tool}/settings", s.authed(s.putSettings(s.toolSettings())))
	m.Handle("POST /api/v1/tools/{tool}/versions", s.authed(s.createVersion))
	m.Handle("GET /api/v1/tool-versions/{version}", s.authed(s.getVersion))
	m.Handle("POST /api/v1/tool-versions/{version}/publish", s.authed(s.publishVersion))

	m.Handle("POST /api/v1/tools/{tool}/runs", s.authed(s.startRun))
	m.Handle("GET /api/v1/runs", s.authed(s.listRuns))
	m.Handle("GET /api/v1/runs/{run}", s.authed(s.getRun))
	m.Handle("GET /api/v1/runs/{run}/artifacts/{path...}", s.authed(s.getArtifact))
	m.Handle("POST /api/v1/runs/{run}/cancel", s.authed(s.cancelRun))
	m.Handle("GET /api/v1/runs/{run}/events", s.authed(s.runEvents))

	m.Handle("POST /api/v1/start_action", s.authed(s.startAction))
	m.Handle("GET /api/v1/tools/{tool}/sessions/{context}", s.authed(s.getSession))
	m.Handle("GET /api/v1/tools/{tool}/session-files", s.authed(s.getSessionFiles))
	m.Handle("DELETE /api/v1/tools/{tool}/session-files", s.authed(s.deleteSessionFiles))
	m.Handle("POST /api/v1/editor/tool-versions/{version}/run-sandbox", s.authed(s.editorRun))
	m.Handle("GET /api/v1/editor/tool-versions/{version}/session", s.authed(s.editorSession))
	m.Handle("POST /api/v1/editor/tool-versions/{version}/start-action", s.authed(s.editorAction))
	m.Handle("GET /api/v1/editor/tool-versions/{version}/settings", s.authed(s.getSettings(s.editorSettings())))
	m.Handle("PUT /api/v1/editor/tool-versions/{version}/settings", s.authed(s.putSettings(s.editorSettings())))

	m.Handle("POST /api/v1/sandboxes", s.authed(s.createSandbox))
	m.Handle("GET /api/v1/sandboxes", s.authed(s.listSandboxes))
	m.Handle("GET /api/v1/sandboxes/{id}", s.authed(s.getSandbox))
	m.Handle("DELETE /api/v1/sandboxes/{id}", s.authed(s.deleteSandbox))
	m.Handle("POST /api/v1/sandboxes/{id}/exec", s.authed(s.execSandbox))
	m.Handle("PUT /api/v1/sandboxes/{id}/fs/{path...}", s.authed(s.putSandboxFile))
	m.Handle("GET /api/v1/sandboxes/{id}/fs/{path...}", s.authed(s.getSandboxFile))
	m.Handle("POST /api/v1/sandboxes/{id}/stage", s.authed(s.stageSandboxFile))
	m.Handle("POST /api/v1/sandboxes/{id}/publish", s.authed(s.publishSandboxFile))
}

// Handler returns the API with request ids, logging and metrics around it. Requests that
// match no route get a JSON 404, or a JSON 405 naming the allowed methods.
func (s *Server) Handler() http.Handler {
	return s.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux would redirect an unclean path to its clean form, so a key such as
		// files/a/../b would reach files/b. Refuse it instead.
		if p := r.URL.Path; strings.HasPrefix(p, "/api/") && p != path.Clean(p) {
			kind, what := errInvalidRequest, "path"
			if strings.HasPrefix(p, "/api/v1/files/") {
				kind, what = blob.ErrInvalidKey, "key"
			}
			if _, rest, ok := strings.Cut(p, "/fs/"); ok && strings.HasPrefix(p, "/api/v1/sandboxes/") {
				// A workspace path: say what is wrong with it as the sandbox would.
				if _, err := runner.CleanPath(rest); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			s.writeError(w, r, errs.New(kind, map[string]any{"path": p}, "the %s in %s has an empty, . or .. segment", what, p))
			return
		}
		if _, pattern := s.mux.Handler(r); pattern == "" {
			if s.notFound != nil && !strings.HasPrefix(r.URL.Path, "/api/") && strings.Contains(r.Header.Get("Accept"), "text/html") {
				s.notFound.ServeHTTP(w, r)
				return
			}
			s.unmatched(w, r)
			return
		}
		s.mux.ServeHTTP(w, r)
	}))
}

// Mux exposes the route table so other packages (the web UI) can add their routes.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// SetNotFound answers requests outside /api/ that match no route and accept HTML (a
// browser's): the web UI's page. Programs still get the JSON error.
func (s *Server) SetNotFound(h http.Handler) { s.notFound = h }

func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := s.mux.Handler(probe); p != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		s.writeError(w, r, errs.New(errMethod, map[string]any{"allowed": allowed},
			"%s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or ")))
		return
	}
	s.writeError(w, r, errs.New(errNotFound, nil, "no route %s %s", r.Method, r.URL.Path))
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.version})
}

// readyz asks every dependency (the database, the blob store, the runner). Not ready is
// a 503 whose error names what is not ready; why goes to the log, not to whoever asks.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	checks := map[string]string{}
	var down []string
	for _, c := range s.ready {
		if err := c.Ping(ctx); err != nil {
			checks[c.Name] = "unavailable (see the server log)"
			down = append(down, c.Name)
			s.log.Warn("readiness check failed", "check", c.Name, "error", err)
			continue
		}
		checks[c.Name] = "ok"
	}
	if len(down) == 0 {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
		return
	}
	var body errorBody
	body.Error.Code = "unavailable"
	body.Error.Message = "not ready: " + strings.Join(down, ", ") + " did not answer; the server log says why"
	body.Error.Details = map[string]any{"not_ready": down, "checks": checks}
	writeJSON(w, http.StatusServiceUnavailable, struct {
		errorBody
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}{body, "not ready", checks})
}

func (s *Server) cleanup(w http.ResponseWriter, r *http.Request, _ store.User) error {
	removed, err := s.janitor.Pass(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"removed": removed})
	return nil
}
