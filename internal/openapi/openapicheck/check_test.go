package openapicheck_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/openapi"
	"github.com/skrip-dev/skrip/internal/openapi/openapicheck"
)

// TestCheckerCatchesMismatches: an answer that breaks the document fails, naming the
// route and the field; one that keeps to it does not; a key with slashes finds its route;
// a refused request is not held to the document; an API route the document lacks fails
// unless refused. Each case runs on the server's side (Wrap) and on the client's
// (Transport, over a real connection), and the client still reads the whole answer.
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
		{"an API route the document lacks", "GET", "/api/v1/made-up", "", "", 200, `{}`, "the document has no such route"},
		{"a method the document lacks", "DELETE", "/api/v1/runs/r_1", "", "", 204, ``, "the document has no such route"},
		{"an unknown API route refused", "GET", "/api/v1/made-up", "", "", 404,
			`{"error":{"code":"not_found","message":"no","details":{"reason":"no_route"}}}`, ""},
		{"a HEAD answered from a GET", "HEAD", "/api/v1/runs/r_1", "", "", 200, ``, ""},
		{"a CORS preflight", "OPTIONS", "/api/v1/files/files/a", "", "", 204, ``, ""},
		{"tus's OPTIONS below its route", "OPTIONS", "/api/v1/uploads/up_1", "", "", 200, ``, ""},
		{"a web page", "GET", "/tools/x", "", "", 200, `{}`, ""},
	}
	for _, side := range []string{"server", "client"} {
		for _, tc := range cases {
			t.Run(side+"/"+tc.name, func(t *testing.T) {
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if tc.answer != "" {
						w.Header().Set("Content-Type", "application/json")
					}
					w.WriteHeader(tc.status)
					fmt.Fprint(w, tc.answer)
				})
				var failures []string
				record := func(f string, a ...any) { failures = append(failures, fmt.Sprintf(f, a...)) }
				req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer skr_x")
				if tc.ctype != "" {
					req.Header.Set("Content-Type", tc.ctype)
				}
				if tc.method == "OPTIONS" {
					req.Header.Set("Origin", "https://example.com")
					req.Header.Set("Access-Control-Request-Method", "PUT")
				}
				if side == "server" {
					c.Wrap(h, record).ServeHTTP(httptest.NewRecorder(), req)
				} else {
					srv := httptest.NewServer(h)
					defer srv.Close()
					req.RequestURI = ""
					req.URL.Scheme, req.URL.Host = "http", srv.Listener.Addr().String()
					cl := &http.Client{Transport: c.Transport(http.DefaultTransport, record)}
					resp, err := cl.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != tc.status || tc.method != "HEAD" && string(got) != tc.answer {
						t.Errorf("the client read %d %q, the server sent %d %q", resp.StatusCode, got, tc.status, tc.answer)
					}
				}
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
}

// TestWrapDoesNotReadAhead: a handler that refuses a request without reading its body
// answers at once, though the client has sent only the body's start (the checker reads
// the body only as the handler does; it read it whole first, and the answer waited).
func TestWrapDoesNotReadAhead(t *testing.T) {
	doc, err := openapi.Document(openapi.Routes(), httpkit.DetailReasons(), "test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := openapicheck.New(doc, openapi.Routes())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "close") // as skrip's refusals do: net/http then leaves the body unread
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"code":"unauthorized","message":"sign in"}}`)
	}), t.Errorf))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/categories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"title\":")
	// The rest of the body never comes: the answer must come without it.
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer while the body is unfinished: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("answer %d, want 401", resp.StatusCode)
	}
}
