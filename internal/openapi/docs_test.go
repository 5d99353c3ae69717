package openapi_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/openapi"
	"github.com/skrip-dev/skrip/internal/openapi/openapicheck"
)

// docRoute is a route docs/api.md names in code: `GET /api/v1/runs/{id}[?wait=30s]`.
type docRoute struct {
	method, path string // path with each {…} or <…> segment as x
	line         int
	text         string
}

// methodAt finds a method and a path at the start of a code span, after any methods of
// the same path in spans of their own when they open a table's row: | `GET`, `PUT /api/v1/…`.
var (
	methodAt = regexp.MustCompile("(^\\| (?:`(?:GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS)`, )+)?`(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) (/[^`]*)`")
	method   = regexp.MustCompile("[A-Z]+")
)

// docRoutes are the routes docs/api.md names. A path ends at a query (?…), an optional
// part ([…]) or a space outside braces (a body: `POST /api/v1/users {name, role}`); a
// path that elides a part (…) is no route.
func docRoutes(t *testing.T) []docRoute {
	t.Helper()
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []docRoute
	for i, line := range strings.Split(string(doc), "\n") {
		for _, m := range methodAt.FindAllStringSubmatch(line, -1) {
			path := cutPath(m[3])
			if strings.Contains(path, "…") {
				continue
			}
			segs := strings.Split(path, "/")
			for k, s := range segs {
				if strings.HasPrefix(s, "{") || strings.HasPrefix(s, "<") {
					segs[k] = "x"
				}
			}
			for _, verb := range append(method.FindAllString(m[1], -1), m[2]) {
				out = append(out, docRoute{method: verb, path: strings.Join(segs, "/"), line: i + 1, text: m[0]})
			}
		}
	}
	return out
}

// TestDocsNameOnlyDocumentedRoutes: every route of the API (under /api/, and /healthz,
// /readyz, /metrics) that docs/api.md names is in the route table, so the guide cannot
// name a route the server does not have. (The web UI's pages it names, /signin or the
// drop page GET /u/{token}, are not the API.)
func TestDocsNameOnlyDocumentedRoutes(t *testing.T) {
	routes := openapi.Routes()
	named := docRoutes(t)
	if len(named) < 50 {
		t.Fatalf("found only %d routes in docs/api.md", len(named))
	}
	for _, d := range named {
		if !openapicheck.IsAPI(d.path) {
			continue
		}
		if _, _, ok := openapi.Match(routes, d.method, d.path); !ok {
			t.Errorf("docs/api.md:%d names %s, which is not in the route table (internal/openapi/routes_*.go)", d.line, d.text)
		}
	}
}

// TestDocsNameEveryRoute: every route of the table is named in docs/api.md, as
// `METHOD /path` in code.
func TestDocsNameEveryRoute(t *testing.T) {
	named := docRoutes(t)
	for _, r := range openapi.Routes() {
		found := false
		for _, d := range named {
			if d.method != r.Method {
				continue
			}
			if m, _, ok := openapi.Match([]openapi.Route{r}, d.method, d.path); ok && m.Path == r.Path {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/api.md does not name %s %s (write it as `%s %s` where the route is described)", r.Method, r.Path, r.Method, r.Path)
		}
	}
}

// cutPath is the path at the start of s: up to a query, an optional part or a space,
// outside braces.
func cutPath(s string) string {
	depth := 0
	for i, ch := range s {
		switch {
		case ch == '{':
			depth++
		case ch == '}':
			depth--
		case depth == 0 && (ch == '?' || ch == '[' || ch == ' '):
			return s[:i]
		}
	}
	return s
}
