package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/store"
)

// The editor's co-authors (a tool's maintainers) and its edit lock: the "Medförfattare"
// section lists, adds and removes them; the lock notice says who else has the editor
// open and since when, and static/editlock.js keeps the lock alive while the page is
// open. The rules are the catalog's (catalog/maintainers.go).

func (h *Handler) registerMaintainers(mux *http.ServeMux) {
	mux.Handle("POST /editor/{tool}/maintainers", h.page(h.addMaintainer))
	mux.Handle("POST /editor/{tool}/maintainers/remove", h.page(h.removeMaintainer))
	mux.Handle("POST /editor/{tool}/lock", h.page(h.editLockBeat))
	mux.Handle("POST /editor/{tool}/lock/take", h.page(h.takeEditLock))
}

// maintNote is what the co-author section says after a change: who was added or
// removed, or why a change was refused (with the name as typed, to try again).
type maintNote struct {
	Added, Removed string
	Error, Typed   string
}

// maintBox is the editor's co-author section.
type maintBox struct {
	Slug, CSRF, Version string
	Me                  string // the caller's id
	List                []maintRow
	Note                maintNote
}

type maintRow struct {
	store.Maintainer
	Author bool
}

// lockBox is the editor's lock notice.
type lockBox struct {
	Slug, CSRF, Version string
	Mine                bool
	Name                string
	Since               time.Time
	SinceText           string // HH:MM UTC; the page's script writes the browser's time
	Taken               bool   // the caller just took the lock over
}

// addMaintainerParts adds the co-author section and the lock notice of tool t to the
// editor's data, claiming the lock for c when it is free (opening the editor is editing).
func (h *Handler) addMaintainerParts(r *http.Request, c *call, t store.Tool, version string, data map[string]any, note *maintNote) error {
	_, list, err := h.catalog.Maintainers(r.Context(), c.User, t.Slug)
	if err != nil {
		return err
	}
	box := &maintBox{Slug: t.Slug, CSRF: c.CSRF, Version: version, Me: c.User.ID}
	for _, m := range list {
		box.List = append(box.List, maintRow{Maintainer: m, Author: m.UserID == t.AuthorID})
	}
	if note != nil {
		box.Note = *note
	} else if q := r.URL.Query(); q.Get("maint") != "" {
		switch q.Get("maint") {
		case "added":
			box.Note.Added = q.Get("who")
		case "removed":
			box.Note.Removed = q.Get("who")
		}
	}
	data["Maintainers"] = box
	l, err := h.catalog.ClaimEditLock(r.Context(), c.User, t, false)
	if err != nil {
		return err
	}
	data["EditLock"] = lockOf(c, t, version, l, r.URL.Query().Get("lock") == "taken")
	return nil
}

func lockOf(c *call, t store.Tool, version string, l catalog.EditLock, taken bool) *lockBox {
	return &lockBox{Slug: t.Slug, CSRF: c.CSRF, Version: version, Mine: l.Mine, Name: l.Name, Since: l.Since,
		SinceText: l.Since.UTC().Format("15:04") + " UTC", Taken: taken && l.Mine}
}

// editorBack is the editor of tool slug at version (if any), with query q, at the
// co-author section's anchor when anchor is set.
func editorBack(slug, version string, q url.Values, anchor string) string {
	if version != "" {
		q.Set("version", version)
	}
	u := "/editor/" + url.PathEscape(slug)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	if anchor != "" {
		u += "#" + anchor
	}
	return u
}

func (h *Handler) addMaintainer(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	who, version := r.PostFormValue("user"), r.PostFormValue("version")
	t, m, added, err := h.catalog.AddMaintainer(r.Context(), c.User, r.PathValue("tool"), who)
	if err != nil {
		if status, _ := h.statusOf(w, err); status < 500 && t.ID != "" {
			return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: version, Status: status,
				Maint: &maintNote{Error: h.message(r, err), Typed: who}})
		}
		return err
	}
	if added {
		h.accounts.Audit(r.Context(), h.actor(r, c), account.AuditMaintainerAdded, t.Slug, map[string]any{"tool": t.ID, "user": m.Name, "user_id": m.UserID})
	}
	redirect(w, r, editorBack(t.Slug, version, url.Values{"maint": {"added"}, "who": {m.Name}}, "maintainers-h"))
	return nil
}

func (h *Handler) removeMaintainer(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	version := r.PostFormValue("version")
	t, m, err := h.catalog.RemoveMaintainer(r.Context(), c.User, r.PathValue("tool"), r.PostFormValue("user"))
	if err != nil {
		if status, _ := h.statusOf(w, err); status < 500 && t.ID != "" {
			return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: version, Status: status, Maint: &maintNote{Error: h.message(r, err)}})
		}
		return err
	}
	h.accounts.Audit(r.Context(), h.actor(r, c), account.AuditMaintainerRemoved, t.Slug, map[string]any{"tool": t.ID, "user": m.Name, "user_id": m.UserID})
	if m.UserID == c.User.ID && c.User.Role != store.RoleAdmin {
		// They left the tool: its editor is no longer theirs.
		redirect(w, r, "/editor")
		return nil
	}
	redirect(w, r, editorBack(t.Slug, version, url.Values{"maint": {"removed"}, "who": {m.Name}}, "maintainers-h"))
	return nil
}

// lockAnswer is what the editor's script gets for a heartbeat.
type lockAnswer struct {
	Mine  bool      `json:"mine"`
	Name  string    `json:"name"`
	Since time.Time `json:"since"`
}

// editLockBeat is the editor page's heartbeat (static/editlock.js, every minute): it
// keeps the caller's lock, or takes a free one, and says who holds it.
func (h *Handler) editLockBeat(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	t, err := h.catalog.Owned(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	l, err := h.catalog.ClaimEditLock(r.Context(), c.User, t, false)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(lockAnswer{Mine: l.Mine, Name: l.Name, Since: l.Since})
}

func (h *Handler) takeEditLock(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	t, err := h.catalog.Owned(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	if _, err := h.catalog.ClaimEditLock(r.Context(), c.User, t, true); err != nil {
		return err
	}
	redirect(w, r, editorBack(t.Slug, r.PostFormValue("version"), url.Values{"lock": {"taken"}}, ""))
	return nil
}
