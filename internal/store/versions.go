package store

import (
	"context"
	"time"
)

// VersionSummary is one line of a tool's versions list: a version without its source and
// schemas, with the status of its latest sandbox run.
type VersionSummary struct {
	ID, ToolID  string
	Number      int
	Note        string
	CreatedBy   string
	CreatorName string // DeletedUserName when they were deleted
	CreatedAt   time.Time
	// SyntaxError and SyntaxLine are as on ToolVersion.
	SyntaxError string
	SyntaxLine  int
	// LastSandboxStatus is the status of the version's latest run in its editor sandbox
	// (context "sandbox:{id}"), by anyone; "" when it has none.
	LastSandboxStatus string
}

// VersionSummaries lists a tool's versions, the newest (highest number) first.
func (s *Store) VersionSummaries(ctx context.Context, toolID string) ([]VersionSummary, error) {
	rows, err := s.query(ctx, `SELECT v.id, v.tool_id, v.number, v.note, v.created_by,
		COALESCE((SELECT CASE WHEN a.state = 'deleted' THEN '' ELSE a.name END FROM users a WHERE a.id = v.created_by), ''),
		v.created_at, v.syntax_error, v.syntax_line,
		COALESCE((SELECT r.status FROM runs r WHERE r.tool_id = v.tool_id AND r.context = 'sandbox:' || v.id
			ORDER BY r.created_at DESC, r.id DESC LIMIT 1), '')
		FROM tool_versions v WHERE v.tool_id = ? ORDER BY v.number DESC, v.created_at DESC`, toolID)
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (VersionSummary, error) {
		var v VersionSummary
		var created int64
		if err := row.Scan(&v.ID, &v.ToolID, &v.Number, &v.Note, &v.CreatedBy, &v.CreatorName, &created, &v.SyntaxError, &v.SyntaxLine,
			&v.LastSandboxStatus); err != nil {
			return VersionSummary{}, mapErr(err)
		}
		if v.CreatorName == "" {
			v.CreatorName = DeletedUserName
		}
		v.CreatedAt = fromMS(created)
		return v, nil
	})
}
