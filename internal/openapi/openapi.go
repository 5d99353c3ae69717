// Package openapi describes skrip's HTTP API as an OpenAPI 3.1 document
// (GET /api/v1/openapi.json, docs/api.md "OpenAPI"). The document is generated: the
// routes come from one table (the routes_*.go files, one entry a route), and every body
// and answer from the wire types, by reflection, so a field added to a wire type is in
// the document at once. Tests keep the table true: every route the server registers must
// be in it (TestEveryRouteDocumented), and the API test suites check each request and
// answer they make against the document (internal/openapi/openapicheck).
package openapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Auth says who may call a route.
type Auth int

const (
	// Bearer routes need an API token (or the web's session cookie with its
	// anti-forgery token); the token's scope must reach them.
	Bearer Auth = iota
	// Public routes need no credential.
	Public
)

// Route is one operation of the API: one entry of the table.
type Route struct {
	Method string // GET, POST, …
	// Path is as http.ServeMux writes it: /api/v1/files/{key...}. A {name...}
	// parameter may hold slashes; it may stand before literal segments
	// (/api/v1/files/{key...}/links), which ServeMux cannot say, so Mux names the
	// pattern that serves such a route.
	Path    string
	Mux     string
	Summary string
	Auth    Auth
	Params  []Param
	Body    *Body
	Answers []Answer
	// Errors are the error statuses this route may answer beyond those every route
	// may (400, 404, 500, and 401 and 403 when it needs a token).
	Errors []int
}

// Param is a query or header parameter.
type Param struct {
	Name     string
	In       string // query or header
	Desc     string
	Type     string // string (default), integer or boolean
	Required bool
}

// Body is a request body: JSON (a wire value), multipart form fields, or raw bytes; a
// route that takes more than one sets each.
type Body struct {
	JSON      any
	Multipart []Field
	Raw       bool
	Media     string // the media type of a raw body; any when empty
	Optional  bool
}

// Field is a multipart form field.
type Field struct {
	Name   string
	File   bool // a file part
	Many   bool // may be given more than once
	Desc   string
	Schema any // a JSON value the field holds (inputs), else a string
}

// Answer is a success answer: a wire value as JSON, bytes of Media (or both, as the
// request's Accept chooses), or no body.
type Answer struct {
	Status  int
	Desc    string
	JSON    any
	Media   string // non-JSON bodies: application/octet-stream, text/event-stream, …
	Headers []string
}

// Routes is the whole table.
func Routes() []Route {
	var out []Route
	for _, part := range [][]Route{opsRoutes(), accountRoutes(), fileRoutes(), toolRoutes(), runRoutes(), sessionRoutes(), sandboxRoutes(), reviewRoutes()} {
		out = append(out, part...)
	}
	return out
}

// Helpers that keep table entries short.

// JSON is a JSON request body of v's type.
func JSON(v any) *Body { return &Body{JSON: v} }

// OptionalJSON is a JSON request body a client may leave out.
func OptionalJSON(v any) *Body { return &Body{JSON: v, Optional: true} }

// Raw is a request body of any bytes.
func Raw() *Body { return &Body{Raw: true} }

// Multipart is a multipart/form-data request body.
func Multipart(f ...Field) *Body { return &Body{Multipart: f} }

// OK is 200 with v as JSON.
func OK(v any) Answer { return Answer{Status: 200, JSON: v} }

// Created is 201 with v as JSON.
func Created(v any) Answer { return Answer{Status: 201, JSON: v} }

// Accepted is 202 with v as JSON.
func Accepted(v any) Answer { return Answer{Status: 202, JSON: v} }

// NoContent is 204.
func NoContent() Answer { return Answer{Status: 204} }

// Bytes is status with a body of any media type (a file's bytes).
func Bytes(status int, headers ...string) Answer {
	return Answer{Status: status, Media: "*/*", Headers: headers}
}

// Query is an optional string query parameter.
func Query(name, desc string) Param { return Param{Name: name, In: "query", Desc: desc} }

// QueryInt is an optional integer query parameter.
func QueryInt(name, desc string) Param {
	return Param{Name: name, In: "query", Desc: desc, Type: "integer"}
}

// Header is an optional request header.
func Header(name, desc string) Param { return Param{Name: name, In: "header", Desc: desc} }

// Document is the OpenAPI 3.1 document of routes; reasons are the values
// details.reason takes (httpkit's error table), version the server's.
func Document(routes []Route, reasons []string, version string) ([]byte, error) {
	g := newReflector()
	paths := map[string]map[string]any{}
	for _, r := range routes {
		p := OpenAPIPath(r.Path)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(r.Method)] = operation(g, r)
	}
	g.components["Error"] = errorSchema(reasons)
	doc := map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"info": map[string]any{
			"title":       "skrip API",
			"version":     version,
			"description": "The HTTP API of skrip (docs/api.md). Generated from the server's route table and wire types.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": g.components,
			"responses": map[string]any{
				"Error": map[string]any{
					"description": "An error: a code of the error table, a message for a person, and details for a program (docs/api.md \"Errors\").",
					"content":     map[string]any{"application/json": map[string]any{"schema": ref("Error")}},
				},
			},
			"securitySchemes": map[string]any{
				"token": map[string]any{
					"type": "http", "scheme": "bearer",
					"description": "An API token (skr_…): Authorization: Bearer <token>.",
				},
				"session": map[string]any{
					"type": "apiKey", "in": "cookie", "name": "skrip_session",
					"description": "The web's sign-in cookie; a request that changes something also needs the page's anti-forgery header (docs/api.md \"Authentication\").",
				},
			},
		},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// OpenAPIPath is path in OpenAPI's form: {key...} becomes {key}, {$} goes.
func OpenAPIPath(path string) string {
	return strings.ReplaceAll(strings.ReplaceAll(path, "...}", "}"), "{$}", "")
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func operation(g *reflector, r Route) map[string]any {
	op := map[string]any{
		"summary":     r.Summary,
		"operationId": operationID(r),
		"tags":        []string{tag(r.Path)},
	}
	var params []any
	for _, name := range pathParams(r.Path) {
		p := map[string]any{"name": strings.TrimSuffix(name, "..."), "in": "path", "required": true, "schema": map[string]any{"type": "string"}}
		if strings.HasSuffix(name, "...") {
			p["description"] = "May contain slashes (a whole key or path)."
		}
		params = append(params, p)
	}
	for _, q := range r.Params {
		typ := q.Type
		if typ == "" {
			typ = "string"
		}
		p := map[string]any{"name": q.Name, "in": q.In, "schema": map[string]any{"type": typ}}
		if q.Desc != "" {
			p["description"] = q.Desc
		}
		if q.Required {
			p["required"] = true
		}
		params = append(params, p)
	}
	if params != nil {
		op["parameters"] = params
	}
	if r.Auth == Bearer {
		op["security"] = []any{map[string]any{"token": []string{}}, map[string]any{"session": []string{}}}
	} else {
		op["security"] = []any{}
	}
	if r.Body != nil {
		op["requestBody"] = requestBody(g, r.Body)
	}
	responses := map[string]any{}
	for _, a := range r.Answers {
		resp := map[string]any{"description": a.Desc}
		if a.Desc == "" {
			resp["description"] = http.StatusText(a.Status)
		}
		content := map[string]any{}
		if a.JSON != nil {
			content["application/json"] = map[string]any{"schema": g.schema(reflect.TypeOf(a.JSON), true)}
		}
		if a.Media != "" {
			content[a.Media] = map[string]any{}
		}
		if len(content) > 0 {
			resp["content"] = content
		}
		if len(a.Headers) > 0 {
			h := map[string]any{}
			for _, name := range a.Headers {
				h[name] = map[string]any{"schema": map[string]any{"type": "string"}}
			}
			resp["headers"] = h
		}
		responses[strconv.Itoa(a.Status)] = resp
	}
	errorRef := map[string]any{"$ref": "#/components/responses/Error"}
	statuses := []int{400, 404, 500}
	if r.Auth == Bearer {
		statuses = append(statuses, 401, 403)
	}
	for _, s := range append(statuses, r.Errors...) {
		if _, ok := responses[strconv.Itoa(s)]; !ok {
			responses[strconv.Itoa(s)] = errorRef
		}
	}
	responses["default"] = errorRef
	op["responses"] = responses
	return op
}

func requestBody(g *reflector, b *Body) map[string]any {
	content := map[string]any{}
	if b.JSON != nil {
		content["application/json"] = map[string]any{"schema": g.schema(reflect.TypeOf(b.JSON), false)}
	}
	if b.Multipart != nil {
		props := map[string]any{}
		for _, f := range b.Multipart {
			var s map[string]any
			switch {
			case f.File:
				s = map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}
			case f.Schema != nil:
				s = g.schema(reflect.TypeOf(f.Schema), false)
			default:
				s = map[string]any{"type": "string"}
			}
			if f.Desc != "" {
				s = withDesc(s, f.Desc)
			}
			if f.Many {
				s = map[string]any{"type": "array", "items": s}
			}
			props[f.Name] = s
		}
		content["multipart/form-data"] = map[string]any{"schema": map[string]any{"type": "object", "properties": props}}
	}
	if b.Raw {
		media := b.Media
		if media == "" {
			media = "*/*"
		}
		content[media] = map[string]any{}
	}
	return map[string]any{"required": !b.Optional, "content": content}
}

func withDesc(s map[string]any, desc string) map[string]any {
	c := map[string]any{"description": desc}
	for k, v := range s {
		c[k] = v
	}
	return c
}

// errorSchema is the shape of every error answer, details.reason one of reasons.
func errorSchema(reasons []string) map[string]any {
	rs := append([]string(nil), reasons...)
	sort.Strings(rs)
	return map[string]any{
		"type":     "object",
		"required": []string{"error"},
		"properties": map[string]any{
			"error": map[string]any{
				"type":     "object",
				"required": []string{"code", "message"},
				"properties": map[string]any{
					"code":    map[string]any{"type": "string", "description": "A code of the error table (docs/api.md \"Errors\")."},
					"message": map[string]any{"type": "string", "description": "A sentence a person can act on."},
					"details": map[string]any{
						"type": "object",
						"properties": map[string]any{
							"reason":     map[string]any{"type": "string", "enum": rs, "description": "Tells failures with one code apart (docs/api.md lists them)."},
							"request_id": map[string]any{"type": "string"},
						},
						// The rest depend on the reason (key, limit, current_etag, …): open, so
						// that a generated client keeps them.
						"additionalProperties": true,
					},
				},
			},
		},
	}
}

// pathParams are the names of path's parameters, with their "...".
func pathParams(path string) []string {
	var out []string
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") && seg != "{$}" {
			out = append(out, seg[1:len(seg)-1])
		}
	}
	return out
}

// tag groups a route by its first segment after /api/v1.
func tag(path string) string {
	rest, ok := strings.CutPrefix(path, "/api/v1/")
	if !ok {
		return "operations"
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// operationID is a unique name for the route: its method and path, in one word.
func operationID(r Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(r.Method))
	for _, seg := range strings.Split(strings.TrimPrefix(r.Path, "/api/v1"), "/") {
		seg = strings.Trim(strings.TrimSuffix(seg, "...}"), "{}$")
		for _, part := range strings.FieldsFunc(seg, func(c rune) bool { return c == '-' || c == '_' || c == '.' }) {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
