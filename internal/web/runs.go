package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// conflictMessage is what a page says when its session moved on in another tab.
const conflictMessage = "This session changed in another tab or window. Reload to continue."

// result is a finished or running run as the run page and the editor show it.
type result struct {
	Run       store.Run
	Outputs   []output
	Artifacts []artifact
	Actions   []action
	Files     []run.ManifestFile // the input manifest
	// Rev is the session revision the action forms submit against; empty while the page
	// does not hold it (the run wrote none, or the session moved on), and then the
	// forms cannot be sent.
	Rev       string
	Stale     bool   // the session has moved on past this run
	LatestRun string // the session's latest run, when Stale
	Conflict  bool   // this action run lost the race for the session
	CanAct    bool   // the viewer owns the session
	Owner     bool   // the viewer started the run, so sees its logs
	Stdout    string
	Stderr    string
	Error     string // why the last submission was refused
	CSRF      string // for the action forms
	ReloadURL string // where "Reload" goes: this run's page, or the editor for a sandbox run
	// ActionURL is where the action forms post, the action's id appended: the run's
	// own route, or the editor's for its sandbox session.
	ActionURL string
}

func (h *Handler) result(r *http.Request, c *call, t store.Tool, rn store.Run) (*result, error) {
	arts, err := artifacts(rn)
	if err != nil {
		return nil, err
	}
	acts, err := actions(rn)
	if err != nil {
		return nil, err
	}
	manifest, err := run.ManifestOf(rn)
	if err != nil {
		return nil, err
	}
	sctx, err := session.ParseContext(rn.Context)
	if err != nil {
		return nil, err
	}
	res := &result{ReloadURL: "/runs/" + rn.ID, Run: rn, Outputs: outputs(rn), Artifacts: arts, Actions: acts, Files: manifest.Files,
		Owner: rn.UserID == c.User.ID, CanAct: rn.UserID == c.User.ID, Conflict: workflow.LostRace(rn), CSRF: c.CSRF,
		ActionURL: "/runs/" + rn.ID + "/actions/"}
	if vid, ok := sctx.EditorVersion(); ok {
		res.ReloadURL = "/editor/" + t.Slug + "?version=" + vid
	}
	if res.Owner {
		res.Stdout, res.Stderr = run.LogText(rn.Stdout, rn.StdoutTruncated), run.LogText(rn.Stderr, rn.StderrTruncated)
	}
	if len(res.Actions) > 0 && rn.StateRev != nil {
		sess, err := h.workflow.Session(r.Context(), t, store.User{ID: rn.UserID}, sctx)
		switch {
		case errors.Is(err, session.ErrNoSession):
			res.Stale = true
		case err != nil:
			return nil, err
		case sess.StateRev != *rn.StateRev || sess.LatestRunID != rn.ID:
			res.Stale, res.LatestRun = true, sess.LatestRunID
		default:
			res.Rev = strconv.FormatInt(*rn.StateRev, 10)
		}
	}
	return res, nil
}

func (h *Handler) runPage(w http.ResponseWriter, r *http.Request, c *call) error {
	rn, err := h.runs.Owned(r.Context(), c.User, r.PathValue("run"))
	if err != nil {
		return err
	}
	return h.showRun(w, r, c, rn, http.StatusOK, "")
}

// showRun renders the run page, with submitErr (a refused action) above the forms.
func (h *Handler) showRun(w http.ResponseWriter, r *http.Request, c *call, rn store.Run, status int, submitErr string) error {
	t, err := h.catalog.Visible(r.Context(), c.User, rn.ToolID)
	if err != nil {
		return err
	}
	res, err := h.result(r, c, t, rn)
	if err != nil {
		return err
	}
	res.Error = submitErr
	if submitErr == conflictMessage {
		res.Rev = ""
	}
	h.render(w, r, status, "run", c, map[string]any{"Title": t.Title, "Tool": t, "Result": res})
	return nil
}

// htmlOutput serves one html_sandboxed output for the run page's frame. The CSP sandbox
// gives the document an opaque origin with scripts off, whoever frames or opens it, so
// tool HTML never runs with the page's privileges; it may use inline styles and data:
// images only.
func (h *Handler) htmlOutput(w http.ResponseWriter, r *http.Request, c *call) error {
	rn, err := h.runs.Owned(r.Context(), c.User, r.PathValue("run"))
	if err != nil {
		return err
	}
	outs, err := run.OutputsOf(rn)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n >= len(outs) || outs[n].Kind != contract.KindHTML {
		return errs.New(run.ErrNotFound, map[string]any{"run": rn.ID, "output": r.PathValue("n")}, "run %s has no HTML output %s", rn.ID, r.PathValue("n"))
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; frame-ancestors 'self'")
	hd.Set("X-Frame-Options", "SAMEORIGIN")
	hd.Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(outs[n].HTML))
	return nil
}

// historyPage is how many runs one page of the history holds.
const historyPage = 50

// history lists the caller's runs, newest first, each with the files it left to
// download, filtered by tool (a slug) and status. The "Older runs" link carries the
// filter; a filter the services refuse (a tool the user does not see, a status that is
// none) shows on the page with the error table's status.
func (h *Handler) history(w http.ResponseWriter, r *http.Request, c *call) error {
	q := r.URL.Query()
	f := runFilter{Tool: strings.TrimSpace(q.Get("tool")), Status: q.Get("status")}
	tools, err := h.catalog.List(r.Context(), c.User)
	if err != nil {
		return err
	}
	view := map[string]any{"Title": h.langOf(r).T("lists.history.title"), "Filter": f, "Tools": tools, "Statuses": run.Statuses()}
	rq := run.Query{UserID: c.User.ID, Status: f.Status, Cursor: q.Get("before"), Limit: historyPage}
	var page run.Page
	if f.Tool != "" {
		var t store.Tool
		if t, err = h.catalog.Visible(r.Context(), c.User, f.Tool); err == nil {
			rq.ToolID, f.Tool = t.ID, t.Slug
		}
	}
	if err == nil {
		page, err = h.runs.List(r.Context(), c.User, rq)
	}
	if err != nil {
		status, _ := h.statusOf(err)
		if !shownToUser(status) {
			return err
		}
		view["Error"], view["Filtered"] = h.message(r, err), true
		h.render(w, r, status, "history", c, view)
		return nil
	}
	titles := make(map[string]string, len(tools))
	for _, t := range tools {
		titles[t.ID] = t.Title
	}
	rows := make([]historyRow, 0, len(page.Runs))
	for _, rn := range page.Runs {
		arts, err := artifacts(rn)
		if err != nil {
			// One damaged record does not hide the others' downloads.
			httpkit.LogInternal(r, h.log, err)
		}
		rows = append(rows, historyRow{Run: rn, Tool: titles[rn.ToolID], Artifacts: arts})
	}
	view["Filter"], view["Runs"], view["Filtered"] = f, rows, f != runFilter{}
	if page.NextCursor != "" {
		view["Next"] = "/runs?" + f.query(page.NextCursor)
	}
	h.render(w, r, http.StatusOK, "history", c, view)
	return nil
}

// submitAction runs a next action of run {run}, in the run's own context: the published
// version for "default", the version under test for an editor sandbox. A refusal shows
// the run page again with the reason; a 409 says the session changed elsewhere.
func (h *Handler) submitAction(w http.ResponseWriter, r *http.Request, c *call) error {
	rn, err := h.runs.Owned(r.Context(), c.User, r.PathValue("run"))
	if err != nil {
		return err
	}
	if rn.UserID != c.User.ID {
		return errs.New(run.ErrNotFound, map[string]any{"run": rn.ID}, "only the person who ran %s can act on it", rn.ID)
	}
	sctx, t, v, back, err := h.actionTarget(r, c, rn)
	if err != nil {
		return err
	}
	expected, perr := strconv.ParseInt(r.PostFormValue("expected_state_rev"), 10, 64)
	var next store.Run
	if perr != nil {
		err = errs.New(session.ErrConflict, nil, conflictMessage)
	} else if offered, oerr := workflow.Offered(rn, r.PathValue("action")); oerr != nil {
		err = oerr
	} else if in, ierr := formInput(offered, r.PostForm); ierr != nil {
		err = errs.New(contract.ErrInvalidInput, nil, "%s", ierr.Error())
	} else {
		next, err = h.workflow.Action(r.Context(), workflow.Action{Tool: t, Version: v, User: c.User, Context: sctx,
			ActionID: r.PathValue("action"), Input: in, ExpectedStateRev: expected})
	}
	if err != nil {
		status, _ := h.statusOf(err)
		msg := h.message(r, err)
		if errors.Is(err, session.ErrConflict) {
			msg = conflictMessage
		}
		if !shownToUser(status) {
			return err
		}
		if back != "" {
			return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: v.ID, RunID: rn.ID, Status: status, RunErr: msg})
		}
		return h.showRun(w, r, c, rn, status, msg)
	}
	h.runs.Wait(r.Context(), next.ID, runWait)
	if back != "" {
		redirect(w, r, back+"&run="+next.ID)
		return nil
	}
	redirect(w, r, "/runs/"+next.ID)
	return nil
}

// actionTarget is the session context of rn, the tool and version an action of rn runs,
// and for an editor context the editor page to go back to.
func (h *Handler) actionTarget(r *http.Request, c *call, rn store.Run) (session.Context, store.Tool, store.ToolVersion, string, error) {
	sctx, err := session.ParseContext(rn.Context)
	if err != nil {
		return sctx, store.Tool{}, store.ToolVersion{}, "", err
	}
	if vid, ok := sctx.EditorVersion(); ok {
		v, t, err := h.catalog.OwnedVersion(r.Context(), c.User, vid)
		return sctx, t, v, "/editor/" + t.Slug + "?version=" + v.ID, err
	}
	t, v, err := h.catalog.Published(r.Context(), c.User, rn.ToolID)
	return sctx, t, v, "", err
}
