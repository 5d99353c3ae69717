// Package openapicheck checks real traffic against the API's OpenAPI document with an
// independent validator (libopenapi-validator): the API test suites wrap their server's
// handler with it (internal/apptest), so each request and answer a test makes is held
// to the document. Only tests import it: the server does not link the validator.
package openapicheck

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/errors"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/skrip-dev/skrip/internal/openapi"
)

// maxBody is the most of a JSON body the checker keeps to validate; a larger body passes
// through unchecked.
const maxBody = 1 << 20

// Checker validates requests and answers against the document.
type Checker struct {
	v      validator.Validator
	model  *v3.Document
	routes []openapi.Route
}

// New is a checker of doc, whose routes are routes.
func New(doc []byte, routes []openapi.Route) (*Checker, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, err
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, err
	}
	return &Checker{v: validator.NewValidatorFromV3Model(&m.Model), model: &m.Model, routes: routes}, nil
}

// Wrap returns h, checking each request to a documented route and its answer: an
// answer that does not match the document, or a request the server took (a status
// below 400) that the document refuses, is reported to fail with the route and the
// validator's words. Requests the server refused are not held to the document: tests
// send bad requests on purpose. A request to the API (under /api/, or /healthz, /readyz,
// /metrics) that matches no route of the document must be refused (400, 404 or 405):
// a route the server serves and the document lacks fails too.
func (c *Checker) Wrap(h http.Handler, fail func(format string, args ...any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex, body, documented := c.begin(r, true, fail)
		if body != nil {
			r.Body = body
		}
		rec := &recorder{ResponseWriter: w, check: ex != nil}
		h.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		if !documented {
			c.undocumented(r, status, fail)
			return
		}
		if ex == nil {
			return
		}
		header := rec.snapshot
		if header == nil {
			header = w.Header().Clone()
		}
		ex.finish(c, status, header, rec.body.Bytes(), rec.overflow, fail)
	})
}

// Transport returns next, checking each request it sends to a documented route and the
// answer it gets as Wrap does on the server's side: a client's suite (one whose server
// runs in another process) holds its traffic to the document with it. The answer's body
// reaches the caller whole.
func (c *Checker) Transport(next http.RoundTripper, fail func(format string, args ...any)) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		ex, body, documented := c.begin(r, false, fail)
		send := r
		if body != nil {
			send = r.Clone(r.Context())
			send.Body = body
		}
		resp, err := next.RoundTrip(send)
		if err != nil {
			return resp, err
		}
		if !documented {
			c.undocumented(r, resp.StatusCode, fail)
			return resp, nil
		}
		if ex == nil {
			return resp, nil
		}
		var kept []byte
		overflow := false
		if isJSON(resp.Header.Get("Content-Type")) && r.Method != http.MethodHead {
			kept, err = io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
			resp.Body = readCloser{io.MultiReader(bytes.NewReader(kept), resp.Body), resp.Body}
			if err != nil {
				return resp, nil // the caller sees the broken body; nothing to check
			}
			overflow = len(kept) > maxBody
		}
		ex.finish(c, resp.StatusCode, resp.Header, kept, overflow, fail)
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// exchange is a request to a documented route, as the validator sees it.
type exchange struct {
	req       *http.Request // the validator's copy: the body as far as kept, {name...} escaped
	route     openapi.Route
	item      *v3.PathItem
	path      string // the route's path in the document
	ct        string
	checkBody bool
	tee       *teeBody // on the server's side: the body as the handler read it
}

// teeBody keeps the start of a request's body as the handler reads it, so that the
// checker never reads ahead of the handler: a handler that answers without reading the
// body (a refusal) must not wait for it.
type teeBody struct {
	io.ReadCloser
	kept bytes.Buffer
	eof  bool
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if room := maxBody + 1 - t.kept.Len(); room > 0 {
		t.kept.Write(p[:min(n, room)])
	}
	if err == io.EOF {
		t.eof = true
	}
	return n, err
}

// begin looks r up in the document. documented is false for a request to the API that no
// route of the document matches; ex is nil for a request not to check (one outside the
// API, a CORS preflight, a HEAD that net/http answers from a GET). body, when not nil,
// replaces r's body: the checker read its start to keep it.
//
// On the server's side (lazy), the body is kept as the handler reads it and checked in
// finish when the handler read it whole; on a client's, its start is read before sending.
func (c *Checker) begin(r *http.Request, lazy bool, fail func(string, ...any)) (ex *exchange, body io.ReadCloser, documented bool) {
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		return nil, nil, true // CORS, not an operation of the API
	}
	route, rest, ok := openapi.Match(c.routes, r.Method, r.URL.Path)
	if !ok {
		// A HEAD to a route documented only for GET: net/http answers it from the GET.
		_, _, get := openapi.Match(c.routes, http.MethodGet, r.URL.Path)
		return nil, nil, !IsAPI(r.URL.Path) || (r.Method == http.MethodHead && get) || c.subtree(r)
	}
	path := openapi.OpenAPIPath(route.Path)
	item := c.model.Paths.PathItems.GetOrZero(path)
	if item == nil {
		fail("openapi: %s %s: the document has no path %s", r.Method, r.URL.Path, path)
		return nil, nil, true
	}
	// The validator's own request: the body as far as kept, and a {name...}
	// parameter's slashes escaped, so that it stays one segment of the template.
	vr := r.Clone(r.Context())
	if rest != "" {
		vr.URL = escapeRest(r.URL, rest)
	}
	// A body without a type: the server reads a JSON-only route's body as JSON
	// whatever its type, and anything else as bytes (RFC 9110 §8.3).
	ct := r.Header.Get("Content-Type")
	hasBody := r.ContentLength > 0 || len(r.TransferEncoding) > 0 || r.Body != nil && r.Body != http.NoBody // a client's body of unknown length
	if ct == "" && hasBody {
		ct = "application/octet-stream"
		if b := route.Body; b != nil && b.JSON != nil && b.Multipart == nil && !b.Raw {
			ct = "application/json"
		}
		vr.Header = vr.Header.Clone()
		vr.Header.Set("Content-Type", ct)
	}
	ex = &exchange{req: vr, route: route, item: item, path: path, ct: ct}
	if lazy && isJSON(ct) && r.Body != nil && r.Body != http.NoBody {
		ex.tee = &teeBody{ReadCloser: r.Body}
		body = ex.tee
	} else if isJSON(ct) && r.Body != nil && r.Body != http.NoBody {
		kept, _ := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		body = readCloser{io.MultiReader(bytes.NewReader(kept), r.Body), r.Body}
		if len(kept) <= maxBody {
			ex.checkBody = true
			vr.Body = io.NopCloser(bytes.NewReader(kept))
		}
	}
	if !ex.checkBody {
		vr.Body = http.NoBody
	}
	return ex, body, true
}

// finish checks the request, when the server took it, and the answer: its status,
// headers and (a JSON answer's) body, unless the body overflowed what was kept.
func (ex *exchange) finish(c *Checker, status int, header http.Header, body []byte, overflow bool, fail func(string, ...any)) {
	r := ex.req
	if t := ex.tee; t != nil && !t.eof && status < 400 {
		// The server took a request without reading all of its body: read the rest, as
		// net/http would, so that the body is checked all the same.
		io.Copy(io.Discard, io.LimitReader(t, maxBody+1))
	}
	if t := ex.tee; t != nil && t.eof && t.kept.Len() <= maxBody {
		ex.checkBody = true
		r.Body = io.NopCloser(bytes.NewReader(t.kept.Bytes()))
	}
	where := fmt.Sprintf("%s %s (route %s %s) answered %d", r.Method, r.URL.RequestURI(), ex.route.Method, ex.path, status)
	if status < 400 && (ex.checkBody || !isJSON(ex.ct)) {
		if ok, errs := c.v.ValidateHttpRequestWithPathItem(r, ex.item, ex.path); !ok {
			fail("openapi: %s: the request does not match the document: %s", where, describe(errs))
		}
	}
	if overflow {
		return
	}
	var rb io.ReadCloser = io.NopCloser(bytes.NewReader(body))
	if r.Method == http.MethodHead {
		rb = http.NoBody // net/http sends none, whatever the handler wrote
	}
	resp := &http.Response{StatusCode: status, Header: header, Body: rb, Request: r}
	if ok, errs := c.v.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(r, resp, ex.item, ex.path); !ok {
		fail("openapi: %s: the answer does not match the document: %s\nbody: %.2000s", where, describe(errs), body)
	}
}

// subtree says whether r falls under a route whose path ends in "/", which the server's
// mux serves for every path below it (tus's OPTIONS /api/v1/uploads/ answers for an
// upload's path too). The document cannot say "below", so such a request is not checked.
func (c *Checker) subtree(r *http.Request) bool {
	for _, rt := range c.routes {
		if rt.Method == r.Method && strings.HasSuffix(rt.Path, "/") && strings.HasPrefix(r.URL.Path, rt.Path) {
			return true
		}
	}
	return false
}

// undocumented fails a request to the API that no route of the document matches unless
// it was refused as such: 404 (no route), 405 (not this method) or 400 (a path the
// server will not clean).
func (c *Checker) undocumented(r *http.Request, status int, fail func(string, ...any)) {
	switch status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusBadRequest:
		return
	}
	fail("openapi: %s %s answered %d, but the document has no such route: add it to internal/openapi/routes_*.go", r.Method, r.URL.RequestURI(), status)
}

// IsAPI reports whether a request to path is one to the API, which the document must
// describe: under /api/, or an operational route. (The web UI's pages are not the API;
// /s/ and /u/ links are in the document for the methods it names.)
func IsAPI(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/healthz" || path == "/readyz" || path == "/metrics"
}

func describe(errs []*errors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n  - " + e.Message)
		if e.Reason != "" {
			b.WriteString(": " + e.Reason)
		}
		for _, s := range e.SchemaValidationErrors {
			b.WriteString("\n      " + s.FieldPath + ": " + s.Reason)
		}
	}
	return b.String()
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.TrimSpace(strings.ToLower(mt))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// escapeRest is u with rest, the value of a {name...} parameter at the end of its
// path or before literal segments, escaped as one segment.
func escapeRest(u *url.URL, rest string) *url.URL {
	c := *u
	i := strings.Index(u.Path, rest)
	if i < 0 {
		return &c
	}
	c.RawPath = escapeSegments(u.Path[:i]) + url.PathEscape(rest) + escapeSegments(u.Path[i+len(rest):])
	return &c
}

func escapeSegments(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

type readCloser struct {
	io.Reader
	io.Closer
}

// recorder passes an answer through, keeping its status, headers and (a JSON answer)
// its body.
type recorder struct {
	http.ResponseWriter
	status   int
	snapshot http.Header
	body     bytes.Buffer
	check    bool // keep a JSON answer's body
	keep     bool
	overflow bool
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.snapshot = w.Header().Clone()
		w.keep = w.check && isJSON(w.Header().Get("Content-Type"))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.keep && !w.overflow {
		if w.body.Len()+len(p) > maxBody {
			w.overflow = true
		} else {
			w.body.Write(p)
		}
	}
	return w.ResponseWriter.Write(p)
}

func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
