package web

import (
	"io/fs"
	"net/http"
	"strconv"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
)

// The frame's rules that are not one page's: who sees the staging area in the menu, and
// what an error page is titled.

// showFiles reports whether the menu links the staging area ("Filarkiv (API)") for c.
// It is for programs and agents: authors and admins, who write and test them, see it;
// another user sees it only while they keep staged files (uploaded through the API), so
// a teacher who never used the API is not offered a "files" page to confuse with a
// run's downloads.
func (h *Handler) showFiles(r *http.Request, c *call) bool {
	if c == nil {
		return false
	}
	if c.IsAuthor() || c.IsAdmin() || r.URL.Path == "/files" {
		return true
	}
	files, _, err := h.staging.List(r.Context(), c.User.ID, "", "", 1)
	if err != nil {
		// The menu is no reason to fail the page; the log has the error.
		httpkit.LogInternal(r, h.log, err)
		return false
	}
	return len(files) > 0
}

// favicon answers /favicon.ico, which browsers ask for wherever a page names no icon
// (the layout names static/favicon.svg): the same icon as an ICO.
func (h *Handler) favicon(w http.ResponseWriter, r *http.Request) {
	b, err := fs.ReadFile(assets, "static/favicon.ico")
	if err != nil {
		h.renderFailed(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/x-icon")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Write(b)
}

// statusTitle is the title of an error page with status in l: the catalogue's
// ("lists.error.status_403"), else net/http's.
func (l *Lang) statusTitle(status int) string {
	if id := "lists.error.status_" + strconv.Itoa(status); l.Has(id) {
		return l.T(id)
	}
	return http.StatusText(status)
}

// historyRow is one run of the history page, with the files it left to download.
type historyRow struct {
	store.Run
	Tool      string // the tool's title; "" when the user no longer sees it
	Artifacts []artifact
}
