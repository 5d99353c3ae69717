package httpkit

import (
	"net/http"
	"slices"
	"strings"
)

// CORS lets pages of other web origins call some of the API from the browser with an
// API token (SKRIP_CORS_ORIGINS): it answers their preflights and marks the answers they
// may read. It never allows credentials, so the web's sign-in cookie does not ride along
// and a page elsewhere can only do what its own token lets it.
type CORS struct {
	origins []string // lower case; "*" is any
	paths   []string // path prefixes it applies to
}

// corsHeaders are the request headers a page of another origin may send: the token, the
// files API's and tus's own.
const corsHeaders = "Authorization, Content-Type, If-Match, If-None-Match, Tus-Resumable, Upload-Length, Upload-Offset, Upload-Metadata, Upload-Defer-Length, Upload-Concat, X-HTTP-Method-Override, Range, If-Range"

// corsExposed are the answer headers such a page may read.
const corsExposed = "Location, ETag, X-Checksum, X-File-Key, X-Request-Id, Content-Disposition, Retry-After, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Upload-Offset, Upload-Length, Upload-Expires, Upload-Metadata"

// NewCORS allows origins (none: CORS does nothing) on the paths under prefixes.
func NewCORS(origins []string, prefixes ...string) *CORS {
	return &CORS{origins: origins, paths: prefixes}
}

func (c *CORS) allowed(origin string) bool {
	return slices.Contains(c.origins, "*") || slices.Contains(c.origins, strings.ToLower(origin))
}

func (c *CORS) applies(path string) bool {
	for _, p := range c.paths {
		if path == strings.TrimSuffix(p, "/") || strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// Wrap returns next with CORS in front of it.
func (c *CORS) Wrap(next http.Handler) http.Handler {
	if len(c.origins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !c.applies(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Add("Vary", "Origin")
		if !c.allowed(origin) {
			next.ServeHTTP(w, r) // no CORS headers: the browser keeps the answer from the page
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
			h.Set("Access-Control-Allow-Headers", corsHeaders)
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposed)
		next.ServeHTTP(w, r)
	})
}
