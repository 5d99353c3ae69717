package apptest

import (
	"bytes"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// internalNames are what an error body must never hold (docs/spec.md §3): the blob stores' and
// drivers' prefixes, blob object names, Go's own failure texts. "pgx" is matched as a
// word: skrip's ids are Crockford base32, whose letters include P, G and X, so about one
// id in two thousand holds them in a row.
var internalNames = regexp.MustCompile(`(?i)natsblob|fsblob|blob:|sql:|\bpgx\b|pgconn|sqlite|nats:|jetstream|_objects/|\bb_[0-9A-Z]{26}\b|runtime error|goroutine \d|panic:|/skrip-data|\.go:\d`)

// maxChecked is how much of each error body the check reads.
const maxChecked = 64 << 10

// errorCheck wraps a test server's handler: every answer with a status of 400 or more,
// from any test that starts a server, must name no internal object (internalNames, or
// the server's data dir), and outside the web UI's pages it must be JSON. A violation
// fails the test that started the server, with the request that caused it.
func errorCheck(t testing.TB, dataDir string, next http.Handler) http.Handler {
	var (
		mu   sync.Mutex
		done bool
	)
	// Registered before the server's own cleanup, so it runs after it: a handler that
	// is still finishing then reports nothing into an ended test.
	t.Cleanup(func() {
		mu.Lock()
		done = true
		mu.Unlock()
	})
	dir, _ := filepath.Abs(dataDir)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tee := &teeWriter{ResponseWriter: w}
		next.ServeHTTP(tee, r)
		if tee.status < 400 {
			return
		}
		body := tee.body.String()
		var problems []string
		if m := internalNames.FindString(body); m != "" {
			problems = append(problems, "names "+m)
		}
		if dir != "" && strings.Contains(body, dir) {
			problems = append(problems, "names the data dir")
		}
		ct := tee.Header().Get("Content-Type")
		if !strings.HasPrefix(ct, "text/html") && !strings.HasPrefix(ct, "application/json") ||
			isAPI(r.URL.Path) && !strings.HasPrefix(ct, "application/json") {
			problems = append(problems, "is "+ct+", not the JSON of docs/spec.md §3")
		}
		if len(problems) == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Errorf("error answer %d to %s %s %s: %.2000q", tee.status, r.Method, r.URL.Path, strings.Join(problems, "; "), body)
		}
	})
}

// isAPI reports whether path is answered by the API rather than the web UI's pages.
func isAPI(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/healthz" || path == "/readyz" || path == "/metrics"
}

// teeWriter keeps the status and the first maxChecked bytes of an error answer. Unwrap
// keeps http.ResponseController (flushes, deadlines) working through it.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (tw *teeWriter) WriteHeader(code int) {
	if tw.status == 0 {
		tw.status = code
	}
	tw.ResponseWriter.WriteHeader(code)
}

func (tw *teeWriter) Write(b []byte) (int, error) {
	if tw.status == 0 {
		tw.status = http.StatusOK
	}
	if tw.status >= 400 && tw.body.Len() < maxChecked {
		tw.body.Write(b[:min(len(b), maxChecked-tw.body.Len())])
	}
	return tw.ResponseWriter.Write(b)
}

func (tw *teeWriter) Unwrap() http.ResponseWriter { return tw.ResponseWriter }
