package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// File is the index entry of a staged file; its bytes live in the blob store under Key.
type File struct {
	Key          string
	OwnerID      string
	Size         int64
	Checksum     string
	ContentType  string
	OriginalName string
	CreatedAt    time.Time
	ExpiresAt    *time.Time // nil: kept until deleted
	BlobKey      string     // where this version's bytes are; empty for a pending claim
}

const fileCols = "key, owner_id, size, checksum, content_type, original_name, created_at, expires_at, blob_key"

func scanFile(row interface{ Scan(...any) error }) (File, error) {
	var f File
	var created int64
	var expires sql.NullInt64
	if err := row.Scan(&f.Key, &f.OwnerID, &f.Size, &f.Checksum, &f.ContentType, &f.OriginalName, &created, &expires, &f.BlobKey); err != nil {
		return File{}, mapErr(err)
	}
	f.CreatedAt = fromMS(created)
	if expires.Valid {
		t := fromMS(expires.Int64)
		f.ExpiresAt = &t
	}
	return f, nil
}

func expiresArg(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ms(*t)
}

// Limits on committing a file.
var (
	// ErrOverQuota means the owner's files would pass their quota.
	ErrOverQuota = errors.New("over the user's quota")
	// ErrOverTotal means the store's files would pass its total.
	ErrOverTotal = errors.New("over the store's total")
)

// CommitFile makes f (whose bytes are already under f.BlobKey) the version of f.Key, in
// one transaction that checks, with everything committed before it counted, that the
// owner's files stay within userQuota and all files within maxTotal (the version it
// replaces not counted). It returns the replaced version's blob key, whose bytes the
// caller deletes. A key held by another user gives ErrConflict.
func (s *Store) CommitFile(ctx context.Context, f File, userQuota, maxTotal int64, now time.Time) (string, error) {
	var old string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			// One owner's commits run one at a time, so two of them cannot both pass
			// the quota. (SQLite transactions are serial already.)
			if _, err := tx.ExecContext(ctx, s.rebind("SELECT id FROM users WHERE id = ? FOR UPDATE"), f.OwnerID); err != nil {
				return err
			}
		}
		var owner string
		err := tx.QueryRowContext(ctx, s.rebind("SELECT owner_id, blob_key FROM files WHERE key = ?"), f.Key).Scan(&owner, &old)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			old = ""
		case err != nil:
			return err
		case owner != f.OwnerID:
			return fmt.Errorf("file %q belongs to another user: %w", f.Key, ErrConflict)
		}
		var user, total int64
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(SUM(CASE WHEN owner_id = ? THEN size ELSE 0 END), 0), COALESCE(SUM(size), 0)
			FROM files WHERE checksum <> '' AND key <> ? AND (expires_at IS NULL OR expires_at > ?)`), f.OwnerID, f.Key, ms(now)).Scan(&user, &total); err != nil {
			return err
		}
		if user+f.Size > userQuota {
			return fmt.Errorf("%d bytes held, %d more: %w", user, f.Size, ErrOverQuota)
		}
		if total+f.Size > maxTotal {
			return fmt.Errorf("%d bytes stored, %d more: %w", total, f.Size, ErrOverTotal)
		}
		_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO files (`+fileCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET size = excluded.size, checksum = excluded.checksum,
				content_type = excluded.content_type, original_name = excluded.original_name,
				created_at = excluded.created_at, expires_at = excluded.expires_at, blob_key = excluded.blob_key`),
			f.Key, f.OwnerID, f.Size, f.Checksum, f.ContentType, f.OriginalName, ms(f.CreatedAt), expiresArg(f.ExpiresAt), f.BlobKey)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("indexing file %q: %w", f.Key, err)
	}
	return old, nil
}

// FileAny returns the entry under key whoever owns it, expired or not.
func (s *Store) FileAny(ctx context.Context, key string) (File, error) {
	f, err := scanFile(s.queryRow(ctx, "SELECT "+fileCols+" FROM files WHERE key = ?", key))
	if err != nil {
		return File{}, fmt.Errorf("file %q: %w", key, err)
	}
	return f, nil
}

// FileUsage returns the bytes held by live (unexpired at now) files: of ownerID, and in all.
func (s *Store) FileUsage(ctx context.Context, ownerID string, now time.Time) (user, total int64, err error) {
	err = s.queryRow(ctx, `SELECT COALESCE(SUM(CASE WHEN owner_id = ? THEN size ELSE 0 END), 0), COALESCE(SUM(size), 0)
		FROM files WHERE checksum <> '' AND (expires_at IS NULL OR expires_at > ?)`, ownerID, ms(now)).Scan(&user, &total)
	return user, total, err
}

// ListFiles returns up to limit live files of ownerID whose key starts with prefix and
// sorts after the key after, in key order. Keys are ASCII, so "~" bounds a prefix range.
func (s *Store) ListFiles(ctx context.Context, ownerID, prefix, after string, limit int, now time.Time) ([]File, error) {
	rows, err := s.query(ctx, `SELECT `+fileCols+` FROM files
		WHERE owner_id = ? AND key >= ? AND key < ? AND key > ? AND checksum <> '' AND (expires_at IS NULL OR expires_at > ?)
		ORDER BY key LIMIT ?`, ownerID, prefix, prefix+"~", after, ms(now), limit)
	return scanAll(rows, err, scanFile)
}

// DeleteFile removes the entry under f.Key if it is still the version f (the same blob
// key), so a concurrent re-upload is never lost. It reports whether a row went.
func (s *Store) DeleteFile(ctx context.Context, f File) (bool, error) {
	res, err := s.exec(ctx, "DELETE FROM files WHERE key = ? AND blob_key = ? AND checksum = ?", f.Key, f.BlobKey, f.Checksum)
	if err != nil {
		return false, fmt.Errorf("deleting file %q: %w", f.Key, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// ExpiredFiles returns up to limit files whose expires_at is at or before now.
func (s *Store) ExpiredFiles(ctx context.Context, now time.Time, limit int) ([]File, error) {
	rows, err := s.query(ctx, "SELECT "+fileCols+" FROM files WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?", ms(now), limit)
	return scanAll(rows, err, scanFile)
}

// ClaimFileKey makes key ownerID's before any bytes are written under it: a new key gets a
// pending entry (empty checksum) that expires at pendingUntil unless PutFile fills it in.
// A key held by another user gives ErrConflict.
func (s *Store) ClaimFileKey(ctx context.Context, key, ownerID string, now, pendingUntil time.Time) (existing bool, err error) {
	res, err := s.exec(ctx, `INSERT INTO files (`+fileCols+`) VALUES (?, ?, 0, '', '', '', ?, ?, '') ON CONFLICT (key) DO NOTHING`,
		key, ownerID, ms(now), ms(pendingUntil))
	if err != nil {
		return false, fmt.Errorf("claiming key %q: %w", key, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return false, nil
	}
	var owner, checksum string
	if err := s.queryRow(ctx, "SELECT owner_id, checksum FROM files WHERE key = ?", key).Scan(&owner, &checksum); err != nil {
		return false, fmt.Errorf("claiming key %q: %w", key, mapErr(err))
	}
	if owner != ownerID {
		return false, fmt.Errorf("key %q is taken: %w", key, ErrConflict)
	}
	return checksum != "", nil
}

// DropPendingFile removes key's entry if it is still a pending claim.
func (s *Store) DropPendingFile(ctx context.Context, key string) error {
	_, err := s.exec(ctx, "DELETE FROM files WHERE key = ? AND checksum = ''", key)
	return err
}
