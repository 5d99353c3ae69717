package workflow

import (
	"context"
	"time"

	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// Session is user's session of tool in context c: its state and revision.
func (st *Service) Session(ctx context.Context, tool store.Tool, user store.User, c session.Context) (store.Session, error) {
	return st.sessions.Get(ctx, c.Key(tool.ID, user.ID))
}

// Files are the files kept with user's session of tool in c, and the set they belong to.
func (st *Service) Files(ctx context.Context, tool store.Tool, user store.User, c session.Context) ([]session.File, store.FileSet, error) {
	return st.sessions.Files(ctx, c.Key(tool.ID, user.ID))
}

// ClearFiles forgets the files kept with user's session of tool in c and says how many.
func (st *Service) ClearFiles(ctx context.Context, tool store.Tool, user store.User, c session.Context) (int, error) {
	n, _, err := st.sessions.Clear(ctx, c.Key(tool.ID, user.ID))
	return n, err
}

// FilesTTL is how long session files are kept after their last use.
func (st *Service) FilesTTL() time.Duration { return st.sessions.TTL() }

// RaceLost is the conflict to answer for action run rn, submitted at revision expected,
// that succeeded but lost the race for the session (LostRace): it names the revision
// the session is at now.
func (st *Service) RaceLost(ctx context.Context, rn store.Run, expected int64) error {
	cur, _ := st.sessions.Get(ctx, store.SessionKey{ToolID: rn.ToolID, UserID: rn.UserID, Context: rn.Context})
	return Conflict(expected, cur.StateRev)
}

// Steps lists the kept steps of user's session of tool in c, newest first (editor
// sessions keep their latest session.MaxSteps; production sessions keep none).
func (st *Service) Steps(ctx context.Context, tool store.Tool, user store.User, c session.Context) ([]store.SessionStep, error) {
	return st.sessions.Steps(ctx, c.Key(tool.ID, user.ID))
}

// GoBack makes step rev of user's session of tool in c current again, as revision
// expected+1; a session no longer at expected is a conflict and changes nothing.
func (st *Service) GoBack(ctx context.Context, tool store.Tool, user store.User, c session.Context, expected, rev int64) (int64, error) {
	return st.sessions.GoBack(ctx, c.Key(tool.ID, user.ID), expected, rev)
}

// ContinueFrom lets user's session of tool in context to go on from their session in
// context from (the editor sandbox of the previous version, say): its state, offered
// next actions and files. expected is to's current revision, 0 when it has none.
func (st *Service) ContinueFrom(ctx context.Context, tool store.Tool, user store.User, from, to session.Context, expected int64) (int64, error) {
	return st.sessions.Copy(ctx, from.Key(tool.ID, user.ID), to.Key(tool.ID, user.ID), expected)
}
