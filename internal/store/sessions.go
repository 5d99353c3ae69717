package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SessionKey names a tool session.
type SessionKey struct {
	ToolID  string
	UserID  string
	Context string
}

// Session is a tool session's server-owned state.
type Session struct {
	SessionKey
	State       string // JSON object
	StateRev    int64
	LatestRunID string // the run whose next_actions are on offer
	UpdatedAt   time.Time
}

// Session returns a session, or ErrNotFound.
func (s *Store) Session(ctx context.Context, k SessionKey) (Session, error) {
	out := Session{SessionKey: k}
	var updated int64
	err := s.queryRow(ctx, "SELECT state, state_rev, latest_run_id, updated_at FROM tool_sessions WHERE tool_id = ? AND user_id = ? AND context = ?",
		k.ToolID, k.UserID, k.Context).Scan(&out.State, &out.StateRev, &out.LatestRunID, &updated)
	if err != nil {
		return Session{}, fmt.Errorf("session %s/%s: %w", k.ToolID, k.Context, mapErr(err))
	}
	out.UpdatedAt = fromMS(updated)
	return out, nil
}

// WriteSession stores state as a new revision of the session, whatever its revision was
// (an initial run starts the session over), creating it at revision 1. It returns the new
// revision.
func (s *Store) WriteSession(ctx context.Context, k SessionKey, state, runID string, now time.Time) (int64, error) {
	var rev int64
	err := s.db.QueryRowContext(ctx, s.rebind(`INSERT INTO tool_sessions (tool_id, user_id, context, state, state_rev, latest_run_id, updated_at)
		VALUES (?, ?, ?, ?, 1, ?, ?)
		ON CONFLICT (tool_id, user_id, context) DO UPDATE SET state = excluded.state,
			state_rev = tool_sessions.state_rev + 1, latest_run_id = excluded.latest_run_id, updated_at = excluded.updated_at
		RETURNING state_rev`), k.ToolID, k.UserID, k.Context, state, runID, ms(now)).Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("writing session %s/%s: %w", k.ToolID, k.Context, mapErr(err))
	}
	return rev, nil
}

// NormalState is a tool's state as a session stores it: "{}" for none or JSON null.
func NormalState(state []byte) string {
	t := strings.TrimSpace(string(state))
	if t == "" || t == "null" {
		return "{}"
	}
	return t
}

// CompareAndSwapSession moves the session from revision expected to expected+1 with state
// (empty: keep the state) and runID as its latest run. It is one conditional UPDATE, so
// of any number of concurrent calls with the same expected revision exactly one succeeds.
func (s *Store) CompareAndSwapSession(ctx context.Context, k SessionKey, expected int64, state, runID string, now time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE tool_sessions SET state = CASE WHEN ? = '' THEN state ELSE ? END, state_rev = state_rev + 1,
		latest_run_id = ?, updated_at = ? WHERE tool_id = ? AND user_id = ? AND context = ? AND state_rev = ?`,
		state, state, runID, ms(now), k.ToolID, k.UserID, k.Context, expected)
	if err != nil {
		return false, fmt.Errorf("updating session %s/%s: %w", k.ToolID, k.Context, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// FileSet is the current set of a session's files.
type FileSet struct {
	SessionKey
	SetID          string
	Files          string // JSON array of {name, bytes, sha256, key}
	Bytes          int64
	CreatedAt      time.Time
	LastAccessedAt time.Time
}

func scanFileSet(row interface{ Scan(...any) error }) (FileSet, error) {
	var f FileSet
	var created, accessed int64
	if err := row.Scan(&f.ToolID, &f.UserID, &f.Context, &f.SetID, &f.Files, &f.Bytes, &created, &accessed); err != nil {
		return FileSet{}, mapErr(err)
	}
	f.CreatedAt, f.LastAccessedAt = fromMS(created), fromMS(accessed)
	return f, nil
}

const fileSetCols = "tool_id, user_id, context, set_id, files, bytes, created_at, last_accessed_at"

// SessionFiles returns a session's current file set, or ErrNotFound.
func (s *Store) SessionFiles(ctx context.Context, k SessionKey) (FileSet, error) {
	f, err := scanFileSet(s.queryRow(ctx, "SELECT "+fileSetCols+" FROM session_files WHERE tool_id = ? AND user_id = ? AND context = ?", k.ToolID, k.UserID, k.Context))
	if err != nil {
		return FileSet{}, fmt.Errorf("session files of %s/%s: %w", k.ToolID, k.Context, err)
	}
	return f, nil
}

// SwapSessionFiles makes set the session's current file set in one statement and returns
// the set it replaced (nil when there was none). With userQuota above 0, set must fit at
// now beside everything else its user holds (the set it replaces not counted) in
// userQuota, and beside everyone's in maxTotal: otherwise it returns an error wrapping
// ErrOverQuota or ErrOverTotal and leaves the session's files as they were. The check
// and the swap are one transaction, one user's at a time.
func (s *Store) SwapSessionFiles(ctx context.Context, set FileSet, userQuota, maxTotal int64, now time.Time) (*FileSet, error) {
	var old *FileSet
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockOwner(ctx, tx, set.UserID); err != nil {
			return err
		}
		if userQuota > 0 {
			u, total, err := s.usage(ctx, tx, set.UserID, usageExcept{session: &set.SessionKey}, now)
			if err != nil {
				return err
			}
			if u.Total()+set.Bytes > userQuota {
				return fmt.Errorf("%d bytes held, %d more: %w", u.Total(), set.Bytes, ErrOverQuota)
			}
			if total+set.Bytes > maxTotal {
				return fmt.Errorf("%d bytes stored, %d more: %w", total, set.Bytes, ErrOverTotal)
			}
		}
		if s.dialect == Postgres {
			// Replaces of one session's files run one at a time, so each sees (and
			// returns, for deletion) the set it really replaces. SQLite is serial already.
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", set.ToolID+"/"+set.UserID+"/"+set.Context); err != nil {
				return err
			}
		}
		prev, err := scanFileSet(tx.QueryRowContext(ctx, s.rebind("SELECT "+fileSetCols+" FROM session_files WHERE tool_id = ? AND user_id = ? AND context = ?"),
			set.ToolID, set.UserID, set.Context))
		if err == nil {
			old = &prev
		} else if !errors.Is(err, ErrNotFound) {
			return err
		}
		_, err = tx.ExecContext(ctx, s.rebind(`INSERT INTO session_files (`+fileSetCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (tool_id, user_id, context) DO UPDATE SET set_id = excluded.set_id, files = excluded.files,
				bytes = excluded.bytes, created_at = excluded.created_at, last_accessed_at = excluded.last_accessed_at`),
			set.ToolID, set.UserID, set.Context, set.SetID, set.Files, set.Bytes, ms(set.CreatedAt), ms(set.LastAccessedAt))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("replacing session files of %s/%s: %w", set.ToolID, set.Context, err)
	}
	return old, nil
}

// TouchSessionFiles records that the set was read or injected.
func (s *Store) TouchSessionFiles(ctx context.Context, k SessionKey, setID string, now time.Time) error {
	_, err := s.exec(ctx, "UPDATE session_files SET last_accessed_at = ? WHERE tool_id = ? AND user_id = ? AND context = ? AND set_id = ?",
		ms(now), k.ToolID, k.UserID, k.Context, setID)
	return err
}

// DeleteSessionFiles removes the set if it is still setID and was last accessed before
// unusedSince (the zero time: whenever); it reports whether it did. The janitor passes
// its cutoff, so a set used after it listed it survives.
func (s *Store) DeleteSessionFiles(ctx context.Context, k SessionKey, setID string, unusedSince time.Time) (bool, error) {
	cutoff := int64(1 << 62)
	if !unusedSince.IsZero() {
		cutoff = ms(unusedSince)
	}
	res, err := s.exec(ctx, "DELETE FROM session_files WHERE tool_id = ? AND user_id = ? AND context = ? AND set_id = ? AND last_accessed_at < ?",
		k.ToolID, k.UserID, k.Context, setID, cutoff)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// StaleSessionFiles returns up to limit sets last accessed before cutoff.
func (s *Store) StaleSessionFiles(ctx context.Context, cutoff time.Time, limit int) ([]FileSet, error) {
	rows, err := s.query(ctx, "SELECT "+fileSetCols+" FROM session_files WHERE last_accessed_at < ? ORDER BY last_accessed_at LIMIT ?", ms(cutoff), limit)
	return scanAll(rows, err, scanFileSet)
}

// SessionFileSetIDs returns every current set id, for finding blobs no set refers to.
func (s *Store) SessionFileSetIDs(ctx context.Context) (map[string]bool, error) {
	rows, err := s.query(ctx, "SELECT set_id FROM session_files")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}

// SessionStep is one revision of a session as it was written: its state and the run
// whose next actions it offered.
type SessionStep struct {
	SessionKey
	StateRev  int64
	State     string
	RunID     string
	CreatedAt time.Time
}

// AddSessionStep records step, replacing a record of the same revision, and forgets the
// session's steps more than keep revisions older.
func (s *Store) AddSessionStep(ctx context.Context, step SessionStep, keep int64) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind(`INSERT INTO session_steps (tool_id, user_id, context, state_rev, state, run_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tool_id, user_id, context, state_rev) DO UPDATE SET state = excluded.state,
			run_id = excluded.run_id, created_at = excluded.created_at`),
			step.ToolID, step.UserID, step.Context, step.StateRev, step.State, step.RunID, ms(step.CreatedAt)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.rebind("DELETE FROM session_steps WHERE tool_id = ? AND user_id = ? AND context = ? AND state_rev <= ?"),
			step.ToolID, step.UserID, step.Context, step.StateRev-keep)
		return err
	})
}

// SessionSteps lists the recorded steps of a session, newest first.
func (s *Store) SessionSteps(ctx context.Context, k SessionKey) ([]SessionStep, error) {
	rows, err := s.query(ctx, "SELECT state_rev, state, run_id, created_at FROM session_steps WHERE tool_id = ? AND user_id = ? AND context = ? ORDER BY state_rev DESC",
		k.ToolID, k.UserID, k.Context)
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (SessionStep, error) {
		st := SessionStep{SessionKey: k}
		var created int64
		if err := row.Scan(&st.StateRev, &st.State, &st.RunID, &created); err != nil {
			return SessionStep{}, mapErr(err)
		}
		st.CreatedAt = fromMS(created)
		return st, nil
	})
}

// SessionStepAt returns the recorded step of revision rev, or ErrNotFound.
func (s *Store) SessionStepAt(ctx context.Context, k SessionKey, rev int64) (SessionStep, error) {
	st := SessionStep{SessionKey: k, StateRev: rev}
	var created int64
	err := s.queryRow(ctx, "SELECT state, run_id, created_at FROM session_steps WHERE tool_id = ? AND user_id = ? AND context = ? AND state_rev = ?",
		k.ToolID, k.UserID, k.Context, rev).Scan(&st.State, &st.RunID, &created)
	if err != nil {
		return SessionStep{}, fmt.Errorf("step %d of session %s/%s: %w", rev, k.ToolID, k.Context, mapErr(err))
	}
	st.CreatedAt = fromMS(created)
	return st, nil
}
