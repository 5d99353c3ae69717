package store

import (
	"context"
	"fmt"
	"time"
)

// WebSession is a browser's sign-in. Only the hash of the cookie's secret is stored.
type WebSession struct {
	Hash      string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CreateWebSession stores a sign-in.
func (s *Store) CreateWebSession(ctx context.Context, ws WebSession) error {
	_, err := s.exec(ctx, "INSERT INTO web_sessions (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
		ws.Hash, ws.UserID, ms(ws.CreatedAt), ms(ws.ExpiresAt))
	if err != nil {
		return fmt.Errorf("creating web session: %w", err)
	}
	return nil
}

// UserByWebSession returns the user signed in with the session of this hash, if it has
// not expired by now.
func (s *Store) UserByWebSession(ctx context.Context, hash string, now time.Time) (User, error) {
	u, err := scanUser(s.queryRow(ctx, "SELECT "+userColsU+" FROM web_sessions w JOIN users u ON u.id = w.user_id WHERE w.hash = ? AND w.expires_at > ? AND u.state = 'active'", hash, ms(now)))
	if err != nil {
		return User{}, fmt.Errorf("web session: %w", err)
	}
	return u, nil
}

// DeleteWebSession ends a sign-in. Ending one that does not exist is not an error.
func (s *Store) DeleteWebSession(ctx context.Context, hash string) error {
	_, err := s.exec(ctx, "DELETE FROM web_sessions WHERE hash = ?", hash)
	return err
}

// DeleteExpiredWebSessions removes sign-ins that expired before now and says how many.
func (s *Store) DeleteExpiredWebSessions(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM web_sessions WHERE expires_at <= ?", ms(now))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
