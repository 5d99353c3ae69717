package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// Share links (docs/api.md "Share links"). A link is made, listed and revoked through the
// API, by the file's owner (or an admin, with ?owner=); the link's URL, /s/<token>, needs
// no sign-in and serves the file through getFile, so Range, HEAD, ETag and the checksum
// headers work on it as on the API.

// linkPath is where a link's token is served.
const linkPath = "/s/"

func (s *Server) registerLinks(m Mux) {
	// A pattern cannot go on after {key...}, so the …/links routes are found by the file
	// routes' handlers below.
	m.Handle("POST /api/v1/files/{key...}", s.authed(s.postFileSub))
	m.Handle("GET /api/v1/links", s.authed(s.listLinksByQuery))
	m.Handle("DELETE /api/v1/links/{id}", s.authed(s.revokeLink))
	m.HandleFunc("GET "+linkPath+"{token}", s.linkDownload)
	s.registerUploadLinks(m)
}

// postFileSub is POST /api/v1/files/{key}/links; any other POST under a key is refused
// as the router would refuse it.
func (s *Server) postFileSub(w http.ResponseWriter, r *http.Request, u store.User) error {
	if key, ok := strings.CutSuffix(r.PathValue("key"), "/links"); ok {
		return s.createLink(w, r, u, key)
	}
	if key, ok := strings.CutSuffix(r.PathValue("key"), "/upload-links"); ok {
		return s.createUploadLink(w, r, u, key)
	}
	allowed := []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	return errs.New(httpkit.ErrMethod, map[string]any{"allowed": allowed},
		"%s is not allowed on %s; use %s (or POST to …/links to make a share link)", r.Method, r.URL.Path, strings.Join(allowed, " or "))
}

// getFileOrLinks is GET /api/v1/files/{key}: the file, or, when the caller has no file
// under the whole key and it ends in /links (or /versions), the links (or versions) of
// the file before it. A file of the caller's named …/links is served as before; its
// links are at GET /api/v1/links?key= (and the versions at GET /api/v1/file-versions?key=).
func (s *Server) getFileOrLinks(w http.ResponseWriter, r *http.Request, u store.User) error {
	err := s.getFile(w, r, u)
	if key, ok := strings.CutSuffix(r.PathValue("key"), "/links"); ok && errors.Is(err, staging.ErrNotFound) {
		return s.listLinks(w, r, u, key)
	}
	if key, ok := strings.CutSuffix(r.PathValue("key"), "/versions"); ok && errors.Is(err, staging.ErrNotFound) {
		return s.listVersions(w, r, u, key)
	}
	return err
}

func (s *Server) listLinksByQuery(w http.ResponseWriter, r *http.Request, u store.User) error {
	key := r.URL.Query().Get("key")
	if key == "" {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "key"}, "name the file whose links to list: ?key=files/…")
	}
	return s.listLinks(w, r, u, key)
}

func (s *Server) createLink(w http.ResponseWriter, r *http.Request, u store.User, key string) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	var in wire.NewFileLink
	if err := httpkit.DecodeJSON(w, r, &in); err != nil {
		return err
	}
	ttl, err := staging.ParseTTL(in.TTL)
	if err != nil {
		return err
	}
	l, token, err := s.svc.Staging.CreateLink(r.Context(), staging.NewLink{OwnerID: owner, Key: key, CreatedBy: u.ID, TTL: ttl, MaxDownloads: in.MaxDownloads})
	if err != nil {
		return err
	}
	out := linkOf(l)
	out.URL = s.linkURL(r, token)
	httpkit.WriteJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listLinks(w http.ResponseWriter, r *http.Request, u store.User, key string) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	list, err := s.svc.Staging.Links(r.Context(), owner, key)
	if err != nil {
		return err
	}
	out := wire.FileLinkList{Links: make([]wire.FileLink, 0, len(list))}
	for _, l := range list {
		out.Links = append(out.Links, linkOf(l))
	}
	out.Count = len(out.Links)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) revokeLink(w http.ResponseWriter, r *http.Request, u store.User) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	if err := s.svc.Staging.RevokeLink(r.Context(), owner, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func linkOf(l store.FileLink) wire.FileLink {
	return wire.FileLink{ID: l.ID, FileKey: l.Key, CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, MaxDownloads: l.MaxDownloads, Downloads: l.Downloads, BytesServed: l.BytesServed}
}

// linkURL is the address of a link's token for the client of r: under SKRIP_PUBLIC_URL
// when set, else on the host r reached, or the one a trusted proxy names
// (SKRIP_TRUSTED_PROXIES); another client's X-Forwarded-Host is ignored.
func (s *Server) linkURL(r *http.Request, token string) string {
	return s.ops.Front.URL(r, linkPath+token)
}

// linkDownload serves the file of the link whose token is in the path, to anyone who has
// it. It takes no key from the request: the link names the file. A GET reserves the
// bytes it will send on the link before anything is sent (staging.UseLink) and gives
// back what it did not send; a link past its bytes answers 410. A GET from the first byte
// also counts a download. Every link that does not work gets the same 404.
func (s *Server) linkDownload(w http.ResponseWriter, r *http.Request) {
	if err := s.serveLink(w, r); err != nil {
		httpkit.WriteError(w, r, s.log, err)
	}
}

func (s *Server) serveLink(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	h := w.Header()
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Robots-Tag", "noindex")
	l, f, err := s.svc.Staging.FindLink(ctx, r.PathValue("token"))
	if err != nil {
		return err
	}
	read := linkRead(r, f)
	if l, err = s.svc.Staging.UseLink(ctx, l, f, read); err != nil {
		return err
	}
	sw := &statusWriter{ResponseWriter: w}
	// Deferred, so that a read cut short (getFile aborts the connection) gives back the
	// bytes it did not send too.
	defer func() {
		if uerr := s.svc.Staging.ReturnLink(context.WithoutCancel(ctx), l, read, sw.n); uerr != nil {
			s.log.Warn("giving back a link's unsent bytes", "link", l.ID, "error", uerr)
		}
	}()
	// The file is the link's: the request's query (?owner=) and path name nothing.
	fr := r.Clone(ctx)
	fr.URL.RawQuery = ""
	fr.SetPathValue("key", l.Key)
	err = s.getFile(sw, fr, store.User{ID: l.OwnerID, Role: store.RoleUser})
	return linkError(err, f)
}

// linkError is err of getFile said without the file's key, which the link's holder is not
// told.
func linkError(err error, f store.File) error {
	var e *errs.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, staging.ErrNotFound):
		return staging.LinkGone()
	case errors.Is(err, httpkit.ErrRange) && errors.As(err, &e):
		return errs.New(httpkit.ErrRange, map[string]any{"range": e.Details["range"], "size_bytes": f.Size},
			"the range %q selects none of the file's %d bytes; ask for bytes=0-%d or a part of it", e.Details["range"], f.Size, max(f.Size-1, 0))
	case errors.Is(err, httpkit.ErrPrecondition) && errors.As(err, &e):
		return errs.New(httpkit.ErrPrecondition, map[string]any{"etag": e.Details["etag"]},
			"the file has changed: its ETag is now %s, not the one If-Match or If-Unmodified-Since names; read it again", e.Details["etag"])
	case errors.Is(err, staging.ErrUnavailable):
		return errs.New(staging.ErrUnavailable, nil, "the file store is not reachable; try again in a moment")
	}
	return err
}

// linkRead is what r will read of f through getFile, which hands it to
// http.ServeContent: HEAD reads nothing; a GET without a usable Range, or whose If-Range
// names another version, the whole file; else the bytes its ranges select, as
// ServeContent counts them (a range past the end selects nothing, an end past it is cut
// there, a suffix longer than the file is the file), or the whole file when they add up
// to more than it, which ServeContent then sends. A Range ServeContent refuses (416)
// reserves the whole file, all given back when nothing is sent. It is a download when
// it reads the first byte.
func linkRead(r *http.Request, f store.File) staging.LinkRead {
	if r.Method == http.MethodHead {
		return staging.LinkRead{Probe: true}
	}
	whole := staging.LinkRead{Bytes: f.Size, Download: true}
	spec, ok := strings.CutPrefix(r.Header.Get("Range"), "bytes=")
	if !ok {
		return whole
	}
	if ir := r.Header.Get("If-Range"); ir != "" && ir != `"`+strings.TrimPrefix(f.Checksum, "sha256:")+`"` {
		return whole
	}
	var total int64
	first, n := false, 0
	for _, ra := range strings.Split(spec, ",") {
		ra = strings.TrimSpace(ra)
		if ra == "" {
			continue
		}
		a, b, ok := strings.Cut(ra, "-")
		if !ok {
			return whole
		}
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		var start, end int64
		if a == "" {
			suffix, err := strconv.ParseInt(b, 10, 64)
			if err != nil || suffix < 0 {
				return whole
			}
			if suffix == 0 || f.Size == 0 {
				continue // usableRange drops it
			}
			start, end = f.Size-min(suffix, f.Size), f.Size-1
		} else {
			v, err := strconv.ParseInt(a, 10, 64)
			if err != nil || v < 0 {
				return whole
			}
			start, end = v, f.Size-1
			if b != "" {
				e, err := strconv.ParseInt(b, 10, 64)
				if err != nil || e < start {
					return whole
				}
				end = min(e, end)
			}
			if start >= f.Size {
				continue // no overlap: ServeContent skips it
			}
		}
		total += end - start + 1
		first = first || start == 0
		n++
	}
	switch {
	case n == 0:
		return staging.LinkRead{} // nothing selected: 416, nothing sent
	case total > f.Size:
		return whole
	}
	return staging.LinkRead{Bytes: total, Download: first}
}

// statusWriter records the status and the body bytes sent.
type statusWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
