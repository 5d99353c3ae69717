package api_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"

	"github.com/skrip-dev/skrip/internal/api"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/openapi"
	"github.com/skrip-dev/skrip/internal/resumable"
)

// recorder is a Mux that keeps the patterns registered on it.
type recorder struct{ patterns []string }

func (r *recorder) Handle(p string, _ http.Handler) { r.patterns = append(r.patterns, p) }
func (r *recorder) HandleFunc(p string, _ func(http.ResponseWriter, *http.Request)) {
	r.patterns = append(r.patterns, p)
}

// registered are the patterns the API registers, with every optional part (the tus
// routes) switched on.
func registered(t *testing.T) []string {
	t.Helper()
	s := api.New(api.Services{Uploads: &resumable.Handler{}}, api.Ops{Metrics: metrics.New()}, slog.New(slog.DiscardHandler))
	var rec recorder
	s.Register(&rec)
	if len(rec.patterns) < 50 {
		t.Fatalf("only %d routes registered: %v", len(rec.patterns), rec.patterns)
	}
	return rec.patterns
}

// TestEveryRouteDocumented fails on any route the API registers that the OpenAPI
// document lacks, naming it: a route is added to the table in internal/openapi with
// the handler (docs/api.md "OpenAPI").
func TestEveryRouteDocumented(t *testing.T) {
	documented := map[string]bool{}
	for _, r := range openapi.Routes() {
		documented[r.Method+" "+r.Path] = true
		if r.Mux != "" {
			documented[r.Mux] = true
		}
	}
	for _, p := range registered(t) {
		if !documented[p] {
			t.Errorf("route %q is registered but not in the OpenAPI document: add an entry to internal/openapi/routes_*.go", p)
		}
	}
}

// TestOpenAPIDocumentValid builds the document the server serves and parses it with an
// independent OpenAPI library (libopenapi): it must be OpenAPI 3.1 without errors, every
// operation must have a unique id, every $ref must resolve, and details.reason must
// enumerate every reason of the error table.
func TestOpenAPIDocumentValid(t *testing.T) {
	doc, err := openapi.Document(openapi.Routes(), httpkit.DetailReasons(), "test")
	if err != nil {
		t.Fatal(err)
	}
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	if v := d.GetVersion(); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("version %q, want 3.1", v)
	}
	model, err := d.BuildV3Model()
	if err != nil {
		t.Fatalf("the document does not build: %v", err)
	}
	if model == nil {
		t.Fatal("no model")
	}
	// Every reference resolves.
	idx := model.Index
	if errs := idx.GetResolver().GetResolvingErrors(); len(errs) > 0 {
		for _, e := range errs {
			t.Errorf("unresolved: %v", e)
		}
	}
	ids := map[string]string{}
	count := 0
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			count++
			if prev, ok := ids[op.OperationId]; ok {
				t.Errorf("operationId %s is both %s and %s %s", op.OperationId, prev, method, path)
			}
			ids[op.OperationId] = method + " " + path
			if op.Responses == nil || op.Responses.Default == nil {
				t.Errorf("%s %s has no default (error) answer", method, path)
			}
		}
	}
	if count != len(openapi.Routes()) {
		t.Errorf("the document has %d operations, the table %d routes", count, len(openapi.Routes()))
	}
	var raw struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		t.Fatal(err)
	}
	errSchema := string(raw.Components.Schemas["Error"])
	for _, r := range httpkit.DetailReasons() {
		if !strings.Contains(errSchema, `"`+r+`"`) {
			t.Errorf("details.reason does not list %q", r)
		}
	}
	// The wire types a route answers with are components, described once.
	for _, name := range []string{"Run", "FileInfo", "Tool", "Sandbox", "Session", "ActionResult", "NewToolRequest", "contract.NextAction"} {
		if _, ok := raw.Components.Schemas[name]; !ok {
			t.Errorf("no component %s", name)
		}
	}
}

// TestOpenAPIServed: the document is at /api/v1/openapi.json with no token, and is the
// one the table makes.
func TestOpenAPIServed(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	resp, err := http.Get(env.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Paths["/api/v1/files/{key}"]["put"] == nil || doc.Paths["/api/v1/openapi.json"]["get"] == nil {
		t.Fatalf("not the document: openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
}
