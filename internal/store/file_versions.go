package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// FileVersion is a previous version of a staged file, kept when its key was overwritten
// (SKRIP_FILES_VERSIONS). It belongs to the file (OwnerID, Key): it is counted, listed,
// expired and deleted with it. Its bytes live under BlobKey until it is trimmed or its
// file goes, when they are retired.
type FileVersion struct {
	ID           string // v_<ULID>: the id the version had while it was the file
	OwnerID      string
	Key          string
	Size         int64
	Checksum     string
	ContentType  string
	OriginalName string
	CreatedAt    time.Time // when it was uploaded
	ReplacedAt   time.Time // when a newer version replaced it
	BlobKey      string
	seq          int64 // the order of a key's versions, the newest highest
}

const fileVersionCols = "seq, id, owner_id, key, size, checksum, content_type, original_name, created_at, replaced_at, blob_key"

func scanFileVersion(row interface{ Scan(...any) error }) (FileVersion, error) {
	var v FileVersion
	var created, replaced int64
	if err := row.Scan(&v.seq, &v.ID, &v.OwnerID, &v.Key, &v.Size, &v.Checksum, &v.ContentType, &v.OriginalName, &created, &replaced, &v.BlobKey); err != nil {
		return FileVersion{}, mapErr(err)
	}
	v.CreatedAt, v.ReplacedAt = fromMS(created), fromMS(replaced)
	return v, nil
}

// FileVersions returns the kept versions of ownerID's file under key, the newest first,
// whether the file is live or not (the caller checks).
func (s *Store) FileVersions(ctx context.Context, ownerID, key string) ([]FileVersion, error) {
	rows, err := s.query(ctx, "SELECT "+fileVersionCols+" FROM file_versions WHERE owner_id = ? AND key = ? ORDER BY seq DESC", ownerID, key)
	out, err := scanAll(rows, err, scanFileVersion)
	if err != nil {
		return nil, fmt.Errorf("versions of %q: %w", key, err)
	}
	return out, nil
}

// FileVersionsIn returns the kept versions of ownerID's files whose keys are from first
// to last (inclusive, in key order), the newest of each key first: the versions of one
// page of a listing in one query.
func (s *Store) FileVersionsIn(ctx context.Context, ownerID, first, last string) ([]FileVersion, error) {
	rows, err := s.query(ctx, "SELECT "+fileVersionCols+" FROM file_versions WHERE owner_id = ? AND key >= ? AND key <= ? ORDER BY key, seq DESC",
		ownerID, first, last)
	out, err := scanAll(rows, err, scanFileVersion)
	if err != nil {
		return nil, fmt.Errorf("versions of the files from %q to %q: %w", first, last, err)
	}
	return out, nil
}

// FileVersionByID returns ownerID's kept version id of the file under key.
func (s *Store) FileVersionByID(ctx context.Context, ownerID, key, id string) (FileVersion, error) {
	v, err := scanFileVersion(s.queryRow(ctx, "SELECT "+fileVersionCols+" FROM file_versions WHERE owner_id = ? AND key = ? AND id = ?", ownerID, key, id))
	if err != nil {
		return FileVersion{}, fmt.Errorf("version %s of %q: %w", id, key, err)
	}
	return v, nil
}

// txFileVersions is FileVersions inside tx.
func (s *Store) txFileVersions(ctx context.Context, tx *sql.Tx, ownerID, key string) ([]FileVersion, error) {
	rows, err := tx.QueryContext(ctx, s.rebind("SELECT "+fileVersionCols+" FROM file_versions WHERE owner_id = ? AND key = ? ORDER BY seq DESC"), ownerID, key)
	return scanAll(rows, err, scanFileVersion)
}

// keptVersions splits a key's versions, the newest first, as a commit that replaces old
// leaves them: kept (old, when it was live and keep is above 0, then the newest of the
// rest) and gone (the others, old included when it is not kept). A replaced version that
// was pending has no bytes, and one that had expired takes its versions with it.
func keptVersions(old File, versions []FileVersion, keep int, now time.Time) (kept, gone []FileVersion) {
	live := old.Checksum != "" && (old.ExpiresAt == nil || old.ExpiresAt.After(now))
	all := versions
	if old.BlobKey != "" {
		all = append([]FileVersion{{ID: old.VersionID, OwnerID: old.OwnerID, Key: old.Key, Size: old.Size, Checksum: old.Checksum,
			ContentType: old.ContentType, OriginalName: old.OriginalName, CreatedAt: old.CreatedAt, ReplacedAt: now, BlobKey: old.BlobKey}}, versions...)
	}
	if !live || keep <= 0 {
		return nil, all
	}
	n := min(keep, len(all))
	return all[:n], all[n:]
}

// replaceVersions stores the outcome of keptVersions: the replaced version, when kept
// (the one not stored yet), as the newest; the gone ones removed and their bytes retired
// at now.
func (s *Store) replaceVersions(ctx context.Context, tx *sql.Tx, kept, gone []FileVersion, now time.Time) error {
	if len(kept) > 0 && kept[0].seq == 0 {
		v := kept[0]
		_, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO file_versions (id, owner_id, key, size, checksum, content_type, original_name, created_at, replaced_at, blob_key)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			v.ID, v.OwnerID, v.Key, v.Size, v.Checksum, v.ContentType, v.OriginalName, ms(v.CreatedAt), ms(v.ReplacedAt), v.BlobKey)
		if err != nil {
			return err
		}
	}
	for _, v := range gone {
		if v.seq != 0 {
			if _, err := tx.ExecContext(ctx, s.rebind("DELETE FROM file_versions WHERE seq = ?"), v.seq); err != nil {
				return err
			}
		}
		if err := s.retire(ctx, tx, v.OwnerID, v.BlobKey, v.Size, now); err != nil {
			return err
		}
	}
	return nil
}

// dropVersions removes every kept version of ownerID's file under key and retires their
// bytes at now.
func (s *Store) dropVersions(ctx context.Context, tx *sql.Tx, ownerID, key string, now time.Time) error {
	versions, err := s.txFileVersions(ctx, tx, ownerID, key)
	if err != nil {
		return err
	}
	return s.replaceVersions(ctx, tx, nil, versions, now)
}

// TrimFileVersions retires up to limit kept versions beyond the keep newest of their key
// (all of them when keep is 0), the oldest first, at now: what is left when the setting
// was lowered. It returns how many it trimmed; fewer than limit means none are left.
func (s *Store) TrimFileVersions(ctx context.Context, keep, limit int, now time.Time) (int, error) {
	// The versions that keep or more newer ones of their key outrank.
	rows, err := s.query(ctx, "SELECT "+fileVersionCols+` FROM file_versions v
		WHERE (SELECT COUNT(*) FROM file_versions n WHERE n.owner_id = v.owner_id AND n.key = v.key AND n.seq > v.seq) >= ?
		ORDER BY seq LIMIT ?`, keep, limit)
	extra, err := scanAll(rows, err, scanFileVersion)
	if err != nil {
		return 0, fmt.Errorf("finding versions to trim: %w", err)
	}
	n := 0
	for _, v := range extra {
		err := s.tx(ctx, func(tx *sql.Tx) error {
			if err := s.lockOwner(ctx, tx, v.OwnerID); err != nil {
				return err
			}
			// Still there (a delete may have taken it meanwhile): then retire it.
			res, err := tx.ExecContext(ctx, s.rebind("DELETE FROM file_versions WHERE seq = ?"), v.seq)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k == 0 {
				return nil
			}
			n++
			return s.retire(ctx, tx, v.OwnerID, v.BlobKey, v.Size, now)
		})
		if err != nil {
			return n, fmt.Errorf("trimming version %s of %q: %w", v.ID, v.Key, err)
		}
	}
	return n, nil
}
