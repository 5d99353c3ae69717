package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Maintainer is one user who maintains a tool (tool_maintainers).
type Maintainer struct {
	ToolID, UserID string
	Name           string // DeletedUserName when the user was deleted
	Role, State    string
	AddedBy        string // the id of the user who added them; the author for the author
	AddedAt        time.Time
}

const maintainerCols = "m.tool_id, m.user_id, CASE WHEN u.state = 'deleted' THEN '' ELSE u.name END, u.role, u.state, m.added_by, m.added_at " +
	"FROM tool_maintainers m JOIN users u ON u.id = m.user_id"

func scanMaintainer(row interface{ Scan(...any) error }) (Maintainer, error) {
	var m Maintainer
	var added int64
	if err := row.Scan(&m.ToolID, &m.UserID, &m.Name, &m.Role, &m.State, &m.AddedBy, &added); err != nil {
		return Maintainer{}, mapErr(err)
	}
	if m.Name == "" {
		m.Name = DeletedUserName
	}
	m.AddedAt = fromMS(added)
	return m, nil
}

// Maintainers lists the maintainers of toolID, in the order they were added.
func (s *Store) Maintainers(ctx context.Context, toolID string) ([]Maintainer, error) {
	rows, err := s.query(ctx, "SELECT "+maintainerCols+" WHERE m.tool_id = ? ORDER BY m.added_at, u.name", toolID)
	return scanAll(rows, err, scanMaintainer)
}

// Maintainer returns userID's row among toolID's maintainers, or ErrNotFound.
func (s *Store) Maintainer(ctx context.Context, toolID, userID string) (Maintainer, error) {
	m, err := scanMaintainer(s.queryRow(ctx, "SELECT "+maintainerCols+" WHERE m.tool_id = ? AND m.user_id = ?", toolID, userID))
	if err != nil {
		return Maintainer{}, fmt.Errorf("maintainer %q of tool %q: %w", userID, toolID, err)
	}
	return m, nil
}

// AddMaintainer makes userID a maintainer of toolID, added by addedBy at at, and reports
// whether they were not one already (adding a maintainer again changes nothing).
func (s *Store) AddMaintainer(ctx context.Context, toolID, userID, addedBy string, at time.Time) (bool, error) {
	res, err := s.exec(ctx, "INSERT INTO tool_maintainers (tool_id, user_id, added_by, added_at) VALUES (?, ?, ?, ?) ON CONFLICT (tool_id, user_id) DO NOTHING",
		toolID, userID, addedBy, ms(at))
	if err != nil {
		return false, fmt.Errorf("adding maintainer %q to tool %q: %w", userID, toolID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RemoveMaintainer removes userID from toolID's maintainers. It gives ErrNotFound when
// they are not one, and ErrConflict when they are the last one: a tool always keeps a
// maintainer. On PostgreSQL the tool's row is locked first, so two maintainers removing
// each other at once cannot both succeed (SQLite's transactions are serial already).
func (s *Store) RemoveMaintainer(ctx context.Context, toolID, userID string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, s.rebind("SELECT id FROM tools WHERE id = ? FOR UPDATE"), toolID); err != nil {
				return err
			}
		}
		var mine, others int
		err := tx.QueryRowContext(ctx, s.rebind("SELECT COALESCE(SUM(CASE WHEN user_id = ? THEN 1 ELSE 0 END), 0), "+
			"COALESCE(SUM(CASE WHEN user_id <> ? THEN 1 ELSE 0 END), 0) FROM tool_maintainers WHERE tool_id = ?"), userID, userID, toolID).Scan(&mine, &others)
		switch {
		case err != nil:
			return err
		case mine == 0:
			return fmt.Errorf("maintainer %q of tool %q: %w", userID, toolID, ErrNotFound)
		case others == 0:
			return fmt.Errorf("maintainer %q is the last of tool %q: %w", userID, toolID, ErrConflict)
		}
		_, err = tx.ExecContext(ctx, s.rebind("DELETE FROM tool_maintainers WHERE tool_id = ? AND user_id = ?"), toolID, userID)
		return err
	})
}

// EditLock is who has a tool's editor open (tool_edit_locks): a soft lock that warns
// others and blocks no one.
type EditLock struct {
	ToolID, UserID string
	Name           string // the holder's name; DeletedUserName when deleted
	Since          time.Time
	SeenAt         time.Time // the last time the holder's page said it is open
}

// ClaimEditLock makes userID the holder of toolID's edit lock at now, and returns the
// lock as it then is. A lock userID holds is refreshed (its Since stays); one another
// user holds is taken over only when it was last seen before staleBefore or when take is
// set, and is returned unchanged otherwise. One statement decides, so the nodes of a
// cluster agree on one holder.
func (s *Store) ClaimEditLock(ctx context.Context, toolID, userID string, now, staleBefore time.Time, take bool) (EditLock, error) {
	_, err := s.exec(ctx, `INSERT INTO tool_edit_locks (tool_id, user_id, since, seen_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (tool_id) DO UPDATE SET
			since = CASE WHEN tool_edit_locks.user_id = excluded.user_id THEN tool_edit_locks.since ELSE excluded.since END,
			user_id = excluded.user_id, seen_at = excluded.seen_at
		WHERE tool_edit_locks.user_id = excluded.user_id OR tool_edit_locks.seen_at < ? OR ?`,
		toolID, userID, ms(now), ms(now), ms(staleBefore), take)
	if err != nil {
		return EditLock{}, fmt.Errorf("claiming the edit lock of tool %q: %w", toolID, err)
	}
	return s.EditLockOf(ctx, toolID)
}

// EditLockOf returns toolID's edit lock, or ErrNotFound when no one holds one.
func (s *Store) EditLockOf(ctx context.Context, toolID string) (EditLock, error) {
	var l EditLock
	var since, seen int64
	err := s.queryRow(ctx, "SELECT l.tool_id, l.user_id, CASE WHEN u.state = 'deleted' THEN '' ELSE u.name END, l.since, l.seen_at "+
		"FROM tool_edit_locks l JOIN users u ON u.id = l.user_id WHERE l.tool_id = ?", toolID).Scan(&l.ToolID, &l.UserID, &l.Name, &since, &seen)
	if err != nil {
		return EditLock{}, fmt.Errorf("the edit lock of tool %q: %w", toolID, mapErr(err))
	}
	if l.Name == "" {
		l.Name = DeletedUserName
	}
	l.Since, l.SeenAt = fromMS(since), fromMS(seen)
	return l, nil
}
