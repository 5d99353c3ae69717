package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Sandbox is the record of one persistent agent sandbox; its box is the runner's.
type Sandbox struct {
	ID           string
	OwnerID      string
	Runner       string // bwrap or docker
	Node         string // the server holding the box
	Limits       string // JSON of the box's limits
	IdleTimeout  time.Duration
	CreatedAt    time.Time
	LastActiveAt time.Time
}

// ExpiresAt is when the sandbox is destroyed unless something uses it first.
func (b Sandbox) ExpiresAt() time.Time { return b.LastActiveAt.Add(b.IdleTimeout) }

// Limits on creating a sandbox.
var (
	// ErrTooMany means the owner holds as many sandboxes as they may.
	ErrTooMany = errors.New("too many sandboxes")
	// ErrFull means the node holds as many sandboxes as it may.
	ErrFull = errors.New("no room for another sandbox")
)

const sandboxCols = "id, owner_id, runner, node, limits, idle_timeout_ms, created_at, last_active_at"

func scanSandbox(row interface{ Scan(...any) error }) (Sandbox, error) {
	var b Sandbox
	var idle, created, active int64
	if err := row.Scan(&b.ID, &b.OwnerID, &b.Runner, &b.Node, &b.Limits, &idle, &created, &active); err != nil {
		return Sandbox{}, mapErr(err)
	}
	b.IdleTimeout = time.Duration(idle) * time.Millisecond
	b.CreatedAt, b.LastActiveAt = fromMS(created), fromMS(active)
	return b, nil
}

// CreateSandbox inserts b unless its owner already holds maxPerUser sandboxes
// (ErrTooMany) or its node holds maxTotal (ErrFull); inserts are checked one at a time.
func (s *Store) CreateSandbox(ctx context.Context, b Sandbox, maxPerUser, maxTotal int) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == Postgres {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "sandboxes/"+b.Node); err != nil {
				return err
			}
		}
		var total int
		if err := tx.QueryRowContext(ctx, s.rebind("SELECT COUNT(*) FROM sandboxes WHERE node = ?"), b.Node).Scan(&total); err != nil {
			return err
		}
		if total >= maxTotal {
			return fmt.Errorf("%w: %d of %d", ErrFull, total, maxTotal)
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.rebind("SELECT COUNT(*) FROM sandboxes WHERE owner_id = ?"), b.OwnerID).Scan(&n); err != nil {
			return err
		}
		if n >= maxPerUser {
			return fmt.Errorf("%w: %d of %d", ErrTooMany, n, maxPerUser)
		}
		_, err := tx.ExecContext(ctx, s.rebind("INSERT INTO sandboxes ("+sandboxCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
			b.ID, b.OwnerID, b.Runner, b.Node, b.Limits, b.IdleTimeout.Milliseconds(), ms(b.CreatedAt), ms(b.LastActiveAt))
		return err
	})
}

// Sandbox returns the sandbox with this id, or ErrNotFound.
func (s *Store) Sandbox(ctx context.Context, id string) (Sandbox, error) {
	b, err := scanSandbox(s.queryRow(ctx, "SELECT "+sandboxCols+" FROM sandboxes WHERE id = ?", id))
	if err != nil {
		return Sandbox{}, fmt.Errorf("sandbox %s: %w", id, err)
	}
	return b, nil
}

// Sandboxes lists the sandboxes of ownerID (every one when ownerID is empty), oldest
// first.
func (s *Store) Sandboxes(ctx context.Context, ownerID string) ([]Sandbox, error) {
	if ownerID == "" {
		rows, err := s.query(ctx, "SELECT "+sandboxCols+" FROM sandboxes ORDER BY created_at, id")
		return scanAll(rows, err, scanSandbox)
	}
	rows, err := s.query(ctx, "SELECT "+sandboxCols+" FROM sandboxes WHERE owner_id = ? ORDER BY created_at, id", ownerID)
	return scanAll(rows, err, scanSandbox)
}

// IdleSandboxes lists the sandboxes whose idle timeout has passed at now.
func (s *Store) IdleSandboxes(ctx context.Context, now time.Time) ([]Sandbox, error) {
	rows, err := s.query(ctx, "SELECT "+sandboxCols+" FROM sandboxes WHERE last_active_at + idle_timeout_ms <= ? ORDER BY last_active_at", ms(now))
	return scanAll(rows, err, scanSandbox)
}

// TouchSandbox records activity on sandbox id at now.
func (s *Store) TouchSandbox(ctx context.Context, id string, now time.Time) error {
	if _, err := s.exec(ctx, "UPDATE sandboxes SET last_active_at = ? WHERE id = ? AND last_active_at < ?", ms(now), id, ms(now)); err != nil {
		return fmt.Errorf("touching sandbox %s: %w", id, err)
	}
	return nil
}

// DeleteSandbox removes sandbox id's record and reports whether it was there.
func (s *Store) DeleteSandbox(ctx context.Context, id string) (bool, error) {
	res, err := s.exec(ctx, "DELETE FROM sandboxes WHERE id = ?", id)
	if err != nil {
		return false, fmt.Errorf("deleting sandbox %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
