package web

import (
	"errors"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/skrip-dev/skrip/internal/staging"
)

// dropPage is an upload link's address opened in a browser (docs/api.md "Upload
// links"): a page in the visitor's language that sends one file to the link, by PUT to
// the same address. It needs no sign-in, and says nothing of the link's owner or key but
// the file's name.
func (h *Handler) dropPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Robots-Tag", "noindex")
	l := h.langOf(r)
	link, err := h.staging.FindUploadLink(r.Context(), r.PathValue("token"))
	if errors.Is(err, staging.ErrLinkNotFound) {
		h.render(w, r, http.StatusNotFound, "drop", nil, map[string]any{"Title": l.T("drop.gone_title"), "Gone": true})
		return
	}
	if err != nil {
		h.fail(w, r, nil, err)
		return
	}
	var accept []string
	for _, t := range link.ContentTypes {
		accept = append(accept, t)
		if exts, _ := mime.ExtensionsByType(t); len(exts) > 0 {
			accept = append(accept, exts[0])
		}
	}
	left := max(link.Uses-link.Used, 0)
	if left == 0 {
		h.render(w, r, http.StatusGone, "drop", nil, map[string]any{"Title": l.T("drop.gone_title"), "Gone": true})
		return
	}
	h.render(w, r, http.StatusOK, "drop", nil, map[string]any{"Title": l.T("drop.title"), "Name": path.Base(link.Key),
		"MaxBytes": link.MaxBytes, "Types": strings.Join(link.ContentTypes, ", "), "Accept": strings.Join(accept, ","),
		"Left": left, "ExpiresAt": link.ExpiresAt})
}
