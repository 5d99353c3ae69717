package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// registerUploads adds resumable uploads (docs/api.md "Resumable uploads"): the tus
// protocol's requests go to package resumable once the caller is authenticated, and
// GET of an upload answers with where it stands as JSON.
func (s *Server) registerUploads(m Mux) {
	tus := s.svc.Uploads
	if tus == nil {
		return
	}
	protocol := s.authed(func(w http.ResponseWriter, r *http.Request, u store.User) error {
		tus.ServeHTTP(w, r)
		return nil
	})
	m.Handle("POST /api/v1/uploads/{$}", protocol)
	m.Handle("HEAD /api/v1/uploads/{id}", protocol)
	m.Handle("PATCH /api/v1/uploads/{id}", protocol)
	m.Handle("DELETE /api/v1/uploads/{id}", protocol)
	// Discovery needs no credential: it tells only the protocol's version, extensions
	// and the size limit.
	m.Handle("OPTIONS /api/v1/uploads/", tus)
	m.Handle("GET /api/v1/uploads/{id}", s.authed(s.getUpload))
}

// getUpload is where the caller's upload stands, and the file it made once finished.
func (s *Server) getUpload(w http.ResponseWriter, r *http.Request, u store.User) error {
	up, err := s.svc.Staging.Upload(r.Context(), u.ID, r.PathValue("id"))
	if err != nil {
		return err
	}
	out := wire.Upload{UploadID: up.ID, Key: up.Key, Offset: up.Received, SizeBytes: up.Size, CreatedAt: up.CreatedAt,
		ExpiresAt: up.ExpiresAt, FinishedAt: up.FinishedAt}
	if up.FinishedAt != nil {
		if f, err := s.svc.Staging.Get(r.Context(), u.ID, up.Key); err == nil && f.CreatedAt.Equal(*up.FinishedAt) {
			fi := fileOf(f)
			out.File = &fi
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}
