// Package web owns skrip's browser UI: server-rendered pages from embedded templates,
// sign-in with a cookie and anti-forgery tokens, and a little hand-written JavaScript
// where a page needs it. Its handlers only translate forms and pages: they drive the
// same services as the API (account, catalog, run, workflow, staging) and answer errors
// with the statuses of httpkit's error table.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/lifecycle"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/signon"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/workflow"
)

//go:embed templates static locales
var assets embed.FS

// csp keeps every page to its own scripts and styles. Tool HTML is framed from its own
// route, which answers with a CSP sandbox of its own (see htmlOutput).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Deps are the services the web UI drives.
type Deps struct {
	Accounts *account.Service
	Catalog  *catalog.Service
	Runs     *run.Service
	Workflow *workflow.Service
	Staging  *staging.Service
	Log      *slog.Logger
	// Lang is the UI's language ("sv" or "en") for a browser that asks for neither.
	Lang string
	// Front says whose X-Forwarded-* headers are believed: for the client address that
	// sign-in throttling counts and whether cookies are Secure.
	Front httpkit.Front
	// SignOn is OpenID Connect sign-in, nil when it is off: the sign-in page then offers
	// only the password form.
	SignOn *signon.Service
	// CodeMirrorDir is where CodeMirror 5 is installed (Debian's libjs-codemirror);
	// empty: DefaultCodeMirrorDir. The editor falls back to a plain text box without it.
	CodeMirrorDir string
	// Lifecycle disables, enables, deletes and exports users (the admin's users page).
	Lifecycle *lifecycle.Service
}

// Handler serves the pages.
type Handler struct {
	accounts *account.Service
	catalog  *catalog.Service
	runs     *run.Service
	workflow *workflow.Service
	staging  *staging.Service
	log      *slog.Logger
	text     *catalogue
	lang     string // Deps.Lang
	front    httpkit.Front
	signOn   *signon.Service
	pages    map[string]map[string]*template.Template // language → page → template
	static   http.Handler
	// codeMirror is CodeMirror's installed directory, nil when it is not installed: the
	// editor's scripts are served from it, and nothing outside it (see serveCodeMirror).
	codeMirror *os.Root
	life       *lifecycle.Service
}

// New reads the message catalogues and parses the templates, once per language.
func New(d Deps) (*Handler, error) {
	text, err := loadCatalogue(assets)
	if err != nil {
		return nil, err
	}
	if d.Lang == "" {
		d.Lang = uiLangs[0].String()
	}
	if _, ok := text.langs[d.Lang]; !ok {
		return nil, fmt.Errorf("web: the UI speaks sv and en, not %q", d.Lang)
	}
	h := &Handler{accounts: d.Accounts, catalog: d.Catalog, runs: d.Runs, workflow: d.Workflow, staging: d.Staging, log: d.Log,
		front: d.Front, signOn: d.SignOn, text: text, lang: d.Lang, pages: map[string]map[string]*template.Template{}}
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, err
	}
	partials, _ := fs.Glob(assets, "templates/part_*.html")
	for tag, l := range text.langs {
		h.pages[tag] = map[string]*template.Template{}
		for _, n := range names {
			base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
			if base == "layout" || strings.HasPrefix(base, "part_") {
				continue
			}
			t, err := template.New(base).Funcs(funcsFor(l)).ParseFS(assets, append([]string{"templates/layout.html", n}, partials...)...)
			if err != nil {
				return nil, err
			}
			h.pages[tag][base] = t
		}
	}
	h.codeMirror = openCodeMirror(d.CodeMirrorDir, d.Log)
	h.life = d.Lifecycle
	sub, _ := fs.Sub(assets, "static")
	files := http.StripPrefix("/static/", http.FileServerFS(sub))
	h.static = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A missing asset gets the not-found page, not net/http's plain text.
		if name := strings.TrimPrefix(r.URL.Path, "/static/"); name != "" {
			if _, err := fs.Stat(sub, strings.TrimSuffix(name, "/")); err != nil {
				h.NotFound().ServeHTTP(w, r)
				return
			}
		}
		files.ServeHTTP(w, r)
	})
	return h, nil
}

// Register adds the pages to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.Handle("GET /static/", h.secure(h.static))
	mux.Handle("GET /favicon.ico", h.secure(http.HandlerFunc(h.favicon)))
	mux.Handle("GET /static/vendor/codemirror/", h.secure(http.HandlerFunc(h.serveCodeMirror)))
	mux.Handle("GET /lang/{lang}", h.secure(http.HandlerFunc(h.pickLang)))
	mux.Handle("POST /refusal", h.secure(http.HandlerFunc(h.refusalText)))
	mux.Handle("GET /u/{token}", h.secure(http.HandlerFunc(h.dropPage)))
	mux.Handle("GET /signin", h.secure(http.HandlerFunc(h.signInPage)))
	mux.Handle("POST /signin", h.secure(http.HandlerFunc(h.signIn)))
	mux.Handle("POST /signout", h.page(h.signOut))
	mux.Handle("GET "+signon.LoginPath, h.secure(http.HandlerFunc(h.signOnStart)))
	mux.Handle("GET "+signon.CallbackPath, h.secure(http.HandlerFunc(h.signOnCallback)))

	mux.Handle("GET /{$}", h.page(h.catalogue))
	mux.Handle("GET /tools/{tool}", h.page(h.toolPage))
	mux.Handle("POST /tools/{tool}/runs", h.upload(h.startRun))
	mux.Handle("POST /tools/{tool}/settings", h.page(h.saveSettings))
	mux.Handle("POST /tools/{tool}/session-files/clear", h.page(h.clearSessionFiles))
	mux.Handle("GET /runs", h.page(h.history))
	mux.Handle("GET /runs/{run}", h.page(h.runPage))
	mux.Handle("GET /runs/{run}/outputs/{n}", h.page(h.htmlOutput))
	mux.Handle("POST /runs/{run}/actions/{action}", h.page(h.submitAction))
	mux.Handle("POST /runs/{run}/retry", h.page(h.retryRun))
	mux.Handle("POST /runs/{run}/cancel", h.page(h.cancelRun))
	mux.Handle("POST /runs/{run}/report", h.page(h.reportRun))
	mux.Handle("GET /reports", h.page(h.reportsPage))
	mux.Handle("POST /reports/{id}/close", h.page(h.closeReport))
	mux.Handle("GET /reviews", h.page(h.reviewsPage))
	mux.Handle("POST /reviews/{id}/approve", h.page(h.approveReview))
	mux.Handle("POST /reviews/{id}/request-changes", h.page(h.requestChanges))
	mux.Handle("POST /editor/versions/{version}/submit", h.page(h.submitReview))

	mux.Handle("GET /editor", h.page(h.editorIndex))
	mux.Handle("POST /editor", h.page(h.createTool))
	mux.Handle("GET /editor/{tool}", h.page(h.editor))
	mux.Handle("POST /editor/{tool}/versions", h.page(h.saveVersion))
	mux.Handle("POST /editor/{tool}/info", h.page(h.saveInfo))
	mux.Handle("POST /editor/{tool}/unpublish", h.page(h.unpublish))
	mux.Handle("POST /editor/versions/{version}/publish", h.page(h.publish))
	mux.Handle("POST /editor/versions/{version}/runs", h.upload(h.editorRun))
	mux.Handle("POST /editor/versions/{version}/settings", h.page(h.saveEditorSettings))
	mux.Handle("POST /editor/versions/{version}/actions/{action}", h.page(h.editorAction))
	mux.Handle("POST /editor/versions/{version}/session/back", h.page(h.editorGoBack))
	mux.Handle("POST /editor/versions/{version}/session/continue", h.page(h.editorContinue))
	mux.Handle("GET /editor/{tool}/compare", h.page(h.compareVersions))
	mux.Handle("GET /editor/versions/{version}/diff", h.page(h.versionDiff))
	mux.Handle("POST /editor/versions/{version}/restore", h.page(h.restoreVersion))
	h.registerMaintainers(mux)

	mux.Handle("GET /files", h.page(h.filesPage))
	mux.Handle("GET /account", h.page(h.accountPage))
	h.registerAccount(mux)
	mux.Handle("GET /cli/login", h.page(h.cliLoginPage))
	mux.Handle("POST /cli/login", h.page(h.decideCLILogin))

	mux.Handle("GET /admin/users", h.page(h.usersPage))
	mux.Handle("POST /admin/users", h.page(h.createUser))
	mux.Handle("POST /admin/users/{id}/role", h.page(h.setRole))
	mux.Handle("POST /admin/users/{id}/tokens", h.page(h.issueToken))
	h.registerLifecycle(mux)
	mux.Handle("GET /admin/runs", h.page(h.adminRuns))

	mux.Handle("GET /categories/{category}", h.page(h.categoryPage))
	mux.Handle("POST /tools/{tool}/favourite", h.page(h.star))
	mux.Handle("GET /admin/categories", h.page(h.categoriesPage))
	mux.Handle("POST /admin/categories", h.page(h.createCategory))
	mux.Handle("POST /admin/categories/{category}", h.page(h.changeCategory))
	mux.Handle("POST /admin/categories/{category}/delete", h.page(h.deleteCategory))
}

// NotFound answers a path that is no page.
func (h *Handler) NotFound() http.Handler {
	return h.secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, h.visitor(r), errs.New(httpkit.ErrNoRoute, map[string]any{"path": r.URL.Path}, "There is no page at %s.", r.URL.Path))
	}))
}

// call is one signed-in request: who asks, and the anti-forgery token of their session.
type call struct {
	User   store.User
	CSRF   string
	secret string
}

// IsAuthor reports whether the caller may write tools.
func (c *call) IsAuthor() bool { return c != nil && catalog.CanAuthor(c.User) }

// IsAdmin reports whether the caller is an admin.
func (c *call) IsAdmin() bool { return c != nil && c.User.Role == store.RoleAdmin }

type pageFunc func(w http.ResponseWriter, r *http.Request, c *call) error

// secure sets the headers every page carries.
func (h *Handler) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			hd.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// visitor returns the signed-in caller of r, or nil.
func (h *Handler) visitor(r *http.Request) *call {
	secret := httpkit.SessionSecret(r)
	if secret == "" {
		return nil
	}
	u, err := h.accounts.SessionUser(r.Context(), secret)
	if err != nil {
		return nil
	}
	return &call{User: u, CSRF: auth.CSRFToken(secret), secret: secret}
}

// page wraps fn so that it runs only for a signed-in user (others go to the sign-in page)
// and, for a form that changes something, only with the session's anti-forgery token.
func (h *Handler) page(fn pageFunc) http.Handler { return h.signedIn(fn, true) }

// upload is page for a form of files: fn reads the body as a stream and checks the
// anti-forgery token itself (readUpload), before anything is kept or run.
func (h *Handler) upload(fn pageFunc) http.Handler { return h.signedIn(fn, false) }

func (h *Handler) signedIn(fn pageFunc, checkForm bool) http.Handler {
	return h.secure(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := h.visitor(r)
		if c == nil {
			if r.Method != http.MethodGet {
				status, _ := httpkit.ErrorStatus(account.ErrUnauthenticated)
				h.signInForm(w, r, status, h.langOf(r).T("lists.signin.signed_out"), "", "/")
				return
			}
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost && checkForm {
			if err := h.checkForm(r, c, r.PostFormValue("csrf")); err != nil {
				h.fail(w, r, c, err)
				return
			}
		}
		if err := fn(w, r, c); err != nil {
			h.fail(w, r, c, err)
		}
	}))
}

// checkForm checks that r, a form c sends, carries the anti-forgery token of c's
// session: in the X-CSRF-Token header or as the form's field. The account service holds
// the rule, for the API's cookie requests too.
func (h *Handler) checkForm(r *http.Request, c *call, field string) error {
	if v := r.Header.Get(httpkit.CSRFHeader); v != "" {
		field = v
	}
	_, err := h.accounts.BrowserUser(r.Context(), c.secret, field, true)
	return err
}

// statusOf is the status the error table gives err.
func (h *Handler) statusOf(w http.ResponseWriter, err error) (int, string) {
	// A refusal that waiting cures says how long on every page that shows it, as the
	// API's answers do (docs/spec.md §3).
	if after := httpkit.RetryAfter(err); after > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(after))
	}
	return httpkit.ErrorStatus(err)
}

// message is what the page says about err in the request's language: the catalogue's
// sentence for its reason ("error.<reason>"), else the error table's message (a
// sentence written for the user, never an internal error's text), and for the server's
// own failure only the request id to report, its text going to the log.
func (h *Handler) message(r *http.Request, err error) string {
	status, code, msg, details := httpkit.Describe(err)
	l := h.langOf(r)
	if status == http.StatusInternalServerError {
		httpkit.LogInternal(r, h.log, err)
		return l.T("error.internal", "RequestID", httpkit.RequestID(r.Context()))
	}
	reason, _ := details["reason"].(string)
	if reason == "" {
		reason = code
	}
	if s, ok := l.refusal(reason, details); ok {
		return s
	}
	return msg
}

// refusal is l's sentence for a refusal with reason, filled from its details (the limit,
// the file): a byte count comes as a size ("10 MB"). ok is false when l has no sentence
// for reason.
func (l *Lang) refusal(reason string, details map[string]any) (string, bool) {
	id := "error." + reason
	if reason == "" || !l.Has(id) {
		return "", false
	}
	var args []any
	for k, v := range details {
		if n, isCount := byteCount(v); isCount && strings.HasSuffix(k, "_bytes") {
			v = l.Size(n)
		}
		args = append(args, k, v)
	}
	return l.T(id, args...), true
}

// byteCount is v as a count of bytes, when it is a whole number.
func byteCount(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case uint64:
		return int64(n), true
	case float64:
		return int64(n), n == float64(int64(n))
	}
	return 0, false
}

// langOf is the language of r's page.
func (h *Handler) langOf(r *http.Request) *Lang { return h.text.choose(r, h.lang) }

// pickLang keeps the language the user picked in a cookie, for a year, and goes back to
// the page they were on.
func (h *Handler) pickLang(w http.ResponseWriter, r *http.Request) {
	tag := r.PathValue("lang")
	if _, ok := h.text.langs[tag]; !ok {
		h.fail(w, r, h.visitor(r), errs.New(httpkit.ErrNoRoute, map[string]any{"path": r.URL.Path}, "There is no page at %s.", r.URL.Path))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: LangCookie, Value: tag, Path: "/", MaxAge: 365 * 24 * 3600,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.front.Secure(r)})
	// Only a path of this site (signon.LocalPath).
	redirect(w, r, signon.LocalPath(r.URL.Query().Get("back")))
}

// fail renders err as an error page with the table's status for it. When reading the
// request body failed, that is what the page says.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, c *call, err error) {
	if berr := httpkit.BodyError(r); berr != nil {
		err = berr
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	status, _ := h.statusOf(w, err)
	h.render(w, r, status, "error", c, map[string]any{"Title": h.langOf(r).statusTitle(status), "Message": h.message(r, err)})
}

// render executes page into a buffer first, so a template error never sends half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, page string, c *call, data map[string]any) {
	l := h.langOf(r)
	t, ok := h.pages[l.Tag][page]
	if !ok {
		h.renderFailed(w, r, fmt.Errorf("web: no page %q", page))
		return
	}
	if data == nil {
		data = map[string]any{}
	}
	data["Me"] = c
	data["Path"] = r.URL.Path
	data["RequestURI"] = r.URL.RequestURI()
	data["Lang"] = l.Tag
	data["UIText"] = h.text.scriptText(l)
	data["ShowFiles"] = h.showFiles(r, c)
	data["ShowReviews"] = c != nil && h.catalog != nil && h.catalog.ReviewOn() && catalog.MayReview(c.User)
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		h.renderFailed(w, r, fmt.Errorf("web: rendering page %s: %w", page, err))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// renderFailed answers a page that could not be rendered in plain text, as no template
// can be trusted then: the error table's status for err (a 500) and the request id to
// report, with err in the log.
func (h *Handler) renderFailed(w http.ResponseWriter, r *http.Request, err error) {
	status, _ := h.statusOf(w, err)
	http.Error(w, h.message(r, err), status)
}

// redirect sends the browser to target after a form was handled.
func redirect(w http.ResponseWriter, r *http.Request, target string) {
	http.Redirect(w, r, target, http.StatusSeeOther)
}
