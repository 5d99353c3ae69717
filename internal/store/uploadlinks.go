package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// UploadLink lets whoever holds its token upload a file to Key of OwnerID's, until
// ExpiresAt, Uses times, each file up to MaxBytes and of ContentTypes (any when empty).
// Only the SHA-256 of the token is stored.
type UploadLink struct {
	ID           string
	TokenHash    string
	OwnerID      string
	Key          string
	CreatedBy    string // the owner, or an admin
	CreatedAt    time.Time
	ExpiresAt    time.Time
	MaxBytes     int64
	ContentTypes []string // media types ("application/pdf", "image/*")
	Uses         int64
	Used         int64 // uploads begun and not given back
}

const uploadLinkCols = "id, token_hash, owner_id, key, created_by, created_at, expires_at, max_bytes, content_types, uses, used"

func scanUploadLink(row interface{ Scan(...any) error }) (UploadLink, error) {
	var l UploadLink
	var created, expires int64
	var types string
	if err := row.Scan(&l.ID, &l.TokenHash, &l.OwnerID, &l.Key, &l.CreatedBy, &created, &expires, &l.MaxBytes, &types, &l.Uses, &l.Used); err != nil {
		return UploadLink{}, mapErr(err)
	}
	l.CreatedAt, l.ExpiresAt = fromMS(created), fromMS(expires)
	if err := json.Unmarshal([]byte(types), &l.ContentTypes); err != nil {
		return UploadLink{}, fmt.Errorf("upload link %s: content types: %w", l.ID, err)
	}
	return l, nil
}

// ErrTooManyUploadLinks means the owner holds as many live upload links as one may.
var ErrTooManyUploadLinks = errors.New("too many upload links")

// CreateUploadLink stores l unless, at now, its owner already holds maxLive live links
// (unexpired, with a use left): ErrTooManyUploadLinks. The count and the insert are one
// transaction, and on PostgreSQL the owner's row is locked for it, so links made at once
// cannot together pass the limit.
func (s *Store) CreateUploadLink(ctx context.Context, l UploadLink, maxLive int, now time.Time) error {
	types, err := json.Marshal(append([]string{}, l.ContentTypes...))
	if err != nil {
		return err
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, s.rebind("SELECT id FROM users WHERE id = ? FOR UPDATE"), l.OwnerID); err != nil {
				return err
			}
		}
		var live int
		if err := s.txQueryRow(ctx, tx, "SELECT COUNT(*) FROM upload_links WHERE owner_id = ? AND expires_at > ? AND used < uses",
			l.OwnerID, ms(now)).Scan(&live); err != nil {
			return err
		}
		if live >= maxLive {
			return fmt.Errorf("%d live: %w", live, ErrTooManyUploadLinks)
		}
		_, err := s.txExec(ctx, tx, `INSERT INTO upload_links (`+uploadLinkCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
			l.ID, l.TokenHash, l.OwnerID, l.Key, l.CreatedBy, ms(l.CreatedAt), ms(l.ExpiresAt), l.MaxBytes, string(types), l.Uses)
		return err
	})
	if err != nil {
		return fmt.Errorf("creating an upload link to %q: %w", l.Key, err)
	}
	return nil
}

// UploadLinks returns ownerID's upload links that have not expired at now, newest first.
func (s *Store) UploadLinks(ctx context.Context, ownerID string, now time.Time) ([]UploadLink, error) {
	rows, err := s.query(ctx, "SELECT "+uploadLinkCols+" FROM upload_links WHERE owner_id = ? AND expires_at > ? ORDER BY created_at DESC, id DESC",
		ownerID, ms(now))
	return scanAll(rows, err, scanUploadLink)
}

// UploadLinkByToken returns the upload link whose token hashes to tokenHash, expired or
// not, if its owner is active.
func (s *Store) UploadLinkByToken(ctx context.Context, tokenHash string) (UploadLink, error) {
	l, err := scanUploadLink(s.queryRow(ctx, "SELECT "+uploadLinkCols+" FROM upload_links WHERE token_hash = ? AND EXISTS (SELECT 1 FROM users u WHERE u.id = upload_links.owner_id AND u.state = 'active')", tokenHash))
	if err != nil {
		return UploadLink{}, fmt.Errorf("upload link: %w", err)
	}
	return l, nil
}

// ReserveUploadLinkUse takes one use of link id for an upload that may stream until
// busy, if at now it has not expired, a use is left and no other upload streams through
// it. It is one conditional UPDATE: of uploads racing on several API nodes, one gets it.
// It reports whether this one did.
func (s *Store) ReserveUploadLinkUse(ctx context.Context, id string, now, busy time.Time) (bool, error) {
	res, err := s.exec(ctx, "UPDATE upload_links SET used = used + 1, busy_until = ? WHERE id = ? AND expires_at > ? AND used < uses AND busy_until <= ?",
		ms(busy), id, ms(now), ms(now))
	if err != nil {
		return false, fmt.Errorf("reserving a use of upload link %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// EndUploadLinkUse frees link id for the next upload once one has ended, giving its use
// back when it stored nothing.
func (s *Store) EndUploadLinkUse(ctx context.Context, id string, stored bool) error {
	back := 1
	if stored {
		back = 0
	}
	if _, err := s.exec(ctx, "UPDATE upload_links SET used = CASE WHEN used >= ? THEN used - ? ELSE 0 END, busy_until = 0 WHERE id = ?", back, back, id); err != nil {
		return fmt.Errorf("ending an upload through link %s: %w", id, err)
	}
	return nil
}

// DeleteUploadLink removes ownerID's upload link id, and reports whether it was there.
func (s *Store) DeleteUploadLink(ctx context.Context, ownerID, id string) (bool, error) {
	res, err := s.exec(ctx, "DELETE FROM upload_links WHERE owner_id = ? AND id = ?", ownerID, id)
	if err != nil {
		return false, fmt.Errorf("deleting upload link %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// DeleteExpiredUploadLinks removes every upload link that expired at or before now, and
// returns how many went.
func (s *Store) DeleteExpiredUploadLinks(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM upload_links WHERE expires_at <= ?", ms(now))
	if err != nil {
		return 0, fmt.Errorf("deleting expired upload links: %w", err)
	}
	return res.RowsAffected()
}
