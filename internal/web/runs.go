package web

import (
	"cmp"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// conflictMessage is the text of the session.ErrConflict the web makes itself, for a
// form that did not say which revision it saw. It is for the log: the page says a
// conflict in its own language (run.conflict), deciding by the error's kind (refusal).
const conflictMessage = "This session changed in another tab or window. Reload to continue."

// refusal is why the last submission (a step, a retry, a change to an editor session)
// was refused, as the page says it. A conflict (the session changed elsewhere) and a
// retry whose files are gone are said in the page's own words, with the way on; any
// other refusal by its message, already in the page's language.
type refusal struct {
	msg       string
	conflict  bool // session.ErrConflict, and what a retry counts as one
	filesGone bool // errFilesGone
}

// refusalOf is err, a refusal shown to the user, as the page says it.
func (h *Handler) refusalOf(r *http.Request, err error) refusal {
	switch {
	case errors.Is(err, errFilesGone):
		return refusal{filesGone: true}
	case errors.Is(err, session.ErrConflict):
		return refusal{conflict: true}
	}
	return refusal{msg: h.message(r, err)}
}

// text is the refusal as one sentence in the page's language, for a page with no
// result to show it beside.
func (f refusal) text(l *Lang) string {
	switch {
	case f.conflict:
		return l.T("run.conflict")
	case f.filesGone:
		return l.T("run.retry_files_gone")
	}
	return f.msg
}

// result is a finished or running run as the run page and the editor show it.
type result struct {
	Run       store.Run
	Outputs   []output
	Artifacts []artifact
	Actions   []action
	Files     []run.ManifestFile // the input manifest
	// Rev is the session revision the action forms submit against; empty while the page
	// does not hold it (the run wrote none, or the session moved on), and then no forms
	// are shown, only the way to the latest step.
	Rev       string
	Stale     bool   // the session has moved on past this run
	LatestRun string // the session's latest run, when Stale
	Conflict  bool   // this action run lost the race for the session
	CanAct    bool   // the viewer owns the session
	// ShowLogs: the viewer ran it, and so sees what the tool printed (the contract shows
	// stdout and stderr to the run's owner only, as the API does: they can hold what the
	// owner's files said). A crash puts them under "Teknisk information", folded, below
	// a plain sentence; anyone else, an admin or the tool's author, gets the summary.
	ShowLogs bool
	// LiveStderr: the live view shows the error lines as they come, to an owner who
	// wrote the tool; anyone else would see a traceback scroll by before the plain
	// sentence replaces it.
	LiveStderr bool
	Stdout     string
	Stderr     string
	Error      string // why the last submission was refused, when neither of the two below
	Refused    bool   // the last submission lost to a change made elsewhere (a conflict)
	FilesGone  bool   // the last "Försök igen" found the run's files gone
	CSRF       string // for the action forms
	ReloadURL  string // this run's page, or the editor for a sandbox run
	ToolURL    string // where a new run starts: the tool's page, or the editor for a sandbox run
	// ActionURL is where the action forms post, the action's id appended: the run's
	// own route, or the editor's for its sandbox session.
	ActionURL string
	// CanRetry: the viewer ran it and it failed or timed out, so "Försök igen" is offered
	// where trying again can help (RetryHelps).
	CanRetry bool
	// Author is the name of the tool's author, whom a crash names as the one who can
	// mend it (store.DeletedUserName when they were deleted).
	Author string
	// Reason is why skrip's side or the user's input failed the run (run.Reason);
	// Why is it, or the run's error source, in the page's language (reasonText).
	Reason run.Reason
	Why    string
	// Field is the label of the field whose input the tool refused (store.SourceInput),
	// its name when the form has no such field.
	Field string
	// CanCancel: the viewer ran it and it is still queued or running.
	CanCancel bool
	// Confirm is a secondary action waiting for the user's confirmation (a post without
	// confirmed=1); nil otherwise.
	Confirm *confirmStep
	// Report is the box that reports a failed run to the tool's author (reports.go).
	Report *reportBox
}

// confirmStep is a secondary action's form sent back for a second, confirmed submit.
type confirmStep struct {
	Action action
	Fields []hiddenField // what the first submit sent, to send again
}

type hiddenField struct{ Name, Value string }

// LatestURL is where "Gå till senaste steget" leads: the session's latest run, else the
// editor (whose page shows the sandbox's latest step), else the tool's page.
func (r *result) LatestURL() string {
	if r.LatestRun != "" && r.LatestRun != r.Run.ID {
		return "/runs/" + r.LatestRun
	}
	if r.ReloadURL != "" && r.ReloadURL != "/runs/"+r.Run.ID {
		return r.ReloadURL
	}
	return r.ToolURL
}

// refuse shows f, why the last submission was refused, above the forms; after a
// conflict the page holds no current revision, so it offers the latest step instead.
func (r *result) refuse(f refusal) {
	r.Error, r.Refused, r.FilesGone = f.msg, f.conflict, f.filesGone
	if f.conflict {
		r.Rev = ""
	}
}

// ShowStale: the page does not hold the session's current revision, for no reason
// already said above (a refused submission, a lost race), so instead of its forms it
// shows the one way on: the latest step.
func (r *result) ShowStale() bool { return r.Rev == "" && !r.Refused && !r.Conflict }

// genericUserMessage is the summary of a ToolUserError without a message
// (tool_errors.GENERIC_MESSAGE, the original hub's words); the page says it in its own
// language. oldGenericUserMessage is the one of runs recorded before skrip took them.
const (
	genericUserMessage    = "Ett fel inträffade."
	oldGenericUserMessage = "The tool stopped with an error but gave no message."
)

// NoMessage says whether a failed run is a ToolUserError that gave no message (or the
// generic one the shim gives it then).
func (r *result) NoMessage() bool {
	s := strings.TrimSpace(r.Run.ErrorSummary)
	return r.toolError() && (s == "" || s == genericUserMessage || s == oldGenericUserMessage)
}

// UserMessage says whether a failed run's summary is the tool's message to its user,
// which the page shows as it is: its error came from the tool (a ToolUserError). Every
// other source (a crash, the runner, the policy) gets a plain sentence in the page's
// language, the summary folded under "Teknisk information": those are words for the
// tool's author.
func (r *result) UserMessage() bool {
	return r.toolError() && strings.TrimSpace(r.Run.ErrorSummary) != ""
}

// InputRefused says whether a failed run's input was refused (store.SourceInput).
func (r *result) InputRefused() bool {
	return r.Run.Status == store.StatusFailed && r.Run.ErrorSource == store.SourceInput
}

// toolError says whether the run failed with the tool's own message. A failed run with
// no source was recorded by a node older than error_source, during a rolling upgrade
// (the migration gave every run before it one): it is taken for a crash, so skrip's own
// words never read as the tool's message; its summary is still shown, folded.
func (r *result) toolError() bool {
	return r.Run.Status == store.StatusFailed && r.Run.ErrorSource == store.SourceTool
}

// RetryHelps says whether running the same files and choices again may end otherwise:
// only when skrip's side failed it for a passing reason (the sandbox, a lost worker, a
// restart: store.SourceRunner). Not after the tool's own message, a refusal of the
// input, a crash or a broken result (the same input meets the same code), nor after
// the time or memory limit (the same input needs the same time and memory): those
// offer to change the input instead (ChangeHelps).
func (r *result) RetryHelps() bool {
	if !r.Crashed() || r.Run.ErrorSource != store.SourceRunner || r.Run.Status == store.StatusTimedOut {
		return false
	}
	switch r.Reason.Code {
	case run.ReasonTimedOut, run.ReasonMemory:
		return false
	}
	return true
}

// ChangeHelps says whether the page offers "Ändra och kör igen": every failure but one
// of skrip's passing ones, which offers "Försök igen" instead.
func (r *result) ChangeHelps() bool { return r.Crashed() && !r.RetryHelps() }

// ToolFault says whether the tool's code is at fault (a crash, or a result that broke
// the contract): the page names the author and offers the report.
func (r *result) ToolFault() bool {
	return r.Run.Status == store.StatusFailed && (r.Run.ErrorSource == store.SourceCrash || r.Run.ErrorSource == store.SourcePolicy || r.Run.ErrorSource == "")
}

// Limit says which limit stopped the run, "time" or "memory", or "".
func (r *result) Limit() string {
	switch {
	case r.Run.Status == store.StatusTimedOut || r.Reason.Code == run.ReasonTimedOut:
		return "time"
	case r.Reason.Code == run.ReasonMemory:
		return "memory"
	}
	return ""
}

// reasonText is why run rn failed in l's words, from its reason and parameters (the
// catalogues' run.reason.<code>), or, for a run recorded before reasons were, from its
// error source (run.reason.source.<source>); "" for the tool's own message, which the
// page shows as it is.
func reasonText(l *Lang, rn store.Run, why run.Reason) string {
	if !retryable(rn.Status) || rn.ErrorSource == store.SourceTool || rn.ErrorSource == store.SourceInput && why.Code == "" {
		return ""
	}
	if id := reasonPrefix + why.Code; why.Code != "" && l.Has(id) {
		args := make([]any, 0, 2*len(why.Params))
		for k, v := range why.Params {
			args = append(args, reasonParam(k), v)
		}
		return l.T(id, args...)
	}
	if rn.Status == store.StatusTimedOut {
		return l.T(reasonPrefix + "source.timed_out")
	}
	return l.T(reasonPrefix + "source." + cmp.Or(rn.ErrorSource, store.SourceCrash))
}

// reasonPrefix is where the catalogues keep a run's reasons (TestCatalogues checks one
// for each of run.Codes and each error source).
const reasonPrefix = "run.reason."

// reasonParam is a reason's parameter as the catalogues name it: "exit_code" is
// ExitCode.
func reasonParam(k string) string {
	var b strings.Builder
	for _, part := range strings.Split(k, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// AuthorGone says whether the tool's author was deleted, so no one by name mends it.
func (r *result) AuthorGone() bool { return r.Author == "" || r.Author == store.DeletedUserName }

// Crashed is a run that ended without doing its job through no choice of the user's:
// failed or timed out (a cancelled run was the user's choice).
func (r *result) Crashed() bool {
	return r.Run.Status == store.StatusFailed || r.Run.Status == store.StatusTimedOut
}

// Since is when the run began waiting or running, for the elapsed time.
func (r *result) Since() time.Time {
	if r.Run.StartedAt != nil {
		return *r.Run.StartedAt
	}
	return r.Run.CreatedAt
}

// Elapsed is the whole seconds since Since, as the page first shows them.
func (r *result) Elapsed() int64 { return max(0, int64(time.Since(r.Since())/time.Second)) }

// retryable statuses: a run that did not do its job and that the user did not stop.
func retryable(status string) bool {
	return status == store.StatusFailed || status == store.StatusTimedOut
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
	own := rn.UserID == c.User.ID
	res := &result{ReloadURL: "/runs/" + rn.ID, ToolURL: "/tools/" + t.Slug, Run: rn, Outputs: outputs(rn), Artifacts: arts, Actions: acts,
		Files: manifest.Files, ShowLogs: own, LiveStderr: own && catalog.Maintains(store.User{ID: c.User.ID}, t), CanAct: own,
		Conflict: workflow.LostRace(rn), CSRF: c.CSRF, ActionURL: "/runs/" + rn.ID + "/actions/",
		CanRetry: own && retryable(rn.Status), CanCancel: own && !store.Terminal(rn.Status), Author: t.AuthorName}
	if vid, ok := sctx.EditorVersion(); ok {
		res.ReloadURL = "/editor/" + t.Slug + "?version=" + vid
		res.ToolURL = res.ReloadURL
	}
	sayNotices(h.langOf(r), res.Outputs)
	res.Reason = run.ReasonOf(rn)
	res.Why = reasonText(h.langOf(r), rn, res.Reason)
	if res.InputRefused() {
		res.Field = h.fieldLabel(r, c, rn, res.Reason.Params["field"])
	}
	if res.Report, err = h.reportBox(r, c, t, rn); err != nil {
		return nil, err
	}
	if res.ShowLogs {
		res.Stdout, res.Stderr = run.LogText(rn.Stdout, rn.StdoutTruncated), run.LogText(rn.Stderr, rn.StderrTruncated)
	}
	if len(res.Actions) > 0 || res.Conflict {
		sess, err := h.workflow.Session(r.Context(), t, store.User{ID: rn.UserID}, sctx)
		switch {
		case errors.Is(err, session.ErrNoSession):
			res.Stale = true
		case err != nil:
			return nil, err
		case rn.StateRev == nil || sess.StateRev != *rn.StateRev || sess.LatestRunID != rn.ID:
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
	return h.showRun(w, r, c, rn, http.StatusOK, refusal{}, nil)
}

// showRun renders the run page, with refused (why an action was refused) above the
// forms, or with a secondary action waiting for its confirmation. The page's title
// begins with the run's status, which the script keeps current.
func (h *Handler) showRun(w http.ResponseWriter, r *http.Request, c *call, rn store.Run, status int, refused refusal, confirm *confirmStep) error {
	t, err := h.catalog.Visible(r.Context(), c.User, rn.ToolID)
	if err != nil {
		return err
	}
	res, err := h.result(r, c, t, rn)
	if err != nil {
		return err
	}
	res.Confirm = confirm
	res.refuse(refused)
	title := h.langOf(r).T("run.title", "Status", h.langOf(r).Status(rn.Status), "Tool", t.Title)
	h.render(w, r, status, "run", c, map[string]any{"Title": title, "Tool": t, "Result": res})
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
		status, _ := h.statusOf(w, err)
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
	} else if step, ask := needsConfirm(rn, offered, r); ask {
		// A secondary action asks first, with or without script: nothing runs until
		// the same form comes back with confirmed=1.
		return h.showRun(w, r, c, rn, http.StatusOK, refusal{}, step)
	} else {
		next, err = h.workflow.Action(r.Context(), workflow.Action{Tool: t, Version: v, User: c.User, Context: sctx,
			ActionID: r.PathValue("action"), Input: in, ExpectedStateRev: expected})
	}
	if err != nil {
		status, _ := h.statusOf(w, err)
		if !shownToUser(status) {
			return err
		}
		return h.refusedStep(w, r, c, rn, t, v, back, status, h.refusalOf(r, err))
	}
	h.newStep(w, r, next, back)
	return nil
}

// refusedStep shows why a step or a retry from rn was refused (f, with status): on the
// editor page for a sandbox run (back), else on rn's page.
func (h *Handler) refusedStep(w http.ResponseWriter, r *http.Request, c *call, rn store.Run, t store.Tool, v store.ToolVersion, back string, status int, f refusal) error {
	if back != "" {
		return h.showEditor(w, r, c, editorView{Ref: t.Slug, VersionID: v.ID, RunID: rn.ID, Status: status, RunErr: f})
	}
	return h.showRun(w, r, c, rn, status, f, nil)
}

// newStep shows run next, which a step or a retry started: in the editor for a sandbox
// run (back) once it ends or runWait passes, else at once on its own page, which follows
// it live.
func (h *Handler) newStep(w http.ResponseWriter, r *http.Request, next store.Run, back string) {
	if back != "" {
		h.runs.Wait(r.Context(), next.ID, runWait)
		redirect(w, r, back+"&run="+next.ID)
		return
	}
	redirect(w, r, "/runs/"+next.ID)
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

// needsConfirm says whether the submission r of action a (offered by rn) must be
// confirmed first, and if so the step that asks. The rule: the first action a run offers
// is its primary one; every other is secondary and asks before it runs, since skrip
// cannot tell which of them throws work away ("Börja om") and asking costs one click.
// Script asks with a dialog and sends confirmed=1; without script the server asks here.
func needsConfirm(rn store.Run, a contract.NextAction, r *http.Request) (*confirmStep, bool) {
	if r.PostFormValue("confirmed") == "1" {
		return nil, false
	}
	offered, err := run.NextActionsOf(rn)
	if err != nil || len(offered) == 0 || offered[0].ActionID == a.ActionID {
		return nil, false
	}
	acts, err := actions(rn)
	if err != nil {
		return nil, false
	}
	step := &confirmStep{}
	for _, v := range acts {
		if v.ID == a.ActionID {
			step.Action = v
		}
	}
	// What the action's own fields sent, and the revision: nothing else a client put in
	// the form comes back on the page.
	names := []string{"expected_state_rev"}
	for i, f := range a.Fields {
		names = append(names, "in."+controlKey(i, f.Name))
	}
	for _, k := range names {
		for _, v := range r.PostForm[k] {
			step.Fields = append(step.Fields, hiddenField{Name: k, Value: v})
		}
	}
	return step, true
}

// cancelRun stops a queued or running run of the caller's, as the API's cancel does, and
// shows it again once it has ended (or after a few seconds).
func (h *Handler) cancelRun(w http.ResponseWriter, r *http.Request, c *call) error {
	rn, err := h.runs.Owned(r.Context(), c.User, r.PathValue("run"))
	if err != nil {
		return err
	}
	if rn.UserID != c.User.ID {
		return errs.New(run.ErrNotFound, map[string]any{"run": rn.ID}, "only the person who ran %s can stop it", rn.ID)
	}
	if _, err := h.runs.Cancel(r.Context(), rn.ID); err != nil {
		return err
	}
	h.runs.Wait(r.Context(), rn.ID, 10*time.Second)
	redirect(w, r, h.runURL(r, c, rn))
	return nil
}

// runURL is where a run is shown: its page, or the editor for a sandbox run.
func (h *Handler) runURL(r *http.Request, c *call, rn store.Run) string {
	sctx, err := session.ParseContext(rn.Context)
	if vid, ok := sctx.EditorVersion(); err == nil && ok {
		if t, err := h.catalog.Visible(r.Context(), c.User, rn.ToolID); err == nil {
			return "/editor/" + t.Slug + "?version=" + vid + "&run=" + rn.ID
		}
	}
	return "/runs/" + rn.ID
}

// retryable refuses to take failed step rn again when the session has moved on since
// it failed (a failed step leaves the session as it was, so any later change is another
// step's, or going back): the same input against other state is not "the same again".
// It also refuses a step recorded before steps kept their input, when the action has
// fields: running it with none would not be the same either. Both answer as a stale
// step does, with the way to the latest one.
func (h *Handler) retryable(r *http.Request, c *call, rn store.Run, sess store.Session, inputs map[string]any) error {
	stale := errs.New(session.ErrConflict, map[string]any{"run": rn.ID}, "the session has moved on since step %s failed", rn.ID)
	if sess.UpdatedAt.After(rn.CreatedAt) {
		return stale
	}
	if len(inputs) > 0 {
		return nil
	}
	latest, err := h.runs.Owned(r.Context(), c.User, sess.LatestRunID)
	if err != nil {
		return err
	}
	offered, err := workflow.Offered(latest, rn.ActionID)
	if err != nil {
		return err
	}
	if len(offered.Fields) > 0 {
		return stale
	}
	return nil
}

// errFilesGone refuses a retry whose run's files the session no longer keeps; the page
// then says so (run.retry_files_gone) with the way to the tool's form.
var errFilesGone = errors.New("files gone")

// retryRun runs a failed run again with the same input, and shows the new run: an
// initial run with the same inputs and the files the session kept from it (refused, with
// the way back to the tool's form, when those are gone or were replaced since); an
// action run as the same action with the same input, against the session as it is now
// (so a session that moved on is refused like any stale step). A sandbox run is tried
// again in its editor context, with the version it ran, and the editor shows the result.
func (h *Handler) retryRun(w http.ResponseWriter, r *http.Request, c *call) error {
	rn, err := h.runs.Owned(r.Context(), c.User, r.PathValue("run"))
	if err != nil {
		return err
	}
	if rn.UserID != c.User.ID {
		return errs.New(run.ErrNotFound, map[string]any{"run": rn.ID}, "only the person who ran %s can try it again", rn.ID)
	}
	sctx, t, v, back, err := h.actionTarget(r, c, rn)
	if err != nil {
		return err
	}
	inputs, err := run.InputsOf(rn)
	if err != nil {
		return err
	}
	var next store.Run
	switch {
	case !retryable(rn.Status):
		err = errs.New(contract.ErrInvalidInput, map[string]any{"run": rn.ID, "status": rn.Status}, "run %s %s; only a failed run is tried again", rn.ID, rn.Status)
	case rn.Kind == store.KindAction:
		var sess store.Session
		if sess, err = h.workflow.Session(r.Context(), t, c.User, sctx); err == nil {
			err = h.retryable(r, c, rn, sess, inputs)
		}
		if err == nil {
			next, err = h.workflow.Action(r.Context(), workflow.Action{Tool: t, Version: v, User: c.User, Context: sctx,
				ActionID: rn.ActionID, Input: inputs, ExpectedStateRev: sess.StateRev})
		}
	default:
		next, err = h.retryInitial(r, c, rn, sctx, t, v, inputs)
	}
	if err != nil {
		status, _ := h.statusOf(w, err)
		f := h.refusalOf(r, err)
		switch {
		case f.filesGone:
			status = http.StatusConflict
		case errors.Is(err, session.ErrConflict), errors.Is(err, session.ErrNoSession), errors.Is(err, workflow.ErrUnknownAction):
			// A retry against a session that moved on, or is gone, is a stale step.
			status, f = http.StatusConflict, refusal{conflict: true}
		case !shownToUser(status):
			return err
		}
		return h.refusedStep(w, r, c, rn, t, v, back, status, f)
	}
	h.newStep(w, r, next, back)
	return nil
}

// retryInitial starts initial run rn again: its inputs, and the files the session kept
// from it, which must still be the ones rn was given (names and sizes).
func (h *Handler) retryInitial(r *http.Request, c *call, rn store.Run, sctx session.Context, t store.Tool, v store.ToolVersion, inputs map[string]any) (store.Run, error) {
	manifest, err := run.ManifestOf(rn)
	if err != nil {
		return store.Run{}, err
	}
	kept, _, err := h.workflow.Files(r.Context(), t, c.User, sctx)
	if err != nil && !errors.Is(err, session.ErrNoSession) {
		return store.Run{}, err
	}
	// A run that got no files is tried again with none; one that got files, only while
	// the session still keeps exactly those.
	if len(manifest.Files) > 0 && !sameFiles(manifest.Files, kept) {
		return store.Run{}, errFilesGone
	}
	// No files sent: the run gets the session's, which are rn's.
	return h.workflow.Initial(r.Context(), workflow.Initial{Tool: t, Version: v, User: c.User, Context: sctx,
		Form: upload.Form{Inputs: inputs}})
}

// sameFiles says whether the session's kept files are the files of a run's manifest.
func sameFiles(manifest []run.ManifestFile, kept []session.File) bool {
	if len(manifest) != len(kept) {
		return false
	}
	want := make(map[string]int64, len(manifest))
	for _, f := range manifest {
		want[f.Name] = f.Bytes
	}
	for _, f := range kept {
		if b, ok := want[f.Name]; !ok || b != f.Bytes {
			return false
		}
	}
	return true
}

// fieldLabel is the label the run form of initial run rn gave field name, from the
// input schema of the version rn ran (the published one, or the editor's); name itself
// when that version is no longer at hand, rn is an action run, or no field has it.
func (h *Handler) fieldLabel(r *http.Request, c *call, rn store.Run, name string) string {
	if rn.Kind != store.KindInitial {
		return name
	}
	var v store.ToolVersion
	var err error
	if sctx, perr := session.ParseContext(rn.Context); perr == nil && sctx.IsEditor() {
		v, _, err = h.catalog.OwnedVersion(r.Context(), c.User, rn.VersionID)
	} else {
		_, v, err = h.catalog.Published(r.Context(), c.User, rn.ToolID)
	}
	if err != nil || v.ID != rn.VersionID {
		return name
	}
	schema, err := inputSchema(v)
	if err != nil {
		return name
	}
	for _, f := range schema {
		if f.Name == name && f.Label != "" {
			return f.Label
		}
	}
	return name
}
