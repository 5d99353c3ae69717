package store

import (
	"context"
	"fmt"
	"time"
)

// Token is an API token. Only the hash of the secret is stored.
type Token struct {
	ID        string
	UserID    string
	Hash      string
	Name      string
	CreatedAt time.Time
}

// CreateToken stores a token. A hash already stored gives ErrConflict.
func (s *Store) CreateToken(ctx context.Context, t Token) error {
	_, err := s.exec(ctx, "INSERT INTO tokens (id, user_id, hash, name, created_at) VALUES (?, ?, ?, ?, ?)",
		t.ID, t.UserID, t.Hash, t.Name, ms(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("creating token: %w", err)
	}
	return nil
}

// EnsureToken stores t unless a token with the same hash exists for the same user. It
// returns ErrConflict when the hash belongs to another user.
func (s *Store) EnsureToken(ctx context.Context, t Token) error {
	_, err := s.exec(ctx, "INSERT INTO tokens (id, user_id, hash, name, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
		t.ID, t.UserID, t.Hash, t.Name, ms(t.CreatedAt))
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

// UserByTokenHash returns the user holding the token with this hash.
func (s *Store) UserByTokenHash(ctx context.Context, hash string) (User, error) {
	u, err := scanUser(s.queryRow(ctx, "SELECT "+userColsU+" FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ? AND u.state = 'active'", hash))
	if err != nil {
		return User{}, fmt.Errorf("token: %w", err)
	}
	return u, nil
}
