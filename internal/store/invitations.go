package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Invitation is a link that lets one person make themselves a user of Role. Only the
// hash of its secret is stored.
type Invitation struct {
	ID        string
	Hash      string
	Role      string
	CreatedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
	UsedBy    string
}

// CreateInvitation stores an invitation.
func (s *Store) CreateInvitation(ctx context.Context, inv Invitation) error {
	_, err := s.exec(ctx, "INSERT INTO invitations (id, hash, role, created_by, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
		inv.ID, inv.Hash, inv.Role, inv.CreatedBy, ms(inv.CreatedAt), ms(inv.ExpiresAt))
	if err != nil {
		return fmt.Errorf("storing an invitation: %w", err)
	}
	return nil
}

// InvitationByHash returns the invitation of this hash, used or not.
func (s *Store) InvitationByHash(ctx context.Context, hash string) (Invitation, error) {
	var inv Invitation
	var created, expires int64
	var used sql.NullInt64
	var by sql.NullString
	err := s.queryRow(ctx, "SELECT id, hash, role, created_by, created_at, expires_at, used_at, used_by FROM invitations WHERE hash = ?", hash).
		Scan(&inv.ID, &inv.Hash, &inv.Role, &inv.CreatedBy, &created, &expires, &used, &by)
	if err != nil {
		return Invitation{}, fmt.Errorf("invitation: %w", mapErr(err))
	}
	inv.CreatedAt, inv.ExpiresAt, inv.UsedBy = fromMS(created), fromMS(expires), by.String
	if used.Valid {
		t := fromMS(used.Int64)
		inv.UsedAt = &t
	}
	return inv, nil
}

// AcceptInvitation marks the invitation id used at now and creates u in one transaction,
// unless it was used or expired meanwhile (ErrGone) or u's name is taken (ErrConflict,
// and the invitation stays unused). Of two that accept at once, one makes a user.
func (s *Store) AcceptInvitation(ctx context.Context, id string, u User, now time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind("UPDATE invitations SET used_at = ?, used_by = ? WHERE id = ? AND used_at IS NULL AND expires_at > ?"),
			ms(now), u.ID, id, ms(now))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrGone
		}
		if u.State == "" {
			u.State = StateActive
		}
		_, err = tx.ExecContext(ctx, s.rebind("INSERT INTO users (id, name, role, password_hash, created_at, state) VALUES (?, ?, ?, ?, ?, ?)"),
			u.ID, u.Name, u.Role, nullable(u.PasswordHash), ms(u.CreatedAt), u.State)
		return err
	})
	if err != nil {
		return fmt.Errorf("accepting invitation %s: %w", id, err)
	}
	return nil
}

// DeleteStaleInvitations removes invitations that expired before t, used or not, and
// says how many.
func (s *Store) DeleteStaleInvitations(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM invitations WHERE expires_at < ?", ms(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
