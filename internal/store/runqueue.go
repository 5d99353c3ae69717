package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The caps AdmitRun may refuse a run for.
var (
	// ErrUserRuns is a run whose user has as many runs queued and running as one may.
	ErrUserRuns = errors.New("the user's runs are at their cap")
	// ErrAllRuns is a run past the cap of runs queued and running in all.
	ErrAllRuns = errors.New("the runs are at their cap")
)

// RunCaps bound the runs queued and running at once; 0 is no cap.
type RunCaps struct {
	PerUser int // of one user
	Total   int // of everyone
}

// AdmitRun inserts queued run r unless it would pass caps, counting the runs queued and
// running in the same transaction: ErrUserRuns or ErrAllRuns then, and nothing is made.
// The per-user count is exact however many nodes insert at once: on PostgreSQL the
// transaction first takes a lock of r's user (an advisory lock released at the commit),
// so that two inserts for one user are counted one after the other; on SQLite every
// write transaction is one after the other already. The total is counted without that
// lock, so runs of several users admitted at the same instant may pass it by a few.
func (s *Store) AdmitRun(ctx context.Context, r Run, caps RunCaps) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if caps.PerUser > 0 {
			if s.dialect == Postgres {
				if _, err := s.txExec(ctx, tx, "SELECT pg_advisory_xact_lock(hashtext(coalesce(current_schema(), '') || ':runs'), hashtext(?))", r.UserID); err != nil {
					return err
				}
			}
			var n int
			if err := s.txQueryRow(ctx, tx, "SELECT COUNT(*) FROM runs WHERE user_id = ? AND status IN (?, ?)",
				r.UserID, StatusQueued, StatusRunning).Scan(&n); err != nil {
				return err
			}
			if n >= caps.PerUser {
				return ErrUserRuns
			}
		}
		if caps.Total > 0 {
			var n int
			if err := s.txQueryRow(ctx, tx, "SELECT COUNT(*) FROM runs WHERE status IN (?, ?)", StatusQueued, StatusRunning).Scan(&n); err != nil {
				return err
			}
			if n >= caps.Total {
				return ErrAllRuns
			}
		}
		_, err := s.txExec(ctx, tx, insertRun, runValues(r)...)
		return err
	})
	if errors.Is(err, ErrUserRuns) || errors.Is(err, ErrAllRuns) {
		return err
	}
	if err != nil {
		return fmt.Errorf("creating run: %w", err)
	}
	return nil
}

// UnfinishedRuns counts the runs queued and running, of user userID or, when it is "",
// of everyone.
func (s *Store) UnfinishedRuns(ctx context.Context, userID string) (int, error) {
	var n int
	err := s.queryRow(ctx, "SELECT COUNT(*) FROM runs WHERE (? = '' OR user_id = ?) AND status IN (?, ?)",
		userID, userID, StatusQueued, StatusRunning).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting runs: %w", err)
	}
	return n, nil
}

// HoldRun keeps queued run id's queue message until the scheduler sends it (a cluster's
// run waits in the database, not on the stream). It reports false when the run is no
// longer queued.
func (s *Store) HoldRun(ctx context.Context, id, msg string) (bool, error) {
	res, err := s.exec(ctx, "UPDATE runs SET dispatch = ? WHERE id = ? AND status = ?", msg, id, StatusQueued)
	if err != nil {
		return false, fmt.Errorf("holding run %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// HeldRun is a queued run whose message waits for the scheduler.
type HeldRun struct {
	ID        string
	UserID    string
	Message   string
	CreatedAt time.Time
	// LastSent is when the scheduler last sent a run of UserID, if it did after the
	// since HeldRuns was given; zero otherwise.
	LastSent time.Time
}

// HeldRuns returns the held runs not yet sent, up to perUser of each user (their oldest),
// oldest first, each with when its user's last run was sent after since. Every user with
// a run waiting is among them however many runs another user has waiting, so that the
// scheduler can serve users in turn; one query answers it all.
func (s *Store) HeldRuns(ctx context.Context, perUser int, since time.Time) ([]HeldRun, error) {
	// ROW_NUMBER numbers each user's held runs from the oldest (PostgreSQL, and SQLite
	// from 3.25). The last sends are those of the users with a run held, by their
	// dispatched_at: a run that waited long was still sent recently.
	rows, err := s.query(ctx, `SELECT h.id, h.user_id, h.dispatch, h.created_at, l.sent FROM (
			SELECT id, user_id, dispatch, created_at, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY created_at, id) AS n
			FROM runs WHERE status = ? AND dispatch <> '' AND dispatched_at IS NULL) h
		LEFT JOIN (
			SELECT user_id, MAX(dispatched_at) AS sent FROM runs WHERE dispatched_at > ? AND user_id IN (
				SELECT user_id FROM runs WHERE status = ? AND dispatch <> '' AND dispatched_at IS NULL)
			GROUP BY user_id) l ON l.user_id = h.user_id
		WHERE h.n <= ? ORDER BY h.created_at, h.id`, StatusQueued, ms(since), StatusQueued, perUser)
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (HeldRun, error) {
		var h HeldRun
		var created int64
		var sent sql.NullInt64
		err := row.Scan(&h.ID, &h.UserID, &h.Message, &created, &sent)
		h.CreatedAt = fromMS(created)
		if sent.Valid {
			h.LastSent = fromMS(sent.Int64)
		}
		return h, err
	})
}

// MarkDispatched records that held run id is being sent to the workers, when it is still
// queued and not sent; it reports whether it did. sent false undoes it (the send failed),
// for a run still queued.
func (s *Store) MarkDispatched(ctx context.Context, id string, sent bool, at time.Time) (bool, error) {
	q, args := "UPDATE runs SET dispatched_at = ? WHERE id = ? AND status = ? AND dispatched_at IS NULL", []any{ms(at), id, StatusQueued}
	if !sent {
		q, args = "UPDATE runs SET dispatched_at = NULL WHERE id = ? AND status = ?", []any{id, StatusQueued}
	}
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("run %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// QueueState is where a queued run of a cluster is: Held when its message is in the
// database, and DispatchedAt when the scheduler sent it (nil: not yet).
type QueueState struct {
	Held         bool
	DispatchedAt *time.Time
}

// RunQueueState returns run id's QueueState.
func (s *Store) RunQueueState(ctx context.Context, id string) (QueueState, error) {
	var msg string
	var at sql.NullInt64
	if err := s.queryRow(ctx, "SELECT dispatch, dispatched_at FROM runs WHERE id = ?", id).Scan(&msg, &at); err != nil {
		return QueueState{}, fmt.Errorf("run %q: %w", id, mapErr(err))
	}
	st := QueueState{Held: msg != ""}
	if at.Valid {
		t := fromMS(at.Int64)
		st.DispatchedAt = &t
	}
	return st, nil
}
