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
