package web

import (
	"context"
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
)

// filesPage lists the caller's staged files, or for an admin with ?owner= another user's
// (keys are a per-owner namespace). Uploads (with progress) and deletes go from the page's
// script to the files API, which accepts the session cookie with the page's anti-forgery
// token; downloads are plain links to it, a file's previous versions (SKRIP_FILES_VERSIONS)
// too.
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
	list, next, err := h.staging.List(r.Context(), ownerID, q.Get("prefix"), q.Get("cursor"), pageSize)
	if err != nil {
		return err
	}
	versions, err := h.versionLinks(r.Context(), ownerID, list, ownerID != c.User.ID)
	if err != nil {
		return err
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
		"Prefix": q.Get("prefix"), "Total": total, "Owner": owner, "OwnerID": ownerID, "OwnerQuery": ownerQuery,
		"Versions": versions})
	return nil
}

// versionLink is a previous version of a file on the page, with the address that
// downloads it.
type versionLink struct {
	store.FileVersion
	URL string
}

// versionLinks returns the previous versions of the files on the page, by key, the
// newest first; their links name the owner when it is not the caller.
func (h *Handler) versionLinks(ctx context.Context, ownerID string, list []store.File, other bool) (map[string][]versionLink, error) {
	kept, err := h.staging.VersionsIn(ctx, ownerID, list)
	if err != nil {
		return nil, err
	}
	out := map[string][]versionLink{}
	for key, vs := range kept {
		for _, v := range vs {
			q := url.Values{"version": {v.ID}}
			if other {
				q.Set("owner", ownerID)
			}
			out[key] = append(out[key], versionLink{FileVersion: v, URL: httpkit.FileURL(key) + "?" + q.Encode()})
		}
	}
	return out, nil
}
