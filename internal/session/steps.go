package session

import (
	"context"
	"errors"
	"os"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// MaxSteps is how many of an editor session's latest steps are kept to go back to.
const MaxSteps = 20

// ErrNoStep means a session has no recorded step of that revision (it was never written,
// or is older than the MaxSteps kept).
var ErrNoStep = errors.New("no such session step")

// isEditor reports whether k is a session of the editor sandbox, whose steps are kept.
func isEditor(k store.SessionKey) bool {
	c, err := ParseContext(k.Context)
	return err == nil && c.IsEditor()
}

// Recorded keeps revision rev of an editor session as a step, when a run that wrote it
// was recorded: the run service calls it.
func (s *Service) Recorded(ctx context.Context, k store.SessionKey, rev int64) { s.record(ctx, k, rev) }

// record keeps revision rev of an editor session as a step, if the session is still at
// it (a later write records its own). A step that cannot be recorded only cannot be gone
// back to, so a failure is logged, not returned: the session itself was written.
func (s *Service) record(ctx context.Context, k store.SessionKey, rev int64) {
	if !isEditor(k) {
		return
	}
	sess, err := s.st.Session(ctx, k)
	if err == nil && sess.StateRev == rev {
		err = s.st.AddSessionStep(ctx, store.SessionStep{SessionKey: k, StateRev: rev, State: sess.State, RunID: sess.LatestRunID, CreatedAt: s.now()}, MaxSteps)
	}
	if err != nil && s.log != nil {
		s.log.Warn("recording a session step", "tool", k.ToolID, "context", k.Context, "rev", rev, "error", err)
	}
}

// Steps lists the kept steps of an editor session, newest first.
func (s *Service) Steps(ctx context.Context, k store.SessionKey) ([]store.SessionStep, error) {
	return s.st.SessionSteps(ctx, k)
}

// conflict is the error for a change asked at revision expected of a session at current.
func conflict(expected, current int64) error {
	return errs.New(ErrConflict, map[string]any{"expected": expected, "current": current},
		"This session changed in another tab or window (it is at revision %d, not %d). Reload to continue.", current, expected)
}

// GoBack makes step rev's state and offered actions the session's again, as a new
// revision: from expected to expected+1, so a click on a page that is out of date
// (expected is not the current revision) changes nothing. The session's files stay as
// they are: they belong to the session, not to a step.
func (s *Service) GoBack(ctx context.Context, k store.SessionKey, expected, rev int64) (int64, error) {
	step, err := s.st.SessionStepAt(ctx, k, rev)
	if errors.Is(err, store.ErrNotFound) {
		return 0, errs.New(ErrNoStep, map[string]any{"state_rev": rev}, "this session keeps no step %d to go back to; it keeps the latest %d", rev, MaxSteps)
	}
	if err != nil {
		return 0, err
	}
	ok, err := s.Advance(ctx, k, expected, []byte(step.State), step.RunID)
	if err != nil {
		return 0, err
	}
	if !ok {
		cur, _ := s.Get(ctx, k)
		return 0, conflict(expected, cur.StateRev)
	}
	return expected + 1, nil
}

// Copy makes session to continue from session from: from's state, latest run (whose
// next actions it offers) and files; or, when rev is not nil, the state and run of
// from's kept step rev, with from's files (they belong to the session, not to a step).
// expected is to's current revision (0: to has no session yet); when to has moved on,
// nothing is copied. It returns to's new revision.
func (s *Service) Copy(ctx context.Context, from, to store.SessionKey, expected int64, rev *int64) (int64, error) {
	src, err := s.Get(ctx, from)
	if err != nil {
		return 0, err
	}
	if rev != nil {
		step, err := s.st.SessionStepAt(ctx, from, *rev)
		if errors.Is(err, store.ErrNotFound) {
			return 0, errs.New(ErrNoStep, map[string]any{"state_rev": *rev},
				"the session to go on from keeps no step %d; it keeps the latest %d", *rev, MaxSteps)
		}
		if err != nil {
			return 0, err
		}
		src.State, src.LatestRunID = step.State, step.RunID
	}
	var current int64
	switch cur, err := s.Get(ctx, to); {
	case err == nil:
		current = cur.StateRev
	case !errors.Is(err, ErrNoSession):
		return 0, err
	}
	if current != expected {
		return 0, conflict(expected, current)
	}
	// The files first: a copy that fails there leaves to's state as it was.
	files, _, err := s.Files(ctx, from)
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		if _, _, err := s.Clear(ctx, to); err != nil {
			return 0, err
		}
	} else {
		dir, err := os.MkdirTemp("", "skrip-session-copy-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		if _, err := s.Inject(ctx, from, dir); err != nil {
			return 0, err
		}
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.Name
		}
		if err := s.Replace(ctx, to, dir, names); err != nil {
			return 0, err
		}
	}
	if expected == 0 {
		return s.Start(ctx, to, []byte(src.State), src.LatestRunID)
	}
	ok, err := s.Advance(ctx, to, expected, []byte(src.State), src.LatestRunID)
	if err != nil {
		return 0, err
	}
	if !ok {
		cur, _ := s.Get(ctx, to)
		return 0, conflict(expected, cur.StateRev)
	}
	return expected + 1, nil
}
