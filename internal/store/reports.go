package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Problem report statuses.
const (
	ReportOpen   = "open"
	ReportClosed = "closed"
)

// Report is a problem report: a run's owner telling the maintainers of the run's tool
// that it went wrong. The run's status, error summary and input manifest are the run's,
// read with the report (a report goes with its run).
type Report struct {
	ID         string
	RunID      string
	ToolID     string
	VersionID  string
	UserID     string // the reporter: the run's owner
	Message    string
	ShareFiles bool // the maintainers may see the run's input files
	Status     string
	CreatedAt  time.Time
	ClosedAt   *time.Time
	ClosedBy   string

	// Read from the run, the tool and the reporter.
	UserName      string // the reporter's name
	ToolSlug      string
	ToolTitle     string
	RunStatus     string
	ErrorSummary  string
	InputManifest string // JSON {"files": [...]}
}

const reportCols = `p.id, p.run_id, p.tool_id, p.version_id, p.user_id, p.message, p.share_files, p.status, p.created_at, p.closed_at, p.closed_by,
	u.name, t.slug, t.title, r.status, r.error_summary, r.input_manifest`

const reportFrom = ` FROM problem_reports p JOIN runs r ON r.id = p.run_id JOIN tools t ON t.id = p.tool_id JOIN users u ON u.id = p.user_id`

func scanReport(row interface{ Scan(...any) error }) (Report, error) {
	var p Report
	var created int64
	var closed sql.NullInt64
	if err := row.Scan(&p.ID, &p.RunID, &p.ToolID, &p.VersionID, &p.UserID, &p.Message, &p.ShareFiles, &p.Status, &created, &closed, &p.ClosedBy,
		&p.UserName, &p.ToolSlug, &p.ToolTitle, &p.RunStatus, &p.ErrorSummary, &p.InputManifest); err != nil {
		return Report{}, mapErr(err)
	}
	p.CreatedAt = fromMS(created)
	if closed.Valid {
		t := fromMS(closed.Int64)
		p.ClosedAt = &t
	}
	return p, nil
}

// CreateReport stores p, open. A second report of the same run gives ErrConflict.
func (s *Store) CreateReport(ctx context.Context, p Report) error {
	_, err := s.exec(ctx, `INSERT INTO problem_reports (id, run_id, tool_id, version_id, user_id, message, share_files, status, created_at, closed_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '')`, p.ID, p.RunID, p.ToolID, p.VersionID, p.UserID, p.Message, p.ShareFiles, ReportOpen, ms(p.CreatedAt))
	if err != nil {
		return fmt.Errorf("reporting run %s: %w", p.RunID, err)
	}
	return nil
}

// Report returns the report id.
func (s *Store) Report(ctx context.Context, id string) (Report, error) {
	p, err := scanReport(s.queryRow(ctx, "SELECT "+reportCols+reportFrom+" WHERE p.id = ?", id))
	if err != nil {
		return Report{}, fmt.Errorf("report %q: %w", id, err)
	}
	return p, nil
}

// RunReport returns the report of run runID.
func (s *Store) RunReport(ctx context.Context, runID string) (Report, error) {
	p, err := scanReport(s.queryRow(ctx, "SELECT "+reportCols+reportFrom+" WHERE p.run_id = ?", runID))
	if err != nil {
		return Report{}, fmt.Errorf("the report of run %q: %w", runID, err)
	}
	return p, nil
}

// ReportsSince counts the reports userID made at or after since.
func (s *Store) ReportsSince(ctx context.Context, userID string, since time.Time) (int, error) {
	var n int
	err := s.queryRow(ctx, "SELECT COUNT(*) FROM problem_reports WHERE user_id = ? AND created_at >= ?", userID, ms(since)).Scan(&n)
	return n, err
}

// ReportFilter selects reports for a listing, newest first.
type ReportFilter struct {
	// MaintainerID limits the listing to the reports on tools that user maintains;
	// empty means every report (an admin's listing). Who maintains a tool is
	// catalog.Maintains's rule, which this query follows: the tool's maintainers
	// (tool_maintainers) and its author.
	MaintainerID string
	Before       string // only reports with an id before this one: the next page
	Limit        int
}

// Reports lists the reports f selects, newest first (ids grow with time).
func (s *Store) Reports(ctx context.Context, f ReportFilter) ([]Report, error) {
	q := "SELECT " + reportCols + reportFrom + " WHERE 1 = 1"
	var args []any
	if f.MaintainerID != "" {
		q += " AND (t.author_id = ? OR EXISTS (SELECT 1 FROM tool_maintainers m WHERE m.tool_id = t.id AND m.user_id = ?))"
		args = append(args, f.MaintainerID, f.MaintainerID)
	}
	if f.Before != "" {
		q += " AND p.id < ?"
		args = append(args, f.Before)
	}
	q += " ORDER BY p.id DESC LIMIT ?"
	args = append(args, f.Limit)
	rows, err := s.query(ctx, q, args...)
	return scanAll(rows, err, scanReport)
}

// UserReports lists the reports userID made, oldest first (for an export).
func (s *Store) UserReports(ctx context.Context, userID string) ([]Report, error) {
	rows, err := s.query(ctx, "SELECT "+reportCols+reportFrom+" WHERE p.user_id = ? ORDER BY p.id", userID)
	return scanAll(rows, err, scanReport)
}

// CloseReport closes report id for user by at, and reports whether it was open.
func (s *Store) CloseReport(ctx context.Context, id, by string, at time.Time) (bool, error) {
	res, err := s.exec(ctx, "UPDATE problem_reports SET status = ?, closed_at = ?, closed_by = ? WHERE id = ? AND status = ?",
		ReportClosed, ms(at), by, id, ReportOpen)
	if err != nil {
		return false, fmt.Errorf("closing report %s: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
