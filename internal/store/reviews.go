package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Review statuses.
const (
	ReviewPending          = "pending"
	ReviewApproved         = "approved"
	ReviewChangesRequested = "changes_requested"
	// ReviewSuperseded is a pending review whose author submitted another version of
	// the tool before a reviewer decided.
	ReviewSuperseded = "superseded"
)

// ErrNotPending means a review was decided (or superseded) already.
var ErrNotPending = errors.New("review not pending")

// Review is an author's request that a version be published, and a reviewer's decision.
type Review struct {
	ID          string
	ToolID      string
	VersionID   string
	SubmittedBy string
	Note        string
	SubmittedAt time.Time
	Status      string
	DecidedBy   string // "" while pending
	DecidedAt   *time.Time
	Comment     string // the reviewer's, when they asked for changes

	// Read from the tool and the users.
	ToolSlug           string
	ToolTitle          string
	ToolAuthorID       string
	PublishedVersionID string // the tool's, now ("" when none)
	SubmitterName      string // DeletedUserName when the submitter was deleted
	DeciderName        string
}

const reviewCols = `v.id, v.tool_id, v.version_id, v.submitted_by, v.note, v.submitted_at, v.status, v.decided_by, v.decided_at, v.comment,
	t.slug, t.title, t.author_id, COALESCE(t.published_version_id, ''), COALESCE(su.name, ''), COALESCE(su.state, ''), COALESCE(du.name, '')`

const reviewFrom = ` FROM reviews v JOIN tools t ON t.id = v.tool_id LEFT JOIN users su ON su.id = v.submitted_by LEFT JOIN users du ON du.id = v.decided_by`

func scanReview(row interface{ Scan(...any) error }) (Review, error) {
	var v Review
	var submitted int64
	var decided sql.NullInt64
	var state string
	if err := row.Scan(&v.ID, &v.ToolID, &v.VersionID, &v.SubmittedBy, &v.Note, &submitted, &v.Status, &v.DecidedBy, &decided, &v.Comment,
		&v.ToolSlug, &v.ToolTitle, &v.ToolAuthorID, &v.PublishedVersionID, &v.SubmitterName, &state, &v.DeciderName); err != nil {
		return Review{}, mapErr(err)
	}
	if state == StateDeleted {
		v.SubmitterName = DeletedUserName
	}
	v.SubmittedAt = fromMS(submitted)
	if decided.Valid {
		t := fromMS(decided.Int64)
		v.DecidedAt = &t
	}
	return v, nil
}

// SubmitReview stores v, pending, and audit event e with it, in one transaction. A
// pending review of another version of the same tool becomes superseded; one of the
// same version gives ErrConflict.
func (s *Store) SubmitReview(ctx context.Context, v Review, e AuditEvent) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var pending string
		err := s.txQueryRow(ctx, tx, "SELECT version_id FROM reviews WHERE tool_id = ? AND status = ?", v.ToolID, ReviewPending).Scan(&pending)
		switch {
		case err == nil && pending == v.VersionID:
			return fmt.Errorf("%w: version %s waits for review already", ErrConflict, v.VersionID)
		case err == nil:
			if _, err := s.txExec(ctx, tx, "UPDATE reviews SET status = ? WHERE tool_id = ? AND status = ?", ReviewSuperseded, v.ToolID, ReviewPending); err != nil {
				return err
			}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO reviews (id, tool_id, version_id, submitted_by, note, submitted_at, status, decided_by, comment)
			VALUES (?, ?, ?, ?, ?, ?, ?, '', '')`, v.ID, v.ToolID, v.VersionID, v.SubmittedBy, v.Note, ms(v.SubmittedAt), ReviewPending); err != nil {
			return fmt.Errorf("submitting version %s for review: %w", v.VersionID, err)
		}
		return s.txAudit(ctx, tx, e)
	})
}

// DecideReview records the decision on pending review id: status (ReviewApproved or
// ReviewChangesRequested) by by at, with comment, and audit event e. Approving also
// publishes the review's version. A review that is not pending gives ErrNotPending,
// one that does not exist ErrNotFound; either way nothing changes.
func (s *Store) DecideReview(ctx context.Context, id, status, by, comment string, at time.Time, e AuditEvent) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var toolID, versionID string
		if err := s.txQueryRow(ctx, tx, "SELECT tool_id, version_id FROM reviews WHERE id = ?", id).Scan(&toolID, &versionID); err != nil {
			return fmt.Errorf("review %q: %w", id, mapErr(err))
		}
		res, err := s.txExec(ctx, tx, "UPDATE reviews SET status = ?, decided_by = ?, decided_at = ?, comment = ? WHERE id = ? AND status = ?",
			status, by, ms(at), comment, id, ReviewPending)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("review %s: %w", id, ErrNotPending)
		}
		if status == ReviewApproved {
			if _, err := s.txExec(ctx, tx, "UPDATE tools SET published_version_id = ?, updated_at = ? WHERE id = ?", versionID, ms(at), toolID); err != nil {
				return err
			}
		}
		return s.txAudit(ctx, tx, e)
	})
}

// txAudit stores audit event e in tx.
func (s *Store) txAudit(ctx context.Context, tx *sql.Tx, e AuditEvent) error {
	if e.Details == "" {
		e.Details = "{}"
	}
	_, err := s.txExec(ctx, tx, "INSERT INTO audit (id, at, actor_id, actor, action, target, address, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		e.ID, ms(e.At), e.ActorID, e.Actor, e.Action, e.Target, e.Address, e.Details)
	if err != nil {
		return fmt.Errorf("storing an audit event: %w", err)
	}
	return nil
}

// Review returns review id.
func (s *Store) Review(ctx context.Context, id string) (Review, error) {
	v, err := scanReview(s.queryRow(ctx, "SELECT "+reviewCols+reviewFrom+" WHERE v.id = ?", id))
	if err != nil {
		return Review{}, fmt.Errorf("review %q: %w", id, err)
	}
	return v, nil
}

// ReviewFilter selects reviews for a listing, newest first.
type ReviewFilter struct {
	Status string // "": every status
	ToolID string // "": every tool
	// UserID limits the listing to the reviews that user submitted or decided (for
	// their export); "": anyone's.
	UserID string
	Before string // only reviews with an id before this one: the next page
	Limit  int
}

// Reviews lists the reviews f selects, newest first (ids grow with time).
func (s *Store) Reviews(ctx context.Context, f ReviewFilter) ([]Review, error) {
	q := "SELECT " + reviewCols + reviewFrom + " WHERE 1 = 1"
	var args []any
	if f.Status != "" {
		q += " AND v.status = ?"
		args = append(args, f.Status)
	}
	if f.ToolID != "" {
		q += " AND v.tool_id = ?"
		args = append(args, f.ToolID)
	}
	if f.UserID != "" {
		q += " AND (v.submitted_by = ? OR v.decided_by = ?)"
		args = append(args, f.UserID, f.UserID)
	}
	if f.Before != "" {
		q += " AND v.id < ?"
		args = append(args, f.Before)
	}
	q += " ORDER BY v.id DESC LIMIT ?"
	args = append(args, f.Limit)
	rows, err := s.query(ctx, q, args...)
	return scanAll(rows, err, scanReview)
}
