package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/skrip-dev/skrip/internal/ids"
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
	// VersionID names this version (v_<ULID>); it keeps it when a newer one replaces it
	// and it is kept as a FileVersion. Empty for a pending claim.
	VersionID string
}

const fileCols = "key, owner_id, size, checksum, content_type, original_name, created_at, expires_at, blob_key, version_id"

func scanFile(row interface{ Scan(...any) error }) (File, error) {
	var f File
	var created int64
	var expires sql.NullInt64
	if err := row.Scan(&f.Key, &f.OwnerID, &f.Size, &f.Checksum, &f.ContentType, &f.OriginalName, &created, &expires, &f.BlobKey, &f.VersionID); err != nil {
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
// counted, that the owner's files stay within userQuota and all files within maxTotal.
// Kept versions count: the key's own are counted as they will be after the commit. The
// version f replaces becomes the newest of the key's kept versions when keep is above 0
// and it was live; the versions beyond keep, or all of them when the replaced version had
// expired, are retired at now in the same transaction (see RetiredFileBlobs), and so are
// the replaced version's bytes when it is not kept.
func (s *Store) CommitFile(ctx context.Context, f File, keep int, userQuota, maxTotal int64, now time.Time) error {
	return s.CommitFileIf(ctx, f, nil, keep, userQuota, maxTotal, now)
}

// CommitFileIf is CommitFile for a conditional write (If-Match, If-None-Match): inside
// the transaction, with the owner's files locked (lockOwner), check is given the live
// file f replaces (nil when the key holds none, or only a pending claim or an expired
// file), and an error from it commits nothing and is returned as it is. So the check and
// the write are one step: of two writers whose condition names the same version, one
// commits and the other's check sees the first's version. A nil check is CommitFile.
func (s *Store) CommitFileIf(ctx context.Context, f File, check func(current *File) error, keep int, userQuota, maxTotal int64, now time.Time) error {
	if f.VersionID == "" {
		// Every committed version has an id: a kept version is named by it.
		f.VersionID = ids.New("v")
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockOwner(ctx, tx, f.OwnerID); err != nil {
			return err
		}
		old, err := scanFile(tx.QueryRowContext(ctx, s.rebind("SELECT "+fileCols+" FROM files WHERE owner_id = ? AND key = ?"), f.OwnerID, f.Key))
		switch {
		case errors.Is(err, ErrNotFound):
			old = File{}
		case err != nil:
			return err
		}
		if check != nil {
			var cur *File
			if old.Checksum != "" && (old.ExpiresAt == nil || old.ExpiresAt.After(now)) {
				cur = &old
			}
			if err := check(cur); err != nil {
				return err
			}
		}
		versions, err := s.txFileVersions(ctx, tx, f.OwnerID, f.Key)
		if err != nil {
			return err
		}
		kept, gone := versions, []FileVersion(nil) // a commit of the same bytes again replaces nothing
		if old.BlobKey != f.BlobKey {
			kept, gone = keptVersions(old, versions, keep, now)
		}
		// Everything else the owner holds counts, old bytes not yet freed included, but
		// no upload's reservation (usageExcept.reservations); the key's own file and
		// versions are counted as they will be after the commit.
		u, total, err := s.usage(ctx, tx, f.OwnerID, usageExcept{key: f.Key, reservations: true}, now)
		if err != nil {
			return err
		}
		user := u.Total()
		held := f.Size
		for _, v := range kept {
			held += v.Size
		}
		if user+held > userQuota {
			return fmt.Errorf("%d bytes held, %d more: %w", user, held, ErrOverQuota)
		}
		if total+held > maxTotal {
			return fmt.Errorf("%d bytes stored, %d more: %w", total, held, ErrOverTotal)
		}
		_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO files (`+fileCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (owner_id, key) DO UPDATE SET size = excluded.size, checksum = excluded.checksum,
				content_type = excluded.content_type, original_name = excluded.original_name,
				created_at = excluded.created_at, expires_at = excluded.expires_at, blob_key = excluded.blob_key,
				version_id = excluded.version_id`),
			f.Key, f.OwnerID, f.Size, f.Checksum, f.ContentType, f.OriginalName, ms(f.CreatedAt), expiresArg(f.ExpiresAt), f.BlobKey, f.VersionID)
		if err != nil {
			return err
		}
		return s.replaceVersions(ctx, tx, kept, gone, now)
	})
	if err != nil {
		return fmt.Errorf("indexing file %q: %w", f.Key, err)
	}
	return nil
}

// lockOwner makes tx the only one changing ownerID's files until it ends: one owner's
// commits, deletes and trims run one at a time, so two commits cannot both pass the quota
// and a version is never both kept and retired. (SQLite transactions are serial already.)
func (s *Store) lockOwner(ctx context.Context, tx *sql.Tx, ownerID string) error {
	if s.dialect != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, s.rebind("SELECT id FROM users WHERE id = ? FOR UPDATE"), ownerID)
	return err
}

// retire records that no file version points to blobKey any more. Its bytes count
// against ownerID's quota until they are deleted.
func (s *Store) retire(ctx context.Context, tx *sql.Tx, ownerID, blobKey string, size int64, now time.Time) error {
	_, err := tx.ExecContext(ctx, s.rebind("INSERT INTO retired_file_blobs (blob_key, size, retired_at, owner_id) VALUES (?, ?, ?, ?) ON CONFLICT (blob_key) DO NOTHING"),
		blobKey, size, ms(now), ownerID)
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
	return scanAll(rows, err, scanRetired)
}

func scanRetired(row interface{ Scan(...any) error }) (RetiredBlob, error) {
	var b RetiredBlob
	var at int64
	if err := row.Scan(&b.BlobKey, &b.Size, &at); err != nil {
		return RetiredBlob{}, err
	}
	b.RetiredAt = fromMS(at)
	return b, nil
}

// DropRetiredFileBlob forgets a retired blob whose bytes are deleted.
func (s *Store) DropRetiredFileBlob(ctx context.Context, blobKey string) error {
	_, err := s.exec(ctx, "DELETE FROM retired_file_blobs WHERE blob_key = ?", blobKey)
	return err
}

// FileOf returns ownerID's entry under key, expired or pending or not.
func (s *Store) FileOf(ctx context.Context, ownerID, key string) (File, error) {
	f, err := scanFile(s.queryRow(ctx, "SELECT "+fileCols+" FROM files WHERE owner_id = ? AND key = ?", ownerID, key))
	if err != nil {
		return File{}, fmt.Errorf("file %q: %w", key, err)
	}
	return f, nil
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
// blob key), so a concurrent re-upload is never lost, with the versions it kept, and
// retires all their bytes at now in the same transaction. It reports whether a row went.
func (s *Store) DeleteFile(ctx context.Context, f File, now time.Time) (bool, error) {
	var gone bool
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockOwner(ctx, tx, f.OwnerID); err != nil {
			return err
		}
		var n int
		err := tx.QueryRowContext(ctx, s.rebind("SELECT COUNT(*) FROM files WHERE owner_id = ? AND key = ? AND blob_key = ? AND checksum = ?"),
			f.OwnerID, f.Key, f.BlobKey, f.Checksum).Scan(&n)
		if err != nil || n == 0 {
			return err
		}
		gone = true
		// The versions first: deleting the file's row deletes their rows too.
		if err := s.dropVersions(ctx, tx, f.OwnerID, f.Key, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind("DELETE FROM files WHERE owner_id = ? AND key = ?"), f.OwnerID, f.Key); err != nil {
			return err
		}
		if f.BlobKey == "" {
			return nil
		}
		return s.retire(ctx, tx, f.OwnerID, f.BlobKey, f.Size, now)
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
		res, err := s.exec(ctx, `INSERT INTO files (`+fileCols+`) VALUES (?, ?, 0, '', '', '', ?, ?, '', '') ON CONFLICT (owner_id, key) DO NOTHING`,
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
