package web

import (
	"net/http"
	"net/url"
)

// filesPage lists the caller's staged files, or for an admin with ?owner= another user's
// (keys are a per-owner namespace). Uploads (with progress) and deletes go from the page's
// script to the files API, which accepts the session cookie with the page's anti-forgery
// token; downloads are plain links to it.
func (h *Handler) filesPage(w http.ResponseWriter, r *http.Request, c *call) error {
	const pageSize = 100
	q := r.URL.Query()
	ownerID, err := h.staging.Namespace(r.Context(), c.User, q.Get("owner"))
	if err != nil {
		return err
	}
	// Links of another user's files carry ?owner=; the caller's own carry nothing.
	owner, ownerQuery := "", ""
	if ownerID != c.User.ID {
		owner, ownerQuery = q.Get("owner"), "?owner="+url.QueryEscape(ownerID)
	}
	list, more, err := h.staging.List(r.Context(), ownerID, q.Get("prefix"), q.Get("after"), pageSize)
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
	l := h.langOf(r)
	title := l.T("lists.files.title")
	if owner != "" {
		title = l.T("lists.files.title_of", "Owner", owner)
	}
	h.render(w, r, http.StatusOK, "files", c, map[string]any{"Title": title, "Files": list, "Next": next,
		"Prefix": q.Get("prefix"), "Total": total, "Owner": owner, "OwnerID": ownerID, "OwnerQuery": ownerQuery})
	return nil
}
