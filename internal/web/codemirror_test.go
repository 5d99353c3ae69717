package web

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CodeMirror is served from its installed directory: its regular .js and .css files,
// through a symlink inside it too, and nothing else: no other file types, no listing, no
// path out of it (by .. or by a symlink); everything 404 when it is not installed.
func TestServeCodeMirror(t *testing.T) {
	dir := t.TempDir()
	cm := filepath.Join(dir, "codemirror")
	for name, body := range map[string]string{"lib/codemirror.js": "/* cm */", "lib/codemirror.css": ".CodeMirror{}",
		"mode/python/python.js": "/* py */", "lib/notes.txt": "no"} {
		os.MkdirAll(filepath.Dir(filepath.Join(cm, name)), 0o755)
		if err := os.WriteFile(filepath.Join(cm, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "secret.js"), []byte("secret"), 0o644)
	os.Symlink("lib/codemirror.js", filepath.Join(cm, "codemirror.js"))
	os.Symlink("../secret.js", filepath.Join(cm, "out.js"))

	serve := func(t *testing.T, cmDir string) *http.ServeMux {
		h, err := New(Deps{CodeMirrorDir: cmDir, Log: slog.New(slog.DiscardHandler), Lang: "sv"})
		if err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		h.Register(mux)
		return mux
	}
	get := func(mux *http.ServeMux, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		return w
	}

	mux := serve(t, cm)
	for path, want := range map[string]string{"/static/vendor/codemirror/lib/codemirror.js": "/* cm */",
		"/static/vendor/codemirror/codemirror.js": "/* cm */", "/static/vendor/codemirror/lib/codemirror.css": ".CodeMirror{}",
		"/static/vendor/codemirror/mode/python/python.js": "/* py */"} {
		w := get(mux, path)
		if w.Code != 200 || w.Body.String() != want {
			t.Errorf("%s: %d %q, want 200 %q", path, w.Code, w.Body.String(), want)
		}
		if ct := w.Header().Get("Content-Type"); !strings.Contains(ct, "javascript") && !strings.Contains(ct, "css") {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
	}
	for _, path := range []string{"/static/vendor/codemirror/lib/notes.txt", "/static/vendor/codemirror/lib/",
		"/static/vendor/codemirror/", "/static/vendor/codemirror/out.js", "/static/vendor/codemirror/../secret.js",
		"/static/vendor/codemirror/lib/%2e%2e/%2e%2e/secret.js", "/static/vendor/codemirror/nope.js"} {
		// ServeMux answers an unclean path with a redirect to its clean form, which
		// is then refused.
		if w := get(mux, path); (w.Code != 404 && w.Code/100 != 3) || w.Body.String() == "secret" || w.Body.String() == "no" {
			t.Errorf("%s: %d %q, want 404", path, w.Code, w.Body.String())
		}
	}

	absent := serve(t, filepath.Join(dir, "not-installed"))
	if w := get(absent, "/static/vendor/codemirror/lib/codemirror.js"); w.Code != 404 {
		t.Errorf("not installed: %d, want 404", w.Code)
	}
}
