package openapicheck_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/openapi"
	"github.com/skrip-dev/skrip/internal/openapi/openapicheck"
)

// TestCheckerCatchesMismatches: an answer that breaks the document fails, naming the
// route and the field; one that keeps to it does not; a key with slashes finds its route;
// a refused request is not held to the document.
func TestCheckerCatchesMismatches(t *testing.T) {
	doc, err := openapi.Document(openapi.Routes(), httpkit.DetailReasons(), "test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := openapicheck.New(doc, openapi.Routes())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path, body, ctype string
		status                          int
		answer                          string
		want                            string // in the failure; "" for none
	}{
		{"a field of the wrong type", "GET", "/api/v1/runs/r_1", "", "", 200, `{"run_id": 5}`, "route GET /api/v1/runs/{run}"},
		{"a field the document lacks", "GET", "/healthz", "", "", 200, `{"status":"ok","version":"x","extra":1}`, "extra"},
		{"a good answer", "GET", "/healthz", "", "", 200, `{"status":"ok","version":"x"}`, ""},
		{"an error answer", "GET", "/api/v1/files/files/a/b.txt", "", "", 404, `{"error":{"code":"not_found","message":"no","details":{"reason":"file_not_found"}}}`, ""},
		{"an unknown reason", "GET", "/api/v1/files/files/a/b.txt", "", "", 404, `{"error":{"code":"not_found","message":"no","details":{"reason":"made_up"}}}`, "made_up"},
		{"a file with slashes in its key", "PUT", "/api/v1/files/files/a/b.txt", "bytes", "text/plain", 201,
			`{"file_key":"files/a/b.txt","name":"b.txt","size_bytes":5,"content_type":"text/plain","checksum":"sha256:00","created_at":"2026-01-01T00:00:00Z","expires_at":null}`, ""},
		{"a request the server took that the document refuses", "POST", "/api/v1/categories", `{"title": 7}`, "application/json", 201,
			`{"slug":"a","title":"a","approved":true,"tools":0,"proposed_by":""}`, "the request does not match"},
		{"a bad request the server refused", "POST", "/api/v1/categories", `{"title": 7}`, "application/json", 400,
			`{"error":{"code":"invalid_request","message":"no"}}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.answer)
			})
			var failures []string
			srv := c.Wrap(h, func(f string, a ...any) { failures = append(failures, fmt.Sprintf(f, a...)) })
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer skr_x")
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			srv.ServeHTTP(httptest.NewRecorder(), req)
			got := strings.Join(failures, "\n")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("failed a good exchange: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("failure %q does not say %q", got, tc.want)
			}
		})
	}
}
