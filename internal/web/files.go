package web

import (
	"net/http"
)

// filesPage lists the caller's staged files. Uploads (with progress) and deletes go from
// the page's script to the files API, which accepts the session cookie with the page's
// anti-forgery token; downloads are plain links to it.
func (h *Handler) filesPage(w http.ResponseWriter, r *http.Request, c *call) error {
	const pageSize = 100
	after := r.URL.Query().Get("after")
	list, more, err := h.Files.List(r.Context(), c.User, r.URL.Query().Get("prefix"), after, pageSize)
	if err != nil {
		return err
	}
	next := ""
	if more && len(list) > 0 {
		next = list[len(list)-1].Key
	}
	var total int64
	for _, f := range list {
		total += f.Size
	}
	h.render(w, r, http.StatusOK, "files", c, map[string]any{"Title": "Staged files", "Files": list, "Next": next,
		"Prefix": r.URL.Query().Get("prefix"), "Total": total})
	return nil
}
