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

// ownerUsageQuery sums each kind for one owner, by indexed predicates on the owner's
// rows alone; the arguments are bound in ownerUsage below, in this order.
const ownerUsageQuery = `SELECT
	(SELECT COALESCE(SUM(size), 0) FROM files WHERE owner_id = ? AND key <> ? AND checksum <> '' AND (expires_at IS NULL OR expires_at > ?)),
	(SELECT COALESCE(SUM(v.size), 0) FROM file_versions v JOIN files f ON f.owner_id = v.owner_id AND f.key = v.key
		WHERE v.owner_id = ? AND v.key <> ? AND f.checksum <> '' AND (f.expires_at IS NULL OR f.expires_at > ?)),
	(SELECT COALESCE(SUM(size), 0) FROM uploads WHERE owner_id = ? AND id <> ? AND finished_at IS NULL AND expires_at > ?),
	(SELECT COALESCE(SUM(held_bytes), 0) FROM runs WHERE user_id = ? AND held_bytes > 0),
	(SELECT COALESCE(SUM(bytes), 0) FROM session_files WHERE user_id = ? AND NOT (tool_id = ? AND context = ?)),
	(SELECT COALESCE(SUM(size), 0) FROM retired_file_blobs WHERE owner_id = ?)`

// totalUsageQuery sums each kind for everyone: it reads every row of six tables, so it
// runs only where a change is checked against the store's total
// (SKRIP_FILES_MAX_TOTAL_BYTES), never to show a user their usage. The arguments are
// bound in totalUsage below, in this order.
const totalUsageQuery = `SELECT
	(SELECT COALESCE(SUM(size), 0) FROM files WHERE NOT (owner_id = ? AND key = ?) AND checksum <> '' AND (expires_at IS NULL OR expires_at > ?)),
	(SELECT COALESCE(SUM(v.size), 0) FROM file_versions v JOIN files f ON f.owner_id = v.owner_id AND f.key = v.key
		WHERE NOT (v.owner_id = ? AND v.key = ?) AND f.checksum <> '' AND (f.expires_at IS NULL OR f.expires_at > ?)),
	(SELECT COALESCE(SUM(size), 0) FROM uploads WHERE id <> ? AND finished_at IS NULL AND expires_at > ?),
	(SELECT COALESCE(SUM(held_bytes), 0) FROM runs WHERE held_bytes > 0),
	(SELECT COALESCE(SUM(bytes), 0) FROM session_files WHERE NOT (tool_id = ? AND user_id = ? AND context = ?)),
	(SELECT COALESCE(SUM(size), 0) FROM retired_file_blobs)`

// ownerUsage returns, through q at now, what ownerID holds by kind, without what ex
// leaves out. It reads ownerID's rows only.
func (s *Store) ownerUsage(ctx context.Context, q rowQuerier, ownerID string, ex usageExcept, now time.Time) (Usage, error) {
	ctxKey := ""
	toolID := ""
	if ex.session != nil && ex.session.UserID == ownerID {
		toolID, ctxKey = ex.session.ToolID, ex.session.Context
	}
	at := ms(now)
	var u Usage
	err := q.QueryRowContext(ctx, s.rebind(ownerUsageQuery),
		ownerID, ex.key, at,
		ownerID, ex.key, at,
		ownerID, ex.upload, at,
		ownerID,
		ownerID, toolID, ctxKey,
		ownerID,
	).Scan(&u.Files, &u.Versions, &u.Uploads, &u.Runs, &u.SessionFiles, &u.Retained)
	if err != nil {
		return Usage{}, fmt.Errorf("summing the usage of %s: %w", ownerID, err)
	}
	if ex.reservations {
		u.Uploads = 0
	}
	return u, nil
}

// totalUsage returns, through q at now, what everyone holds in all, without what ex
// leaves out of ownerID's.
func (s *Store) totalUsage(ctx context.Context, q rowQuerier, ownerID string, ex usageExcept, now time.Time) (int64, error) {
	var sk SessionKey
	if ex.session != nil {
		sk = *ex.session
	}
	at := ms(now)
	var files, versions, uploads, runs, sessions, retained int64
	err := q.QueryRowContext(ctx, s.rebind(totalUsageQuery),
		ownerID, ex.key, at,
		ownerID, ex.key, at,
		ex.upload, at,
		sk.ToolID, sk.UserID, sk.Context,
	).Scan(&files, &versions, &uploads, &runs, &sessions, &retained)
	if err != nil {
		return 0, fmt.Errorf("summing the store's usage: %w", err)
	}
	if ex.reservations {
		uploads = 0
	}
	return files + versions + uploads + runs + sessions + retained, nil
}

// usage returns, through q at now, what ownerID holds by kind and what everyone holds in
// all, both without what ex leaves out: what a change is admitted against.
func (s *Store) usage(ctx context.Context, q rowQuerier, ownerID string, ex usageExcept, now time.Time) (Usage, int64, error) {
	u, err := s.ownerUsage(ctx, q, ownerID, ex, now)
	if err != nil {
		return Usage{}, 0, err
	}
	total, err := s.totalUsage(ctx, q, ownerID, ex, now)
	if err != nil {
		return Usage{}, 0, err
	}
	return u, total, nil
}

// UsageBesideUpload is UserUsage without upload id's own reservation: what the file it
// makes is checked beside.
func (s *Store) UsageBesideUpload(ctx context.Context, ownerID, id string, now time.Time) (Usage, int64, error) {
	return s.usage(ctx, s.rdb, ownerID, usageExcept{upload: id}, now)
}

// UserUsage returns what ownerID holds at now, by kind, and what everyone holds in all:
// for a check against the store's total. OwnerUsage is the cheap question of what one
// user holds.
func (s *Store) UserUsage(ctx context.Context, ownerID string, now time.Time) (Usage, int64, error) {
	return s.usage(ctx, s.rdb, ownerID, usageExcept{}, now)
}

// OwnerUsage returns what ownerID holds at now, by kind: what GET /me and the account
// page show, and what a check against the user's quota alone needs. It reads ownerID's
// rows only, through their indexes, so asking it often loads nothing else.
func (s *Store) OwnerUsage(ctx context.Context, ownerID string, now time.Time) (Usage, error) {
	return s.ownerUsage(ctx, s.rdb, ownerID, usageExcept{}, now)
}

// Room is the answer to a run's reservation: which of the sizes asked for were
// reserved, and the usage they were checked against (none of them included).
type Room struct {
	// Kept says, for each size asked for, in order, whether it was reserved.
	Kept []bool
	// Ended is set when nothing was reserved because the run is no longer queued or
	// running, or another attempt holds it: what was asked for is not kept.
	Ended bool
	User  Usage
	Total int64
}

// ReserveRunBytes reserves, for attempt of run id (0: whichever attempt holds it), the
// bytes of each of sizes (a run's artifacts, in order) that fits at now beside
// everything userID and everyone hold and the sizes reserved before it, in userQuota and
// maxTotal. A size that does not fit is not reserved; a later, smaller one may be. The
// check and the update are one transaction and one usage question for all the sizes,
// and one user's reservations, commits and uploads run one at a time, so runs finishing
// at once cannot together pass the quota. Only a run still queued or running is
// reserved for (ReleaseRunBytes gives back only there, and a recorded or ended run's
// count is set by RecordRun or EndRun): for any other, nothing is (Room.Ended).
func (s *Store) ReserveRunBytes(ctx context.Context, id string, attempt int64, userID string, sizes []int64, userQuota, maxTotal int64, now time.Time) (Room, error) {
	var room Room
	err := s.tx(ctx, func(tx *sql.Tx) error {
		room = Room{Kept: make([]bool, len(sizes))}
		if len(sizes) == 0 {
			return nil
		}
		if err := s.lockOwner(ctx, tx, userID); err != nil {
			return err
		}
		u, total, err := s.usage(ctx, tx, userID, usageExcept{}, now)
		if err != nil {
			return err
		}
		room.User, room.Total = u, total
		user, n, some := u.Total(), int64(0), false
		for i, size := range sizes {
			if user+size > userQuota || total+size > maxTotal {
				continue
			}
			room.Kept[i], some = true, true
			user, total, n = user+size, total+size, n+size
		}
		if !some {
			return nil
		}
		res, err := s.txExec(ctx, tx, "UPDATE runs SET held_bytes = held_bytes + ? WHERE id = ? AND status IN (?, ?) AND (? = 0 OR attempts = ?)",
			n, id, StatusQueued, StatusRunning, attempt, attempt)
		if err != nil {
			return err
		}
		if rows, err := res.RowsAffected(); err != nil || rows == 0 {
			room.Kept, room.Ended = make([]bool, len(sizes)), true
			return err
		}
		return nil
	})
	if err != nil {
		return Room{}, fmt.Errorf("reserving %d artifacts' bytes for run %s: %w", len(sizes), id, err)
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
