package store

import (
	"context"
	"fmt"
	"time"
)

// AuditEvent is one admin or security action: who did what, to whom, when and from
// which address. Actor and Target are names as they were at the time.
type AuditEvent struct {
	ID      string
	At      time.Time
	ActorID string
	Actor   string
	Action  string
	Target  string
	Address string
	Details string // a JSON object
}

// AddAudit stores an event.
func (s *Store) AddAudit(ctx context.Context, e AuditEvent) error {
	if e.Details == "" {
		e.Details = "{}"
	}
	_, err := s.exec(ctx, "INSERT INTO audit (id, at, actor_id, actor, action, target, address, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		e.ID, ms(e.At), e.ActorID, e.Actor, e.Action, e.Target, e.Address, e.Details)
	if err != nil {
		return fmt.Errorf("storing an audit event: %w", err)
	}
	return nil
}

// Audit lists up to limit events, newest first, older than the event before (an id; ""
// starts at the newest).
func (s *Store) Audit(ctx context.Context, before string, limit int) ([]AuditEvent, error) {
	q := "SELECT id, at, actor_id, actor, action, target, address, details FROM audit"
	args := []any{}
	if before != "" {
		q += " WHERE (at, id) < (SELECT at, id FROM audit WHERE id = ?)"
		args = append(args, before)
	}
	q += " ORDER BY at DESC, id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := s.query(ctx, q, args...)
	return scanAll(rows, err, func(r interface{ Scan(...any) error }) (AuditEvent, error) {
		var e AuditEvent
		var at int64
		err := r.Scan(&e.ID, &at, &e.ActorID, &e.Actor, &e.Action, &e.Target, &e.Address, &e.Details)
		e.At = fromMS(at)
		return e, err
	})
}

// DeleteAuditBefore removes events older than t and says how many.
func (s *Store) DeleteAuditBefore(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM audit WHERE at < ?", ms(t))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
