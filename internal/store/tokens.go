package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ScopeAll is the scope of a token that may do everything its user may.
const ScopeAll = "all"

// Token is an API token. Only the hash of the secret is stored.
type Token struct {
	ID     string
	UserID string
	Hash   string
	Name   string
	// Scope is "all" or a comma-separated subset of files, runs, sandboxes, read (package
	// account checks the words); empty is stored as "all".
	Scope     string
	CreatedAt time.Time
	// ExpiresAt is when the token stops working; zero: never.
	ExpiresAt time.Time
	// LastUsedAt is when the token was last used, to the minute; zero: never.
	LastUsedAt time.Time
	// UserName is the holder's name, filled in by the listings.
	UserName string
}

// nullMS is t in the stored form, or NULL for the zero time.
func nullMS(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ms(t)
}

// timeOrZero is a nullable stored time, the zero time for NULL.
func timeOrZero(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMS(v.Int64)
}

const tokenColsT = "t.id, t.user_id, t.hash, t.name, t.scope, t.created_at, t.expires_at, t.last_used_at, u.name"

func scanToken(row interface{ Scan(...any) error }) (Token, error) {
	var t Token
	var created int64
	var expires, used sql.NullInt64
	if err := row.Scan(&t.ID, &t.UserID, &t.Hash, &t.Name, &t.Scope, &created, &expires, &used, &t.UserName); err != nil {
		return Token{}, mapErr(err)
	}
	t.CreatedAt, t.ExpiresAt, t.LastUsedAt = fromMS(created), timeOrZero(expires), timeOrZero(used)
	return t, nil
}

func scopeOrAll(s string) string {
	if s == "" {
		return ScopeAll
	}
	return s
}

// CreateToken stores a token. A hash already stored gives ErrConflict.
func (s *Store) CreateToken(ctx context.Context, t Token) error {
	_, err := s.exec(ctx, "INSERT INTO tokens (id, user_id, hash, name, scope, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		t.ID, t.UserID, t.Hash, t.Name, scopeOrAll(t.Scope), ms(t.CreatedAt), nullMS(t.ExpiresAt))
	if err != nil {
		return fmt.Errorf("creating token: %w", err)
	}
	return nil
}

// EnsureToken stores t unless a token with the same hash exists for the same user. It
// returns ErrConflict when the hash belongs to another user.
func (s *Store) EnsureToken(ctx context.Context, t Token) error {
	_, err := s.exec(ctx, "INSERT INTO tokens (id, user_id, hash, name, scope, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
		t.ID, t.UserID, t.Hash, t.Name, scopeOrAll(t.Scope), ms(t.CreatedAt), nullMS(t.ExpiresAt))
	if err != nil {
		return fmt.Errorf("ensuring token: %w", err)
	}
	var owner string
	if err := s.queryRow(ctx, "SELECT user_id FROM tokens WHERE hash = ?", t.Hash).Scan(&owner); err != nil {
		return mapErr(err)
	}
	if owner != t.UserID {
		return fmt.Errorf("token is already issued to another user: %w", ErrConflict)
	}
	return nil
}

// TokenByHash returns the token with this hash and the user holding it, if the token has
// not expired by now and the user is active; otherwise ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash string, now time.Time) (Token, User, error) {
	row := s.queryRow(ctx, "SELECT "+tokenColsT+", "+userColsU+" FROM tokens t JOIN users u ON u.id = t.user_id"+
		" WHERE t.hash = ? AND u.state = 'active' AND (t.expires_at IS NULL OR t.expires_at > ?)", hash, ms(now))
	var t Token
	var u User
	var created, ucreated int64
	var expires, used sql.NullInt64
	err := row.Scan(&t.ID, &t.UserID, &t.Hash, &t.Name, &t.Scope, &created, &expires, &used, &t.UserName,
		&u.ID, &u.Name, &u.Role, &u.PasswordHash, &ucreated, &u.State, &u.OIDCIssuer, &u.OIDCSubject)
	if err != nil {
		return Token{}, User{}, fmt.Errorf("token: %w", mapErr(err))
	}
	t.CreatedAt, t.ExpiresAt, t.LastUsedAt = fromMS(created), timeOrZero(expires), timeOrZero(used)
	u.CreatedAt = fromMS(ucreated)
	return t, u, nil
}

// UserByTokenHash returns the user holding the token with this hash, if it has not
// expired.
func (s *Store) UserByTokenHash(ctx context.Context, hash string) (User, error) {
	_, u, err := s.TokenByHash(ctx, hash, time.Now())
	return u, err
}

// TouchToken records that the token id was used at now, unless that was already
// recorded less than every ago: a token used on every request is written at most once
// per every. It reports whether it wrote.
func (s *Store) TouchToken(ctx context.Context, id string, now time.Time, every time.Duration) (bool, error) {
	res, err := s.exec(ctx, "UPDATE tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)",
		ms(now), id, ms(now.Add(-every)))
	if err != nil {
		return false, fmt.Errorf("recording a token's use: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// Tokens lists the tokens of the user userID, or of every user when userID is "", oldest
// first, with their holders' names.
func (s *Store) Tokens(ctx context.Context, userID string) ([]Token, error) {
	q := "SELECT " + tokenColsT + " FROM tokens t JOIN users u ON u.id = t.user_id"
	var args []any
	if userID != "" {
		q += " WHERE t.user_id = ?"
		args = append(args, userID)
	}
	rows, err := s.query(ctx, q+" ORDER BY t.created_at, t.id", args...)
	return scanAll(rows, err, scanToken)
}

// Token returns the token id, with its holder's name.
func (s *Store) Token(ctx context.Context, id string) (Token, error) {
	t, err := scanToken(s.queryRow(ctx, "SELECT "+tokenColsT+" FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.id = ?", id))
	if err != nil {
		return Token{}, fmt.Errorf("token %s: %w", id, err)
	}
	return t, nil
}

// DeleteToken revokes the token id: its row goes, so the next request with it is
// refused. A token that does not exist gives ErrNotFound.
func (s *Store) DeleteToken(ctx context.Context, id string) error {
	res, err := s.exec(ctx, "DELETE FROM tokens WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("revoking token: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("token %s: %w", id, ErrNotFound)
	}
	return nil
}

// CountTokens says how many tokens the user holds.
func (s *Store) CountTokens(ctx context.Context, userID string) (int, error) {
	var n int
	if err := s.queryRow(ctx, "SELECT COUNT(*) FROM tokens WHERE user_id = ?", userID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting tokens: %w", err)
	}
	return n, nil
}
