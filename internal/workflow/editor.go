package workflow

import (
	"context"
	"errors"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// The editor's use cases (docs/spec.md §6 "Editor"): what its page shows of a version's
// sandbox, going back to an earlier step of the sandbox session, and going on from the
// session of another version of the same tool. The API and the web UI both call these,
// so that who may, and which versions, are decided once.

// ErrContinueFrom means a sandbox session cannot go on from the version asked: it is a
// version of another tool, or the session's own.
var ErrContinueFrom = errors.New("cannot continue from that version")

// NeedAuthor refuses u the editor unless u may write tools (an author or an admin).
func NeedAuthor(u store.User) error {
	if !catalog.CanAuthor(u) {
		return errs.New(catalog.ErrForbidden, map[string]any{"role": u.Role}, "the editor is for authors; you are %s", u.Role)
	}
	return nil
}

// editorVersion is version id and its tool, when u may use them in the editor: u is an
// author or admin (NeedAuthor), and owns the tool; another's version is answered as
// not found (catalog.Service.OwnedVersion).
func (st *Service) editorVersion(ctx context.Context, u store.User, id string) (store.ToolVersion, store.Tool, error) {
	if err := NeedAuthor(u); err != nil {
		return store.ToolVersion{}, store.Tool{}, err
	}
	return st.catalog.OwnedVersion(ctx, u, id)
}

// Editor is what the editor shows of a version of a tool: the tool and its versions,
// the version's sandbox session and its kept steps, whether that session can go on from
// the previous version's, and the run shown beside the sandbox.
type Editor struct {
	Tool     store.Tool
	Version  store.ToolVersion
	Versions []store.ToolVersion // newest first
	// Session is the version's sandbox session; nil when it has none.
	Session *store.Session
	Steps   []EditorStep // the session's kept steps, newest first
	// Previous is the version saved before Version, when its sandbox has a session this
	// one can go on from (ContinueFrom); nil otherwise.
	Previous *store.ToolVersion
	// PreviousSteps are the kept steps of Previous's session, newest first: the steps the
	// session can go on from (Continue.Rev).
	PreviousSteps []EditorStep
	// Run is the run beside the sandbox, nil when there is none: the run asked for when it
	// is a run of this sandbox or the one its session went on from, else the session's
	// latest run, else the newest sandbox run of the version.
	Run *store.Run
	// Current reports whether Run is the session's latest run and the viewer's: its next
	// actions are the session's next step.
	Current bool
}

// EditorStep is one kept step of a sandbox session.
type EditorStep struct {
	Rev int64
	// Action is the label of the action the step's run took, as its offer named it (its
	// id when the offer had no label); empty for an initial run.
	Action  string
	At      time.Time
	Current bool // the session is at this step
}

// EditorView is the editor of tool ref (an id or a slug) for u: at version versionID
// (empty, or not one of the tool's: the newest) beside run runID (empty: as Editor.Run
// says). Only an author or admin who owns the tool sees it.
func (st *Service) EditorView(ctx context.Context, u store.User, ref, versionID, runID string) (Editor, error) {
	if err := NeedAuthor(u); err != nil {
		return Editor{}, err
	}
	t, err := st.catalog.Owned(ctx, u, ref)
	if err != nil {
		return Editor{}, err
	}
	versions, err := st.catalog.Versions(ctx, u, t)
	if err != nil {
		return Editor{}, err
	}
	ed := Editor{Tool: t, Version: versions[0], Versions: versions}
	for _, x := range versions {
		if x.ID == versionID {
			ed.Version = x
		}
	}
	sctx := session.Editor(ed.Version.ID)
	switch sess, err := st.Session(ctx, t, u, sctx); {
	case errors.Is(err, session.ErrNoSession):
	case err != nil:
		return Editor{}, err
	default:
		ed.Session = &sess
		if runID == "" {
			runID = sess.LatestRunID
		}
		if ed.Steps, err = st.editorSteps(ctx, u, t, sctx, sess); err != nil {
			return Editor{}, err
		}
	}
	if prev := previousVersion(versions, ed.Version); prev != nil {
		psctx := session.Editor(prev.ID)
		switch psess, err := st.Session(ctx, t, u, psctx); {
		case err == nil:
			ed.Previous = prev
			if ed.PreviousSteps, err = st.editorSteps(ctx, u, t, psctx, psess); err != nil {
				return Editor{}, err
			}
		case !errors.Is(err, session.ErrNoSession):
			return Editor{}, err
		}
	}
	if runID == "" {
		rn, ok, err := st.LatestSandboxRun(ctx, u, t, ed.Version)
		if err != nil {
			return Editor{}, err
		}
		if ok {
			runID = rn.ID
		}
	}
	if runID != "" {
		// The sandbox's own runs, and the run a session copied from another version
		// offers its next actions from; any other run (or none) is not shown.
		rn, err := st.runs.Owned(ctx, u, runID)
		latest := ed.Session != nil && rn.ID == ed.Session.LatestRunID
		if err == nil && rn.ToolID == t.ID && (rn.Context == sctx.String() || latest) {
			ed.Run, ed.Current = &rn, latest && rn.UserID == u.ID
		}
	}
	return ed, nil
}

// previousVersion is the version saved before v (versions are newest first), or nil.
func previousVersion(versions []store.ToolVersion, v store.ToolVersion) *store.ToolVersion {
	for i, x := range versions {
		if x.ID == v.ID && i+1 < len(versions) {
			return &versions[i+1]
		}
	}
	return nil
}

// editorSteps are the kept steps of sandbox session sess, newest first. A step's
// action is named by the label its offer had, on the run of the step before.
func (st *Service) editorSteps(ctx context.Context, u store.User, t store.Tool, sctx session.Context, sess store.Session) ([]EditorStep, error) {
	kept, err := st.sessions.Steps(ctx, sctx.Key(t.ID, u.ID))
	if err != nil {
		return nil, err
	}
	runs := map[string]store.Run{}
	for _, k := range kept {
		if rn, err := st.runs.Owned(ctx, u, k.RunID); err == nil {
			runs[k.RunID] = rn
		}
	}
	steps := make([]EditorStep, len(kept))
	for i, k := range kept {
		steps[i] = EditorStep{Rev: k.StateRev, At: k.CreatedAt, Current: k.StateRev == sess.StateRev}
		rn, ok := runs[k.RunID]
		if !ok || rn.Kind != store.KindAction {
			continue
		}
		steps[i].Action = rn.ActionID
		if i+1 < len(kept) {
			offers, _ := run.NextActionsOf(runs[kept[i+1].RunID])
			for _, a := range offers {
				if a.ActionID == rn.ActionID && a.Label != "" {
					steps[i].Action = a.Label
				}
			}
		}
	}
	return steps, nil
}

// LatestSandboxRun is the newest run of version v in its editor sandbox by u, among
// u's latest runs of t.
func (st *Service) LatestSandboxRun(ctx context.Context, u store.User, t store.Tool, v store.ToolVersion) (store.Run, bool, error) {
	page, err := st.runs.List(ctx, u, run.Query{UserID: u.ID, ToolID: t.ID, Limit: 20})
	if err != nil {
		return store.Run{}, false, err
	}
	for _, rn := range page.Runs {
		if rn.Context == session.Editor(v.ID).String() {
			return rn, true, nil
		}
	}
	return store.Run{}, false, nil
}

// Offer is the action id that u's session of t in c offers now, and the run that
// offers it: what a form of that action is read against before Action submits it.
func (st *Service) Offer(ctx context.Context, t store.Tool, u store.User, c session.Context, id string) (store.Run, contract.NextAction, error) {
	sess, err := st.sessions.Get(ctx, c.Key(t.ID, u.ID))
	if err != nil {
		return store.Run{}, contract.NextAction{}, err
	}
	latest, err := st.runs.Get(ctx, sess.LatestRunID)
	if err != nil {
		return store.Run{}, contract.NextAction{}, err
	}
	a, err := Offered(latest, id)
	return latest, a, err
}

// GoBack makes step rev of u's sandbox session of version versionID current again, as
// revision expected+1, and returns the session then. A session no longer at expected
// is a conflict (session.ErrConflict, with details expected and current) and changes
// nothing; a step it does not keep is session.ErrNoStep. The session's files stay as
// they are.
func (st *Service) GoBack(ctx context.Context, u store.User, versionID string, expected, rev int64) (store.Session, error) {
	v, t, err := st.editorVersion(ctx, u, versionID)
	if err != nil {
		return store.Session{}, err
	}
	k := session.Editor(v.ID).Key(t.ID, u.ID)
	if _, err := st.sessions.GoBack(ctx, k, expected, rev); err != nil {
		return store.Session{}, err
	}
	return st.sessions.Get(ctx, k)
}

// Continue asks that a version's sandbox session go on from another version's.
type Continue struct {
	VersionID string // the version whose sandbox session goes on
	From      string // the version it goes on from: another version of the same tool
	// Rev is the kept step of From's session to go on from; nil: where that session is.
	Rev *int64
	// Expected is the revision of VersionID's session the caller saw, 0 when it had
	// none; nil: whatever it is now.
	Expected *int64
}

// ContinueFrom lets u's sandbox session of version c.VersionID go on from their
// sandbox session of version c.From, a version of the same tool: its state and offered
// next actions (those of step c.Rev when given) and its files. It returns the session
// then. A session no longer at c.Expected is a conflict and changes nothing.
func (st *Service) ContinueFrom(ctx context.Context, u store.User, c Continue) (store.Session, error) {
	v, t, err := st.editorVersion(ctx, u, c.VersionID)
	if err != nil {
		return store.Session{}, err
	}
	from, ft, err := st.editorVersion(ctx, u, c.From)
	if err != nil {
		return store.Session{}, err
	}
	switch {
	case ft.ID != t.ID:
		return store.Session{}, errs.New(ErrContinueFrom, map[string]any{"from_version_id": from.ID, "tool": t.Slug},
			"version %s is a version of %s, not of %s: a sandbox session goes on only from a version of the same tool", from.ID, ft.Slug, t.Slug)
	case from.ID == v.ID:
		return store.Session{}, errs.New(ErrContinueFrom, map[string]any{"from_version_id": from.ID},
			"version %s cannot go on from its own session; go back to one of its steps instead", v.ID)
	}
	to := session.Editor(v.ID).Key(t.ID, u.ID)
	var expected int64
	if c.Expected != nil {
		expected = *c.Expected
	} else if cur, err := st.sessions.Get(ctx, to); err == nil {
		expected = cur.StateRev
	} else if !errors.Is(err, session.ErrNoSession) {
		return store.Session{}, err
	}
	if _, err := st.sessions.Copy(ctx, session.Editor(from.ID).Key(t.ID, u.ID), to, expected, c.Rev); err != nil {
		return store.Session{}, err
	}
	return st.sessions.Get(ctx, to)
}
