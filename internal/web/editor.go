package web

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// starterSource is what a new tool's editor starts with.
const starterSource = `from skrip_toolkit import ToolUserError


def run_tool(input_dir, output_dir):
    """Called with the uploaded files in input_dir; write downloads to output_dir."""
    names = sorted(p.name for p in __import__("pathlib").Path(input_dir).iterdir())
    if not names:
        raise ToolUserError("Upload at least one file.")
    return {"outputs": [{"kind": "notice", "level": "info", "message": "You uploaded: " + ", ".join(names)}]}
`

func needAuthor(c *call) error {
	if !c.IsAuthor() {
		return errs.New(catalog.ErrForbidden, map[string]any{"role": c.User.Role}, "the editor is for authors; you are %s", c.User.Role)
	}
	return nil
}

func (h *Handler) editorIndex(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	return h.showEditorIndex(w, r, c, http.StatusOK, nil, catalog.NewTool{Source: starterSource})
}

func (h *Handler) showEditorIndex(w http.ResponseWriter, r *http.Request, c *call, status int, cause error, n catalog.NewTool) error {
	tools, err := h.Catalog.List(r.Context(), c.User)
	if err != nil {
		return err
	}
	var mine []store.Tool
	for _, t := range tools {
		if catalog.Owns(c.User, t) {
			mine = append(mine, t)
		}
	}
	data := map[string]any{"Title": "Editor", "Tools": mine, "New": n}
	if cause != nil {
		data["Error"] = h.message(cause)
	}
	h.render(w, r, status, "editor_index", c, data)
	return nil
}

func (h *Handler) createTool(w http.ResponseWriter, r *http.Request, c *call) error {
	n := catalog.NewTool{Slug: r.PostFormValue("slug"), Title: r.PostFormValue("title"), Description: r.PostFormValue("description"), Source: r.PostFormValue("source")}
	t, _, err := h.Catalog.Create(r.Context(), c.User, n)
	if err != nil {
		if status, _ := h.statusOf(err); status < 500 && !errors.Is(err, catalog.ErrForbidden) {
			return h.showEditorIndex(w, r, c, status, err, n)
		}
		return err
	}
	redirect(w, r, "/editor/"+t.Slug)
	return nil
}

func (h *Handler) editor(w http.ResponseWriter, r *http.Request, c *call) error {
	q := r.URL.Query()
	return h.showEditor(w, r, c, editorView{Ref: r.PathValue("tool"), VersionID: q.Get("version"), RunID: q.Get("run"), Status: http.StatusOK})
}

// editorView says what the editor shows.
type editorView struct {
	Ref       string // the tool
	VersionID string // empty: the newest
	RunID     string // the sandbox run beside it; empty: the latest of that version
	Status    int
	SourceErr string  // why the source could not be saved
	Source    *string // what the author typed, when it could not be saved
	RunErr    string  // why a sandbox run or action was refused
}

// showEditor renders the editor of a tool's version beside its sandbox run and session.
func (h *Handler) showEditor(w http.ResponseWriter, r *http.Request, c *call, ev editorView) error {
	ref, versionID, runID, status, sourceErr, runErr := ev.Ref, ev.VersionID, ev.RunID, ev.Status, ev.SourceErr, ev.RunErr
	if err := needAuthor(c); err != nil {
		return err
	}
	t, err := h.Catalog.Owned(r.Context(), c.User, ref)
	if err != nil {
		return err
	}
	versions, err := h.Catalog.Versions(r.Context(), c.User, t)
	if err != nil {
		return err
	}
	v := versions[0]
	for _, x := range versions {
		if x.ID == versionID {
			v = x
		}
	}
	sctx := run.SandboxContext(v.ID)
	k := store.SessionKey{ToolID: t.ID, UserID: c.User.ID, Context: sctx}
	data := map[string]any{"Title": "Editor: " + t.Title, "Tool": t, "Version": v, "Versions": versions,
		"Limits": h.limits(), "SourceError": sourceErr, "Source": v.Source}
	if ev.Source != nil {
		data["Source"] = *ev.Source
	}

	sess, err := h.Sessions.Get(r.Context(), k)
	switch {
	case errors.Is(err, session.ErrNoSession):
	case err != nil:
		return err
	default:
		var state any
		json.Unmarshal([]byte(sess.State), &state)
		data["Session"] = map[string]any{"Rev": sess.StateRev, "State": indent(state), "Updated": sess.UpdatedAt}
		if runID == "" {
			runID = sess.LatestRunID
		}
	}
	if runID == "" {
		runs, err := h.Store.ListRuns(r.Context(), c.User.ID, t.ID, "", 20)
		if err != nil {
			return err
		}
		for _, rn := range runs {
			if rn.Context == sctx {
				runID = rn.ID
				break
			}
		}
	}
	if runID != "" {
		rn, err := h.Steps.Owned(r.Context(), c.User, runID)
		if err == nil && rn.Context == sctx {
			res, err := h.result(r, c, t, rn)
			if err != nil {
				return err
			}
			res.Error = runErr
			if runErr == conflictMessage {
				res.Rev = ""
			}
			data["Result"] = res
		}
	}
	sf, err := h.sessionFiles(r, k)
	if err != nil {
		return err
	}
	data["SessionFiles"] = sf
	if runErr != "" && data["Result"] == nil {
		data["RunError"] = runErr
	}
	h.render(w, r, status, "editor", c, data)
	return nil
}

func (h *Handler) saveVersion(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	src := r.PostFormValue("source")
	v, err := h.Catalog.AddVersion(r.Context(), c.User, r.PathValue("tool"), catalog.NewVersion{Source: src})
	if err == nil && r.PostFormValue("publish") != "" {
		_, err = h.Catalog.Publish(r.Context(), c.User, v.ID)
	}
	if err != nil {
		status, _ := h.statusOf(err)
		if status >= 500 || errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrForbidden) {
			return err
		}
		return h.showEditor(w, r, c, editorView{Ref: r.PathValue("tool"), VersionID: r.PostFormValue("version"), Status: status,
			SourceErr: h.message(err), Source: &src})
	}
	redirect(w, r, "/editor/"+r.PathValue("tool")+"?version="+v.ID)
	return nil
}

func (h *Handler) publish(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	t, err := h.Catalog.Publish(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	redirect(w, r, "/editor/"+t.Slug+"?version="+r.PathValue("version"))
	return nil
}

// sandboxRun runs a version in its editor sandbox with the uploaded files, like a
// production run but in context sandbox:{version_id} with the sandbox's wall time.
func (h *Handler) sandboxRun(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAuthor(c); err != nil {
		return err
	}
	v, t, err := h.Catalog.OwnedVersion(r.Context(), c.User, r.PathValue("version"))
	if err != nil {
		return err
	}
	dir, form, err := h.readUpload(r, c)
	var rn store.Run
	if err == nil {
		rn, err = h.Steps.Initial(r.Context(), run.Initial{Tool: t, Version: v, User: c.User, Context: run.SandboxContext(v.ID),
			Dir: dir, Form: form, WallTime: h.SandboxTimeout})
	}
	if err != nil {
		status, _ := h.statusOf(err)
		if !shownToUser(status) {
			return err
		}
		return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: v.ID, Status: status, RunErr: h.message(err)})
	}
	h.Runs.Wait(r.Context(), rn.ID, runWait)
	redirect(w, r, "/editor/"+t.Slug+"?version="+v.ID+"&run="+rn.ID)
	return nil
}
