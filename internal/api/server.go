// Package api adapts skrip's services to the HTTP JSON API under /api/v1 and the health
// and metrics routes (docs/api.md). Its handlers only translate HTTP: the rules live in
// the services, and httpkit holds authentication and the error table.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/janitor"
	"github.com/skrip-dev/skrip/internal/lifecycle"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/openapi"
	"github.com/skrip-dev/skrip/internal/resumable"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// Check is one dependency that /readyz asks.
type Check struct {
	Name string
	Ping func(ctx context.Context) error
}

// Services are the services the API adapts to HTTP.
type Services struct {
	Accounts  *account.Service
	Catalog   *catalog.Service
	Staging   *staging.Service
	Runs      *run.Service
	Workflow  *workflow.Service
	Sandboxes *sandbox.Service
	Janitor   *janitor.Janitor
	Lifecycle *lifecycle.Service
	Uploads   *resumable.Handler // the tus protocol at /api/v1/uploads/
	// RuntimeRoot is the runner's root filesystem, whose list of modules the editor
	// completes ("": none, the helper modules only).
	RuntimeRoot string
}

// Ops is what the operational routes (/healthz, /readyz, /metrics) answer from.
type Ops struct {
	Metrics *metrics.Metrics
	Ready   []Check
	Version string
	// Front says whose X-Forwarded-* headers are believed and where users reach the
	// server, for the links the API builds.
	Front httpkit.Front
}

// Server is the HTTP API: handlers that read a request, call one service and write its
// answer. Rules live in the services, statuses in httpkit's error table.
type Server struct {
	svc Services
	ops Ops
	log *slog.Logger
}

// New returns the API over svc.
func New(svc Services, ops Ops, log *slog.Logger) *Server {
	return &Server{svc: svc, ops: ops, log: log}
}

// RegisterOps adds only the operational routes (/healthz, /readyz, /metrics) to m:
// what a `skrip worker` serves.
func RegisterOps(m *http.ServeMux, ops Ops, log *slog.Logger) {
	(&Server{ops: ops, log: log}).registerOps(m)
}

func (s *Server) registerOps(m Mux) {
	m.HandleFunc("GET /healthz", s.healthz)
	m.HandleFunc("GET /readyz", s.readyz)
	m.Handle("GET /metrics", promhttp.HandlerFor(s.ops.Metrics.Registry, promhttp.HandlerOpts{}))
}

// Mux is where the API registers its routes: an *http.ServeMux, or in a test a recorder
// of the patterns (TestEveryRouteDocumented checks each is in the OpenAPI document).
type Mux interface {
	Handle(pattern string, handler http.Handler)
	HandleFunc(pattern string, handler func(http.ResponseWriter, *http.Request))
}

// Register adds the API's routes to m.
func (s *Server) Register(m Mux) {
	s.registerOps(m)
	m.HandleFunc("GET /api/v1/openapi.json", s.openAPI)

	m.Handle("GET /api/v1/me", s.authed(s.me))
	m.Handle("GET /api/v1/users", s.authed(s.listUsers))
	m.Handle("POST /api/v1/users", s.authed(s.createUser))
	m.Handle("PATCH /api/v1/users/{id}", s.authed(s.updateUser))
	m.Handle("POST /api/v1/users/{id}/tokens", s.authed(s.createToken))
	s.registerTokens(m)
	m.Handle("PUT /api/v1/users/{id}/password", s.authed(s.setPassword))
	s.registerCLILogins(m)
	s.registerLifecycle(m)

	m.Handle("POST /api/v1/files", s.authed(s.uploadFile))
	m.Handle("GET /api/v1/files", s.authed(s.listFiles))
	m.Handle("PUT /api/v1/files/{key...}", s.authed(s.putFile))
	m.Handle("GET /api/v1/files/{key...}", s.authed(s.getFileOrLinks))
	m.Handle("DELETE /api/v1/files/{key...}", s.authed(s.deleteFile))
	s.registerLinks(m)
	s.registerUploads(m)
	s.registerVersions(m)

	m.Handle("POST /api/v1/admin/cleanup", s.authed(s.cleanup))

	m.Handle("POST /api/v1/tools", s.authed(s.createTool))
	m.Handle("GET /api/v1/tools", s.authed(s.listTools))
	m.Handle("GET /api/v1/tools/{tool}", s.authed(s.getTool))
	m.Handle("PATCH /api/v1/tools/{tool}", s.authed(s.updateTool))
	m.Handle("GET /api/v1/tools/{tool}/settings", s.authed(s.getSettings(s.toolSettings())))
	m.Handle("PUT /api/v1/tools/{tool}/settings", s.authed(s.putSettings(s.toolSettings())))
	m.Handle("POST /api/v1/tools/{tool}/versions", s.authed(s.createVersion))
	m.Handle("GET /api/v1/tool-versions/{version}", s.authed(s.getVersion))
	m.Handle("POST /api/v1/tool-versions/{version}/publish", s.authed(s.publishVersion))
	m.Handle("POST /api/v1/tools/{tool}/unpublish", s.authed(s.unpublishTool))
	s.registerCatalogue(m)
	s.registerToolVersions(m)
	s.registerReviews(m)
	s.registerMaintainers(m)

	m.Handle("POST /api/v1/tools/{tool}/runs", s.authed(s.startRun))
	m.Handle("GET /api/v1/runs", s.authed(s.listRuns))
	m.Handle("GET /api/v1/runs/{run}", s.authed(s.getRun))
	m.Handle("GET /api/v1/runs/{run}/artifacts/{path...}", s.authed(s.getArtifact))
	m.Handle("POST /api/v1/runs/{run}/cancel", s.authed(s.cancelRun))
	m.Handle("GET /api/v1/runs/{run}/events", s.authed(s.runEvents))
	s.registerReports(m)

	m.Handle("POST /api/v1/start_action", s.authed(s.startAction))
	m.Handle("GET /api/v1/tools/{tool}/sessions/{context}", s.authed(s.getSession))
	m.Handle("GET /api/v1/tools/{tool}/session-files", s.authed(s.getSessionFiles))
	m.Handle("DELETE /api/v1/tools/{tool}/session-files", s.authed(s.deleteSessionFiles))
	m.Handle("POST /api/v1/editor/tool-versions/{version}/run-sandbox", s.authed(s.editorRun))
	m.Handle("GET /api/v1/editor/tool-versions/{version}/session", s.authed(s.editorSession))
	m.Handle("POST /api/v1/editor/tool-versions/{version}/start-action", s.authed(s.editorAction))
	m.Handle("POST /api/v1/editor/tool-versions/{version}/session/back", s.authed(s.editorGoBack))
	m.Handle("POST /api/v1/editor/tool-versions/{version}/session/continue", s.authed(s.editorContinue))
	m.Handle("GET /api/v1/editor/tool-versions/{version}/settings", s.authed(s.getSettings(s.editorSettings())))
	m.Handle("PUT /api/v1/editor/tool-versions/{version}/settings", s.authed(s.putSettings(s.editorSettings())))
	s.registerLint(m)

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

// authed wraps h so that it runs only for a caller that authenticates (httpkit says
// how) with a credential whose scope reaches the route (checkScope), and writes h's
// error through the error table. h gets a copy of the request whose context carries the
// credential and the user (the request log learns the user too, httpkit.WithUser); the
// request authed was given is left as it was.
func (s *Server) authed(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := httpkit.Credential(r, s.svc.Accounts)
		if err != nil {
			httpkit.WriteError(w, r, s.log, err)
			return
		}
		r = httpkit.WithCredential(r, c)
		if err := checkScope(r, c.Scope); err != nil {
			httpkit.WriteError(w, r, s.log, err)
			return
		}
		if err := h(w, r, c.User); err != nil {
			httpkit.WriteError(w, r, s.log, err)
		}
	})
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request, u store.User) error

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	httpkit.WriteJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.ops.Version})
}

// readyz asks every dependency (the database, the blob store, the runner). Not ready is
// a 503 whose error names what is not ready; why goes to the log, not to whoever asks.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	checks := map[string]string{}
	var down []string
	for _, c := range s.ops.Ready {
		if err := c.Ping(ctx); err != nil {
			checks[c.Name] = "unavailable (see the server log)"
			down = append(down, c.Name)
			s.log.Warn("readiness check failed", "check", c.Name, "error", err)
			continue
		}
		checks[c.Name] = "ok"
	}
	if len(down) == 0 {
		httpkit.WriteJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
		return
	}
	var body wire.ErrorBody
	body.Error.Code = "unavailable"
	body.Error.Message = "not ready: " + strings.Join(down, ", ") + " did not answer; the server log says why"
	body.Error.Details = map[string]any{"not_ready": down, "checks": checks}
	httpkit.WriteJSON(w, http.StatusServiceUnavailable, struct {
		wire.ErrorBody
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}{body, "not ready", checks})
}

func (s *Server) cleanup(w http.ResponseWriter, r *http.Request, u store.User) error {
	if err := account.RequireAdmin(u, "a cleanup pass"); err != nil {
		return err
	}
	removed, err := s.svc.Janitor.Pass(r.Context())
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, wire.Cleanup{Removed: removed})
	return nil
}

// openAPI serves the OpenAPI 3.1 document of the API (docs/api.md "OpenAPI"), made from
// the route table and the wire types.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := openapi.Document(openapi.Routes(), httpkit.DetailReasons(), s.ops.Version)
	if err != nil {
		httpkit.WriteError(w, r, s.log, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
}
