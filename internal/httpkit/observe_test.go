package httpkit

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/metrics"
)

// TestLogHidesPathSecrets (from a review): the request log names a share link's or an
// invitation's path without its secret, which anyone reading the log could use.
func TestLogHidesPathSecrets(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /s/{token}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /invite/{secret}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /files/{key...}", func(w http.ResponseWriter, r *http.Request) {})
	var buf bytes.Buffer
	h := Observe(mux, slog.New(slog.NewTextHandler(&buf, nil)), metrics.New(), time.Minute, Front{})
	for path, want := range map[string]string{
		"/s/lnk_SECRETSECRET":      "/s/{token}",
		"/invite/inv_SECRETSECRET": "/invite/{secret}",
		"/files/report-2026.csv":   "/files/report-2026.csv",
	} {
		buf.Reset()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
		line := buf.String()
		if strings.Contains(line, "SECRETSECRET") || !strings.Contains(line, "path="+want) {
			t.Errorf("GET %s logged %q; want path=%s and no secret", path, line, want)
		}
	}
}
