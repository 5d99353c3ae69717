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
// send bad requests on purpose.
func (c *Checker) Wrap(h http.Handler, fail func(format string, args ...any)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, rest, ok := c.match(r)
		if !ok {
			h.ServeHTTP(w, r)
			return
		}
		path := openapi.OpenAPIPath(route.Path)
		item := c.model.Paths.PathItems.GetOrZero(path)
		if item == nil {
			fail("openapi: %s %s: the document has no path %s", r.Method, r.URL.Path, path)
			h.ServeHTTP(w, r)
			return
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
		hasBody := r.ContentLength > 0 || len(r.TransferEncoding) > 0
		if ct == "" && hasBody {
			ct = "application/octet-stream"
			if b := route.Body; b != nil && b.JSON != nil && b.Multipart == nil && !b.Raw {
				ct = "application/json"
			}
			vr.Header.Set("Content-Type", ct)
		}
		checkBody := false
		if isJSON(ct) && r.Body != nil && r.Body != http.NoBody {
			kept, _ := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			r.Body = readCloser{io.MultiReader(bytes.NewReader(kept), r.Body), r.Body}
			if len(kept) <= maxBody {
				checkBody = true
				vr.Body = io.NopCloser(bytes.NewReader(kept))
			}
		}
		if !checkBody {
			vr.Body = http.NoBody
		}
		rec := &recorder{ResponseWriter: w, status: 0}
		h.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		where := fmt.Sprintf("%s %s (route %s %s) answered %d", r.Method, r.URL.RequestURI(), route.Method, path, status)
		if status < 400 && (checkBody || !isJSON(ct)) {
			if ok, errs := c.v.ValidateHttpRequestWithPathItem(vr, item, path); !ok {
				fail("openapi: %s: the request does not match the document: %s", where, describe(errs))
			}
		}
		if rec.overflow {
			return
		}
		var body io.ReadCloser = io.NopCloser(bytes.NewReader(rec.body.Bytes()))
		if r.Method == http.MethodHead {
			body = http.NoBody // net/http sends none, whatever the handler wrote
		}
		resp := &http.Response{StatusCode: status, Header: rec.snapshot, Body: body, Request: vr}
		if resp.Header == nil {
			resp.Header = w.Header().Clone()
		}
		if ok, errs := c.v.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(vr, resp, item, path); !ok {
			fail("openapi: %s: the answer does not match the document: %s\nbody: %.2000s", where, describe(errs), rec.body.String())
		}
	})
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

// match finds the route of r in the table, the most literal segments first, and the
// value of its {name...} parameter if it has one. A HEAD to a route documented only
// for GET is not checked (net/http answers it from the GET).
func (c *Checker) match(r *http.Request) (openapi.Route, string, bool) {
	segs := strings.Split(r.URL.Path, "/")
	best, bestScore, bestRest := openapi.Route{}, -1, ""
	for _, rt := range c.routes {
		if rt.Method != r.Method {
			continue
		}
		score, rest, ok := matchPath(strings.Split(strings.ReplaceAll(rt.Path, "{$}", ""), "/"), segs)
		if ok && score > bestScore {
			best, bestScore, bestRest = rt, score, rest
		}
	}
	return best, bestRest, bestScore >= 0
}

// matchPath matches request segments to a template's; score is how many literal
// segments matched.
func matchPath(tmpl, segs []string) (score int, rest string, ok bool) {
	restAt := -1
	for i, t := range tmpl {
		if strings.HasSuffix(t, "...}") {
			restAt = i
		}
	}
	if restAt < 0 {
		if len(tmpl) != len(segs) {
			return 0, "", false
		}
		return matchSegs(tmpl, segs)
	}
	after := len(tmpl) - restAt - 1
	if len(segs) < len(tmpl) {
		return 0, "", false
	}
	s1, _, ok1 := matchSegs(tmpl[:restAt], segs[:restAt])
	s2, _, ok2 := matchSegs(tmpl[restAt+1:], segs[len(segs)-after:])
	middle := segs[restAt : len(segs)-after]
	if !ok1 || !ok2 || strings.Join(middle, "") == "" {
		return 0, "", false
	}
	return s1 + s2, strings.Join(middle, "/"), true
}

func matchSegs(tmpl, segs []string) (int, string, bool) {
	score := 0
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return 0, "", false
			}
			continue
		}
		if t != segs[i] {
			return 0, "", false
		}
		score++
	}
	return score, "", true
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
	keep     bool
	overflow bool
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.snapshot = w.Header().Clone()
		w.keep = isJSON(w.Header().Get("Content-Type"))
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
