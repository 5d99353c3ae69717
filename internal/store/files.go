package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// File is the index entry of a staged file. Keys are a per-owner namespace: a file is
// (OwnerID, Key), and its bytes live in the blob store under BlobKey.
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

// CommitFile makes f (whose bytes are already under f.BlobKey) the version of f.Key in
// f.OwnerID's files, in one transaction that checks, with everything committed before it
// counted, that the owner's files stay within userQuota and all files within maxTotal (the
// version it replaces not counted). The replaced version's bytes are retired at now, in
// the same transaction: see RetiredFileBlobs.
func (s *Store) CommitFile(ctx context.Context, f File, userQuota, maxTotal int64, now time.Time) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			// One owner's commits run one at a time, so two of them cannot both pass
			// the quota. (SQLite transactions are serial already.)
			if _, err := tx.ExecContext(ctx, s.rebind("SELECT id FROM users WHERE id = ? FOR UPDATE"), f.OwnerID); err != nil {
				return err
			}
		}
		var old string
		var oldSize int64
		err := tx.QueryRowContext(ctx, s.rebind("SELECT blob_key, size FROM files WHERE owner_id = ? AND key = ?"), f.OwnerID, f.Key).Scan(&old, &oldSize)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			old = ""
		case err != nil:
			return err
		}
		var user, total int64
		if err := tx.QueryRowContext(ctx, s.rebind(`SELECT COALESCE(SUM(CASE WHEN owner_id = ? THEN size ELSE 0 END), 0), COALESCE(SUM(size), 0)
			FROM files WHERE checksum <> '' AND NOT (owner_id = ? AND key = ?) AND (expires_at IS NULL OR expires_at > ?)`),
			f.OwnerID, f.OwnerID, f.Key, ms(now)).Scan(&user, &total); err != nil {
			return err
		}
		if user+f.Size > userQuota {
			return fmt.Errorf("%d bytes held, %d more: %w", user, f.Size, ErrOverQuota)
		}
		if total+f.Size > maxTotal {
			return fmt.Errorf("%d bytes stored, %d more: %w", total, f.Size, ErrOverTotal)
		}
		_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO files (`+fileCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (owner_id, key) DO UPDATE SET size = excluded.size, checksum = excluded.checksum,
				content_type = excluded.content_type, original_name = excluded.original_name,
				created_at = excluded.created_at, expires_at = excluded.expires_at, blob_key = excluded.blob_key`),
			f.Key, f.OwnerID, f.Size, f.Checksum, f.ContentType, f.OriginalName, ms(f.CreatedAt), expiresArg(f.ExpiresAt), f.BlobKey)
		if err != nil || old == "" || old == f.BlobKey {
			return err
		}
		return s.retire(ctx, tx, old, oldSize, now)
	})
	if err != nil {
		return fmt.Errorf("indexing file %q: %w", f.Key, err)
	}
	return nil
}

// retire records that no file version points to blobKey any more.
func (s *Store) retire(ctx context.Context, tx *sql.Tx, blobKey string, size int64, now time.Time) error {
	_, err := tx.ExecContext(ctx, s.rebind("INSERT INTO retired_file_blobs (blob_key, size, retired_at) VALUES (?, ?, ?) ON CONFLICT (blob_key) DO NOTHING"),
		blobKey, size, ms(now))
	return err
}

// RetiredBlob is the bytes of a file version that was replaced, deleted or expired.
type RetiredBlob struct {
	BlobKey   string
	Size      int64
	RetiredAt time.Time
}

// RetiredFileBlobs returns up to limit retired blobs, retired at or before before, the
// oldest first. Their bytes stay in the blob store, so that a download that opened the
// version finishes whole, until the caller deletes them and drops them here.
func (s *Store) RetiredFileBlobs(ctx context.Context, before time.Time, limit int) ([]RetiredBlob, error) {
	rows, err := s.query(ctx, "SELECT blob_key, size, retired_at FROM retired_file_blobs WHERE retired_at <= ? ORDER BY retired_at, blob_key LIMIT ?", ms(before), limit)
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (RetiredBlob, error) {
		var b RetiredBlob
		var at int64
		if err := row.Scan(&b.BlobKey, &b.Size, &at); err != nil {
			return RetiredBlob{}, err
		}
		b.RetiredAt = fromMS(at)
		return b, nil
	})
}

// DropRetiredFileBlob forgets a retired blob whose bytes are deleted.
func (s *Store) DropRetiredFileBlob(ctx context.Context, blobKey string) error {
	_, err := s.exec(ctx, "DELETE FROM retired_file_blobs WHERE blob_key = ?", blobKey)
	return err
}

// RetiredFileBytes is the size of every retired blob together.
func (s *Store) RetiredFileBytes(ctx context.Context) (int64, error) {
	var n int64
	err := s.queryRow(ctx, "SELECT COALESCE(SUM(size), 0) FROM retired_file_blobs").Scan(&n)
	return n, err
}

// FileOf returns ownerID's entry under key, expired or pending or not.
func (s *Store) FileOf(ctx context.Context, ownerID, key string) (File, error) {
	f, err := scanFile(s.queryRow(ctx, "SELECT "+fileCols+" FROM files WHERE owner_id = ? AND key = ?", ownerID, key))
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

// DeleteFile removes f.OwnerID's entry under f.Key if it is still the version f (the same
// blob key), so a concurrent re-upload is never lost, and retires its bytes at now in the
// same transaction. It reports whether a row went.
func (s *Store) DeleteFile(ctx context.Context, f File, now time.Time) (bool, error) {
	var gone bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind("DELETE FROM files WHERE owner_id = ? AND key = ? AND blob_key = ? AND checksum = ?"),
			f.OwnerID, f.Key, f.BlobKey, f.Checksum)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		if gone = n > 0; !gone || f.BlobKey == "" {
			return nil
		}
		return s.retire(ctx, tx, f.BlobKey, f.Size, now)
	})
	if err != nil {
		return false, fmt.Errorf("deleting file %q: %w", f.Key, err)
	}
	return gone, nil
}

// ExpiredFiles returns up to limit files whose expires_at is at or before now.
func (s *Store) ExpiredFiles(ctx context.Context, now time.Time, limit int) ([]File, error) {
	rows, err := s.query(ctx, "SELECT "+fileCols+" FROM files WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?", ms(now), limit)
	return scanAll(rows, err, scanFile)
}

// ClaimFileKey makes key ownerID's before any bytes are written under it: a new key gets a
// pending entry (empty checksum) that expires at pendingUntil unless CommitFile fills it
// in. It reports whether the owner already has a file under key.
func (s *Store) ClaimFileKey(ctx context.Context, ownerID, key string, now, pendingUntil time.Time) (existing bool, err error) {
	// The entry found may be a concurrent upload's claim that it drops before it is read:
	// then claim again.
	for range 3 {
		res, err := s.exec(ctx, `INSERT INTO files (`+fileCols+`) VALUES (?, ?, 0, '', '', '', ?, ?, '') ON CONFLICT (owner_id, key) DO NOTHING`,
			key, ownerID, ms(now), ms(pendingUntil))
		if err != nil {
			return false, fmt.Errorf("claiming key %q: %w", key, err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			return false, nil
		}
		var checksum string
		err = s.queryRow(ctx, "SELECT checksum FROM files WHERE owner_id = ? AND key = ?", ownerID, key).Scan(&checksum)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("claiming key %q: %w", key, mapErr(err))
		}
		return checksum != "", nil
	}
	return false, fmt.Errorf("claiming key %q: its entry keeps coming and going", key)
}

// DropPendingFile removes ownerID's entry under key if it is still a pending claim.
func (s *Store) DropPendingFile(ctx context.Context, ownerID, key string) error {
	_, err := s.exec(ctx, "DELETE FROM files WHERE owner_id = ? AND key = ? AND checksum = ''", ownerID, key)
	return err
}
