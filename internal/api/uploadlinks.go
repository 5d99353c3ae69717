package api

import (
	"net/http"
	"strconv"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// Upload links (docs/api.md "Upload links"): made, listed and revoked through the API by
// the owner of the key (or an admin, with ?owner=); the link's URL, /u/<token>, takes
// one PUT of a file without a token. A browser that opens the URL gets the web's drop
// page, which PUTs the file there.

// UploadLinkPath is where an upload link's token is served.
const UploadLinkPath = "/u/"

func (s *Server) registerUploadLinks(m Mux) {
	// POST /api/v1/files/{key}/upload-links is found by postFileSub.
	m.Handle("GET /api/v1/upload-links", s.authed(s.listUploadLinks))
	m.Handle("DELETE /api/v1/upload-links/{id}", s.authed(s.revokeUploadLink))
	m.HandleFunc("PUT "+UploadLinkPath+"{token}", s.uploadByLink)
}

func (s *Server) createUploadLink(w http.ResponseWriter, r *http.Request, u store.User, key string) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	var in wire.NewUploadLink
	if err := httpkit.DecodeJSON(w, r, &in); err != nil {
		return err
	}
	ttl, err := staging.ParseTTL(in.TTL)
	if err != nil {
		return err
	}
	l, token, err := s.svc.Staging.CreateUploadLink(r.Context(), staging.NewUploadLink{OwnerID: owner, Key: key, CreatedBy: u.ID, TTL: ttl,
		MaxBytes: in.MaxBytes, ContentTypes: in.ContentTypes, Uses: in.Uses})
	if err != nil {
		return err
	}
	out := uploadLinkOf(l)
	out.URL = s.ops.Front.URL(r, UploadLinkPath+token)
	httpkit.WriteJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listUploadLinks(w http.ResponseWriter, r *http.Request, u store.User) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	list, err := s.svc.Staging.UploadLinks(r.Context(), owner)
	if err != nil {
		return err
	}
	out := wire.UploadLinkList{UploadLinks: make([]wire.UploadLink, 0, len(list))}
	for _, l := range list {
		out.UploadLinks = append(out.UploadLinks, uploadLinkOf(l))
	}
	out.Count = len(out.UploadLinks)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) revokeUploadLink(w http.ResponseWriter, r *http.Request, u store.User) error {
	owner, err := s.fileOwner(r, u)
	if err != nil {
		return err
	}
	if err := s.svc.Staging.RevokeUploadLink(r.Context(), owner, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func uploadLinkOf(l store.UploadLink) wire.UploadLink {
	return wire.UploadLink{ID: l.ID, FileKey: l.Key, CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, MaxBytes: l.MaxBytes,
		ContentTypes: l.ContentTypes, Uses: l.Uses, Used: l.Used}
}

// uploadByLink stores the body of a PUT to an upload link's URL as the link's file, for
// whoever holds the link. The answer names the file's name, size and checksum, never its
// owner or key.
func (s *Server) uploadByLink(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Robots-Tag", "noindex")
	size := int64(staging.NoSize)
	if v := r.Header.Get("Content-Length"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			size = n
		}
	}
	f, err := s.svc.Staging.ReceiveByLink(r.Context(), r.PathValue("token"),
		staging.LinkUpload{Name: r.URL.Query().Get("filename"), ContentType: r.Header.Get("Content-Type"), Size: size}, r.Body)
	if err != nil {
		httpkit.WriteError(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, struct {
		Name      string `json:"name"`
		SizeBytes int64  `json:"size_bytes"`
		Checksum  string `json:"checksum"`
	}{f.OriginalName, f.Size, f.Checksum})
}
