package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Usage is what one user holds in the store, by kind, in bytes (SPEC §12 "One quota per
// user": everything a user makes counts against their quota).
type Usage struct {
	Files        int64 // live staged files
	Versions     int64 // the previous versions kept of them
	Uploads      int64 // reserved by unfinished resumable uploads
	Runs         int64 // runs' kept artifacts, outputs and logs, until the artifacts expire
	SessionFiles int64 // the current file sets of the user's tool sessions
	Retained     int64 // old bytes of overwritten, deleted or expired files, until they are freed
}

// Total is every kind together: what the quota is checked against.
func (u Usage) Total() int64 {
	return u.Files + u.Versions + u.Uploads + u.Runs + u.SessionFiles + u.Retained
}

// usageExcept names what a usage question leaves out: what the change being checked
// replaces, or its own reservation.
type usageExcept struct {
	key     string      // the owner's file under key and its versions
	upload  string      // the reservation of this upload
	session *SessionKey // this session's file set
	// reservations leaves out every unfinished upload's reservation, the owner's and
	// everyone's: a commit is checked beside what is stored. Each reservation was checked
	// when its upload was created, and the one being finished is its file.
	reservations bool
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// usageQuery sums each kind for one owner and for everyone; the arguments are bound in
// usage below, in this order.
const usageQuery = `SELECT
	(SELECT COALESCE(SUM(size), 0) FROM files WHERE owner_id = ? AND key <> ? AND checksum <> '' AND (expires_at IS NULL OR expires_at > ?)),
	(SELECT COALESCE(SUM(size), 0) FROM files WHERE NOT (owner_id = ? AND key = ?) AND checksum <> '' AND (expires_at IS NULL OR expires_at > ?)),
	(SELECT COALESCE(SUM(v.size), 0) FROM file_versions v JOIN files f ON f.owner_id = v.owner_id AND f.key = v.key
		WHERE v.owner_id = ? AND v.key <> ? AND f.checksum <> '' AND (f.expires_at IS NULL OR f.expires_at > ?)),
	(SELECT COALESCE(SUM(v.size), 0) FROM file_versions v JOIN files f ON f.owner_id = v.owner_id AND f.key = v.key
		WHERE NOT (v.owner_id = ? AND v.key = ?) AND f.checksum <> '' AND (f.expires_at IS NULL OR f.expires_at > ?)),
	(SELECT COALESCE(SUM(size), 0) FROM uploads WHERE owner_id = ? AND id <> ? AND finished_at IS NULL AND expires_at > ?),
	(SELECT COALESCE(SUM(size), 0) FROM uploads WHERE id <> ? AND finished_at IS NULL AND expires_at > ?),
	(SELECT COALESCE(SUM(held_bytes), 0) FROM runs WHERE user_id = ? AND held_bytes > 0),
	(SELECT COALESCE(SUM(held_bytes), 0) FROM runs WHERE held_bytes > 0),
	(SELECT COALESCE(SUM(bytes), 0) FROM session_files WHERE user_id = ? AND NOT (tool_id = ? AND user_id = ? AND context = ?)),
	(SELECT COALESCE(SUM(bytes), 0) FROM session_files WHERE NOT (tool_id = ? AND user_id = ? AND context = ?)),
	(SELECT COALESCE(SUM(size), 0) FROM retired_file_blobs WHERE owner_id = ?),
	(SELECT COALESCE(SUM(size), 0) FROM retired_file_blobs)`

// usage returns, through q at now, what ownerID holds by kind and what everyone holds in
// all, both without what ex leaves out.
func (s *Store) usage(ctx context.Context, q rowQuerier, ownerID string, ex usageExcept, now time.Time) (Usage, int64, error) {
	var sk SessionKey
	if ex.session != nil {
		sk = *ex.session
	}
	at := ms(now)
	var u Usage
	var files, versions, uploads, runs, sessions, retained int64
	err := q.QueryRowContext(ctx, s.rebind(usageQuery),
		ownerID, ex.key, at, ownerID, ex.key, at,
		ownerID, ex.key, at, ownerID, ex.key, at,
		ownerID, ex.upload, at, ex.upload, at,
		ownerID,
		ownerID, sk.ToolID, sk.UserID, sk.Context, sk.ToolID, sk.UserID, sk.Context,
		ownerID,
	).Scan(&u.Files, &files, &u.Versions, &versions, &u.Uploads, &uploads, &u.Runs, &runs, &u.SessionFiles, &sessions, &u.Retained, &retained)
	if err != nil {
		return Usage{}, 0, fmt.Errorf("summing the usage of %s: %w", ownerID, err)
	}
	if ex.reservations {
		u.Uploads, uploads = 0, 0
	}
	return u, files + versions + uploads + runs + sessions + retained, nil
}

// UsageBesideUpload is UserUsage without upload id's own reservation: what the file it
// makes is checked beside.
func (s *Store) UsageBesideUpload(ctx context.Context, ownerID, id string, now time.Time) (Usage, int64, error) {
	return s.usage(ctx, s.rdb, ownerID, usageExcept{upload: id}, now)
}

// UserUsage returns what ownerID holds at now, by kind, and what everyone holds in all.
func (s *Store) UserUsage(ctx context.Context, ownerID string, now time.Time) (Usage, int64, error) {
	return s.usage(ctx, s.rdb, ownerID, usageExcept{}, now)
}

// Room is the answer to a reservation: whether it was made, and the usage it was
// checked against (the reservation not included).
type Room struct {
	OK    bool
	User  Usage
	Total int64
}

// ReserveRunBytes adds n bytes to run id's held bytes when they fit, at now, beside
// everything userID and everyone hold, in userQuota and maxTotal. The check and the
// update are one transaction and one user's reservations, commits and uploads run one at
// a time, so runs finishing at once cannot together pass the quota.
func (s *Store) ReserveRunBytes(ctx context.Context, id, userID string, n, userQuota, maxTotal int64, now time.Time) (Room, error) {
	var room Room
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockOwner(ctx, tx, userID); err != nil {
			return err
		}
		u, total, err := s.usage(ctx, tx, userID, usageExcept{}, now)
		if err != nil {
			return err
		}
		room = Room{User: u, Total: total}
		if u.Total()+n > userQuota || total+n > maxTotal {
			return nil
		}
		room.OK = true
		_, err = s.txExec(ctx, tx, "UPDATE runs SET held_bytes = held_bytes + ? WHERE id = ?", n, id)
		return err
	})
	if err != nil {
		return Room{}, fmt.Errorf("reserving %d bytes for run %s: %w", n, id, err)
	}
	return room, nil
}

// ReleaseRunBytes takes n bytes off run id's held bytes: a reservation whose bytes were
// not stored after all. A recorded run's count is exact (RecordRun) and stays.
func (s *Store) ReleaseRunBytes(ctx context.Context, id string, n int64) error {
	_, err := s.exec(ctx, "UPDATE runs SET held_bytes = CASE WHEN held_bytes > ? THEN held_bytes - ? ELSE 0 END WHERE id = ? AND status IN (?, ?)",
		n, n, id, StatusQueued, StatusRunning)
	return err
}

// ReleaseFinishedRuns stops counting what runs finished at or before cutoff hold: their
// artifacts are expired (or are being), and what stays of them is their bounded record.
// It returns how many runs it released.
func (s *Store) ReleaseFinishedRuns(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.exec(ctx, "UPDATE runs SET held_bytes = 0 WHERE held_bytes > 0 AND finished_at IS NOT NULL AND finished_at <= ?", ms(cutoff))
	if err != nil {
		return 0, fmt.Errorf("releasing expired runs' bytes: %w", err)
	}
	return res.RowsAffected()
}

// OwnerRetiredBlobs returns up to limit of ownerID's retired blobs, the oldest first.
func (s *Store) OwnerRetiredBlobs(ctx context.Context, ownerID string, limit int) ([]RetiredBlob, error) {
	rows, err := s.query(ctx, "SELECT blob_key, size, retired_at FROM retired_file_blobs WHERE owner_id = ? ORDER BY retired_at, blob_key LIMIT ?", ownerID, limit)
	return scanAll(rows, err, scanRetired)
}
