package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// File versions (docs/api.md "Versions"). GET /api/v1/files/{key}/versions lists a file's
// versions, the current one first; ?version=<id> on GET and HEAD of the file reads one,
// with Range, ETag and the checksum headers as on the current one. A file whose own key
// ends in /versions is served as before; its versions are at GET
// /api/v1/file-versions?key=.

func (s *Server) registerVersions(m Mux) {
	// GET /api/v1/files/{key}/versions is found by getFileOrLinks: a pattern cannot go
	// on after {key...}.
	m.Handle("GET /api/v1/file-versions", s.authed(s.listVersionsByQuery))
}

// openFile opens the file the request names, in ownerID's files: the version ?version=
// names, or the current one.
func (s *Server) openFile(r *http.Request, ownerID string) (*staging.Reader, error) {
	if id := r.URL.Query().Get("version"); id != "" {
		return s.svc.Staging.OpenVersion(r.Context(), ownerID, r.PathValue("key"), id)
	}
	return s.svc.Staging.Open(r.Context(), ownerID, r.PathValue("key"))
}

func (s *Server) listVersionsByQuery(w http.ResponseWriter, r *http.Request, u store.User) error {
	key := r.URL.Query().Get("key")
	if key == "" {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "key"}, "name the file whose versions to list: ?key=files/…")
	}
	return s.listVersions(w, r, u, key)
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request, u store.User, key string) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	f, kept, err := s.svc.Staging.Versions(r.Context(), owner, key)
	if err != nil {
		return err
	}
	out := wire.FileVersionList{FileKey: f.Key, Versions: make([]wire.FileVersion, 0, len(kept)+1)}
	out.Versions = append(out.Versions, wire.FileVersion{VersionID: f.VersionID, Current: true, FileKey: f.Key, Name: f.OriginalName,
		SizeBytes: f.Size, ContentType: f.ContentType, Checksum: f.Checksum, CreatedAt: f.CreatedAt})
	for _, v := range kept {
		out.Versions = append(out.Versions, wire.FileVersion{VersionID: v.ID, FileKey: v.Key, Name: v.OriginalName, SizeBytes: v.Size,
			ContentType: v.ContentType, Checksum: v.Checksum, CreatedAt: v.CreatedAt, ReplacedAt: &v.ReplacedAt})
	}
	out.Count = len(out.Versions)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}
