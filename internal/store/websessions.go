package store

import (
	"context"
	"fmt"
	"time"
)

// WebSession is a browser's sign-in. Only the hash of the cookie's secret is stored; ID
// is random, not derived from the secret, so that it can be shown and named in a URL.
type WebSession struct {
	ID     string
	Hash   string
	UserID string
	// CreatedAt is the sign-in; ExpiresAt the absolute end (SKRIP_WEB_SESSION_MAX after
	// it); LastSeenAt the last request, to the minute, for the idle expiry.
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastSeenAt time.Time
	// Address and UserAgent are the client's at sign-in.
	Address   string
	UserAgent string
}

const webSessionColsW = "w.id, w.hash, w.user_id, w.created_at, w.expires_at, w.last_seen_at, w.address, w.user_agent"

func scanWebSession(row interface{ Scan(...any) error }) (WebSession, error) {
	var ws WebSession
	var created, expires, seen int64
	if err := row.Scan(&ws.ID, &ws.Hash, &ws.UserID, &created, &expires, &seen, &ws.Address, &ws.UserAgent); err != nil {
		return WebSession{}, mapErr(err)
	}
	ws.CreatedAt, ws.ExpiresAt, ws.LastSeenAt = fromMS(created), fromMS(expires), fromMS(seen)
	return ws, nil
}

// CreateWebSession stores a sign-in. A zero LastSeenAt is the sign-in's time.
func (s *Store) CreateWebSession(ctx context.Context, ws WebSession) error {
	if ws.LastSeenAt.IsZero() {
		ws.LastSeenAt = ws.CreatedAt
	}
	_, err := s.exec(ctx, "INSERT INTO web_sessions (id, hash, user_id, created_at, expires_at, last_seen_at, address, user_agent) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		ws.ID, ws.Hash, ws.UserID, ms(ws.CreatedAt), ms(ws.ExpiresAt), ms(ws.LastSeenAt), ws.Address, ws.UserAgent)
	if err != nil {
		return fmt.Errorf("creating web session: %w", err)
	}
	return nil
}

// liveWebSession is the condition on w of a session that neither passed its absolute
// expiry nor was idle longer than idle (0: no idle expiry), by now.
const liveWebSession = "w.expires_at > ? AND w.last_seen_at > ?"

func liveArgs(now time.Time, idle time.Duration) []any {
	seen := int64(-1 << 62)
	if idle > 0 {
		seen = ms(now.Add(-idle))
	}
	return []any{ms(now), seen}
}

// WebSessionByHash returns the session of this hash and its user, if the session is
// live by now (neither past its expiry nor idle longer than idle) and the user is
// active; otherwise ErrNotFound.
func (s *Store) WebSessionByHash(ctx context.Context, hash string, now time.Time, idle time.Duration) (WebSession, User, error) {
	row := s.queryRow(ctx, "SELECT "+webSessionColsW+", "+userColsU+" FROM web_sessions w JOIN users u ON u.id = w.user_id"+
		" WHERE w.hash = ? AND "+liveWebSession+" AND u.state = 'active'", append([]any{hash}, liveArgs(now, idle)...)...)
	var ws WebSession
	var u User
	var created, expires, seen, ucreated int64
	err := row.Scan(&ws.ID, &ws.Hash, &ws.UserID, &created, &expires, &seen, &ws.Address, &ws.UserAgent,
		&u.ID, &u.Name, &u.Role, &u.PasswordHash, &ucreated, &u.State, &u.OIDCIssuer, &u.OIDCSubject)
	if err != nil {
		return WebSession{}, User{}, fmt.Errorf("web session: %w", mapErr(err))
	}
	ws.CreatedAt, ws.ExpiresAt, ws.LastSeenAt = fromMS(created), fromMS(expires), fromMS(seen)
	u.CreatedAt = fromMS(ucreated)
	return ws, u, nil
}

// UserByWebSession returns the user signed in with the session of this hash, if it has
// not expired by now (its absolute expiry only).
func (s *Store) UserByWebSession(ctx context.Context, hash string, now time.Time) (User, error) {
	_, u, err := s.WebSessionByHash(ctx, hash, now, 0)
	return u, err
}

// TouchWebSession records that the session id was used at now, unless that was already
// recorded less than every ago. It reports whether it wrote.
func (s *Store) TouchWebSession(ctx context.Context, id string, now time.Time, every time.Duration) (bool, error) {
	res, err := s.exec(ctx, "UPDATE web_sessions SET last_seen_at = ? WHERE id = ? AND last_seen_at <= ?", ms(now), id, ms(now.Add(-every)))
	if err != nil {
		return false, fmt.Errorf("recording a web session's use: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// WebSessions lists the user's live sessions (as WebSessionByHash counts them), the
// latest seen first.
func (s *Store) WebSessions(ctx context.Context, userID string, now time.Time, idle time.Duration) ([]WebSession, error) {
	rows, err := s.query(ctx, "SELECT "+webSessionColsW+" FROM web_sessions w WHERE w.user_id = ? AND "+liveWebSession+
		" ORDER BY w.last_seen_at DESC, w.id", append([]any{userID}, liveArgs(now, idle)...)...)
	return scanAll(rows, err, scanWebSession)
}

// DeleteWebSession ends a sign-in. Ending one that does not exist is not an error.
func (s *Store) DeleteWebSession(ctx context.Context, hash string) error {
	_, err := s.exec(ctx, "DELETE FROM web_sessions WHERE hash = ?", hash)
	return err
}

// DeleteWebSessionByID ends the user's sign-in id; ErrNotFound when the user has none
// of that id.
func (s *Store) DeleteWebSessionByID(ctx context.Context, userID, id string) error {
	res, err := s.exec(ctx, "DELETE FROM web_sessions WHERE user_id = ? AND id = ?", userID, id)
	if err != nil {
		return fmt.Errorf("ending a web session: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("web session %s: %w", id, ErrNotFound)
	}
	return nil
}

// DeleteUserWebSessions ends every sign-in of the user and says how many.
func (s *Store) DeleteUserWebSessions(ctx context.Context, userID string) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM web_sessions WHERE user_id = ?", userID)
	if err != nil {
		return 0, fmt.Errorf("ending web sessions: %w", err)
	}
	return res.RowsAffected()
}

// DeleteExpiredWebSessions removes sign-ins that expired before now, or were idle
// longer than idle (0: no idle expiry), and says how many.
func (s *Store) DeleteExpiredWebSessions(ctx context.Context, now time.Time, idle time.Duration) (int64, error) {
	args := liveArgs(now, idle)
	res, err := s.exec(ctx, "DELETE FROM web_sessions WHERE expires_at <= ? OR last_seen_at <= ?", args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
