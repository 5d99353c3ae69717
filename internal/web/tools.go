package web

import (
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
)

// runWait is how long a form that starts a run waits for it before showing the run page,
// which then follows the run live.
const runWait = 5 * time.Second

// toolEntry is one tool in the catalogue.
type toolEntry struct {
	store.Tool
	Draft bool
	Mine  bool
}

func (h *Handler) catalogue(w http.ResponseWriter, r *http.Request, c *call) error {
	tools, err := h.Catalog.List(r.Context(), c.User)
	if err != nil {
		return err
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	var list []toolEntry
	for _, t := range tools {
		if q != "" && !matches(t, q) {
			continue
		}
		list = append(list, toolEntry{Tool: t, Draft: t.PublishedVersionID == "", Mine: catalog.Owns(c.User, t)})
	}
	h.render(w, r, http.StatusOK, "catalogue", c, map[string]any{"Title": "Tools", "Tools": list, "Query": q, "Count": len(tools)})
	return nil
}

// matches reports whether every word of q is in t's title, slug or description,
// ignoring case.
func matches(t store.Tool, q string) bool {
	hay := strings.ToLower(t.Title + " " + t.Slug + " " + t.Description)
	for _, w := range strings.Fields(strings.ToLower(q)) {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

// sessionFiles is what the page says about a session's files.
type sessionFiles struct {
	Files   []fileEntry
	Expires time.Time
}

type fileEntry struct {
	Name  string
	Bytes int64
}

func (h *Handler) sessionFiles(r *http.Request, k store.SessionKey) (*sessionFiles, error) {
	fs, set, err := h.Sessions.Files(r.Context(), k)
	if err != nil || set.SetID == "" {
		return nil, err
	}
	out := &sessionFiles{Expires: set.LastAccessedAt.Add(h.Sessions.TTL())}
	for _, f := range fs {
		out.Files = append(out.Files, fileEntry{f.Name, f.Bytes})
	}
	return out, nil
}

// toolData is what the tool page shows, with err (from a refused upload) beside the form.
func (h *Handler) toolData(r *http.Request, c *call, t store.Tool) (map[string]any, error) {
	runs, err := h.Store.ListRuns(r.Context(), c.User.ID, t.ID, "", 10)
	if err != nil {
		return nil, err
	}
	var recent []store.Run
	for _, rn := range runs {
		if rn.Context == "default" {
			recent = append(recent, rn)
		}
	}
	sf, err := h.sessionFiles(r, store.SessionKey{ToolID: t.ID, UserID: c.User.ID, Context: "default"})
	if err != nil {
		return nil, err
	}
	return map[string]any{"Title": t.Title, "Tool": t, "Mine": catalog.Owns(c.User, t), "Runs": recent,
		"SessionFiles": sf, "Limits": h.limits()}, nil
}

// limits are the upload caps, for the page's courtesy check and its wording.
func (h *Handler) limits() upload.Limits { return h.Uploads.WithDefaults() }

func (h *Handler) toolPage(w http.ResponseWriter, r *http.Request, c *call) error {
	t, err := h.Catalog.Visible(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	data, err := h.toolData(r, c, t)
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "tool", c, data)
	return nil
}

// readUpload reads a run's files into a fresh input dir and checks the form's
// anti-forgery token, which comes as a field of the multipart body. Nothing is kept when
// it fails.
func (h *Handler) readUpload(r *http.Request, c *call) (string, upload.Form, error) {
	dir, err := h.Runs.NewInputDir()
	if err != nil {
		return "", upload.Form{}, err
	}
	form, err := upload.ReadRequest(r, dir, h.limits(), upload.Options{FileField: "files", TextFields: []string{"csrf"}})
	if err == nil && !h.checkCSRF(c, r, form.Fields["csrf"]) {
		err = errForgery
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", upload.Form{}, err
	}
	return dir, form, nil
}

func (h *Handler) startRun(w http.ResponseWriter, r *http.Request, c *call) error {
	t, v, err := h.Catalog.Published(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	dir, form, err := h.readUpload(r, c)
	var rn store.Run
	if err == nil {
		rn, err = h.Steps.Initial(r.Context(), run.Initial{Tool: t, Version: v, User: c.User, Context: "default", Dir: dir, Form: form})
	}
	if err != nil {
		return h.refuseUpload(w, r, c, t, err)
	}
	h.Runs.Wait(r.Context(), rn.ID, runWait)
	redirect(w, r, "/runs/"+rn.ID)
	return nil
}

// shownToUser reports whether a refusal with status is the user's to read next to the
// form (their mistake, or the server at capacity or out of space) rather than an error
// page.
func shownToUser(status int) bool {
	return status < 500 || status == http.StatusServiceUnavailable || status == http.StatusInsufficientStorage
}

// refuseUpload shows the tool page again with the server's reason next to the form, and
// the status the API gives for it.
func (h *Handler) refuseUpload(w http.ResponseWriter, r *http.Request, c *call, t store.Tool, cause error) error {
	status, _ := h.statusOf(cause)
	if !shownToUser(status) {
		return cause
	}
	data, err := h.toolData(r, c, t)
	if err != nil {
		return err
	}
	data["Error"] = h.message(cause)
	h.render(w, r, status, "tool", c, data)
	return nil
}

func (h *Handler) clearSessionFiles(w http.ResponseWriter, r *http.Request, c *call) error {
	t, err := h.Catalog.Visible(r.Context(), c.User, r.PathValue("tool"))
	if err != nil {
		return err
	}
	if _, _, err := h.Sessions.Clear(r.Context(), store.SessionKey{ToolID: t.ID, UserID: c.User.ID, Context: "default"}); err != nil {
		return err
	}
	redirect(w, r, "/tools/"+t.Slug)
	return nil
}
