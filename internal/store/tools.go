package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Tool is a script people run; its published version is what users get.
type Tool struct {
	ID                string
	Slug              string
	Title             string
	Description       string
	Summary           string // one or two sentences for the tool list
	UsageInstructions string // markdown, shown on the tool page
	AuthorID          string
	AuthorName        string // DeletedUserName when the author was deleted
	// MaintainerIDs are the users who maintain the tool (tool_maintainers): its author,
	// unless the author was deleted, and those a maintainer or an admin added.
	// catalog.Maintains reads it.
	MaintainerIDs      []string
	PublishedVersionID string // empty when nothing is published
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// ToolVersion is one saved source of a tool.
type ToolVersion struct {
	ID         string
	ToolID     string
	Source     string
	Entrypoint string
	// InputSchema and SettingsSchema are the version's input_schema and
	// settings_schema as JSON (docs/spec.md §5b); nil when it has none.
	InputSchema    json.RawMessage
	SettingsSchema json.RawMessage
	CreatedBy      string
	// CreatorName is the name of the user who made the version; DeletedUserName when
	// they were deleted.
	CreatorName string
	CreatedAt   time.Time
	// SyntaxError and SyntaxLine are where Python's compiler stopped in Source, as the
	// editor's check found it on saving ("" and 0: it compiled, or was not checked).
	SyntaxError string
	SyntaxLine  int
	// Number counts the tool's versions 1, 2, 3… in the order they were made; the store
	// gives it when the version is stored.
	Number int
	// Note says what changed in this version ("" for none).
	Note string
}

// toolCols are the columns scanTool reads: the author's name (authorName), then the
// maintainers' ids joined by commas (ids have none; string_agg is both SQLite's and
// PostgreSQL's).
const toolCols = "id, slug, title, description, summary, usage_instructions, author_id, COALESCE(published_version_id, ''), created_at, updated_at, " +
	"COALESCE((SELECT CASE WHEN a.state = 'deleted' THEN '' ELSE a.name END FROM users a WHERE a.id = tools.author_id), ''), " +
	"COALESCE((SELECT string_agg(m.user_id, ',') FROM tool_maintainers m WHERE m.tool_id = tools.id), '')"

func scanTool(row interface{ Scan(...any) error }) (Tool, error) {
	var t Tool
	var created, updated int64
	var maintainers string
	if err := row.Scan(&t.ID, &t.Slug, &t.Title, &t.Description, &t.Summary, &t.UsageInstructions, &t.AuthorID, &t.PublishedVersionID, &created, &updated, &t.AuthorName, &maintainers); err != nil {
		return Tool{}, mapErr(err)
	}
	if maintainers != "" {
		t.MaintainerIDs = strings.Split(maintainers, ",")
	}
	t.CreatedAt, t.UpdatedAt = fromMS(created), fromMS(updated)
	if t.AuthorName == "" {
		t.AuthorName = DeletedUserName
	}
	return t, nil
}

const versionCols = "id, tool_id, source, entrypoint, input_schema, settings_schema, created_by, created_at, syntax_error, syntax_line, note"

// versionReadCols are the columns scanVersion reads: versionCols and the creator's name.
const versionReadCols = versionCols + ", number, " +
	"COALESCE((SELECT CASE WHEN a.state = 'deleted' THEN '' ELSE a.name END FROM users a WHERE a.id = tool_versions.created_by), '')"

func scanVersion(row interface{ Scan(...any) error }) (ToolVersion, error) {
	var v ToolVersion
	var created int64
	var input, settings sql.NullString
	if err := row.Scan(&v.ID, &v.ToolID, &v.Source, &v.Entrypoint, &input, &settings, &v.CreatedBy, &created, &v.SyntaxError, &v.SyntaxLine, &v.Note, &v.Number, &v.CreatorName); err != nil {
		return ToolVersion{}, mapErr(err)
	}
	if v.CreatorName == "" {
		v.CreatorName = DeletedUserName
	}
	if input.Valid {
		v.InputSchema = json.RawMessage(input.String)
	}
	if settings.Valid {
		v.SettingsSchema = json.RawMessage(settings.String)
	}
	v.CreatedAt = fromMS(created)
	return v, nil
}

// nullJSON stores nil as NULL.
func nullJSON(b json.RawMessage) sql.NullString {
	return sql.NullString{String: string(b), Valid: b != nil}
}

// CreateTool stores a tool with its first version, publishing it when publish is set. A
// taken slug gives ErrConflict.
func (s *Store) CreateTool(ctx context.Context, t Tool, v ToolVersion, publish bool) (Tool, error) {
	if publish {
		t.PublishedVersionID = v.ID
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind("INSERT INTO tools (id, slug, title, description, summary, usage_instructions, author_id, published_version_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?)"),
			t.ID, t.Slug, t.Title, t.Description, t.Summary, t.UsageInstructions, t.AuthorID, ms(t.CreatedAt), ms(t.UpdatedAt)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind("INSERT INTO tool_maintainers (tool_id, user_id, added_by, added_at) VALUES (?, ?, ?, ?)"),
			t.ID, t.AuthorID, t.AuthorID, ms(t.CreatedAt)); err != nil {
			return err
		}
		if _, err := insertVersion(ctx, s, tx, v); err != nil {
			return err
		}
		if publish {
			_, err := tx.ExecContext(ctx, s.rebind("UPDATE tools SET published_version_id = ? WHERE id = ?"), v.ID, t.ID)
			return err
		}
		return nil
	})
	if err != nil {
		return Tool{}, fmt.Errorf("creating tool %q: %w", t.Slug, err)
	}
	t.MaintainerIDs = []string{t.AuthorID}
	return t, nil
}

// insertVersion stores v with the next number of its tool and returns that number.
func insertVersion(ctx context.Context, s *Store, tx *sql.Tx, v ToolVersion) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, s.rebind("INSERT INTO tool_versions ("+versionCols+", number) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "+
		"(SELECT COALESCE(MAX(number), 0) + 1 FROM tool_versions WHERE tool_id = ?)) RETURNING number"),
		v.ID, v.ToolID, v.Source, v.Entrypoint, nullJSON(v.InputSchema), nullJSON(v.SettingsSchema), v.CreatedBy, ms(v.CreatedAt), v.SyntaxError, v.SyntaxLine,
		v.Note, v.ToolID).Scan(&n)
	return n, err
}

// CreateVersion stores a new version of a tool, with the tool's next number (read it
// back with ToolVersion). The tool's row is written first: on PostgreSQL that holds its
// lock for the rest of the transaction, so two saves at once number their versions one
// after the other (SQLite has one writer); the unique (tool_id, number) index backs this.
func (s *Store) CreateVersion(ctx context.Context, v ToolVersion) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind("UPDATE tools SET updated_at = ? WHERE id = ?"), ms(v.CreatedAt), v.ToolID); err != nil {
			return err
		}
		_, err := insertVersion(ctx, s, tx, v)
		return err
	})
}

// Publish makes versionID the tool's published version.
func (s *Store) Publish(ctx context.Context, toolID, versionID string, now time.Time) error {
	_, err := s.exec(ctx, "UPDATE tools SET published_version_id = ?, updated_at = ? WHERE id = ?", versionID, ms(now), toolID)
	return err
}

// Unpublish leaves the tool with no published version.
func (s *Store) Unpublish(ctx context.Context, toolID string, now time.Time) error {
	_, err := s.exec(ctx, "UPDATE tools SET published_version_id = NULL, updated_at = ? WHERE id = ?", ms(now), toolID)
	return err
}

// Tool returns a tool by id or by slug.
func (s *Store) Tool(ctx context.Context, idOrSlug string) (Tool, error) {
	t, err := scanTool(s.queryRow(ctx, "SELECT "+toolCols+" FROM tools WHERE id = ? OR slug = ?", idOrSlug, idOrSlug))
	if err != nil {
		return Tool{}, fmt.Errorf("tool %q: %w", idOrSlug, err)
	}
	return t, nil
}

// Tools lists tools by slug: the published ones, plus every tool authored or maintained
// by userID (empty: none), or all tools when all is set.
func (s *Store) Tools(ctx context.Context, userID string, all bool) ([]Tool, error) {
	rows, err := s.query(ctx, "SELECT "+toolCols+" FROM tools WHERE ? OR published_version_id IS NOT NULL OR author_id = ? "+
		"OR EXISTS (SELECT 1 FROM tool_maintainers m WHERE m.tool_id = tools.id AND m.user_id = ?) ORDER BY slug", all, userID, userID)
	return scanAll(rows, err, scanTool)
}

// ToolVersion returns a tool version.
func (s *Store) ToolVersion(ctx context.Context, id string) (ToolVersion, error) {
	v, err := scanVersion(s.queryRow(ctx, "SELECT "+versionReadCols+" FROM tool_versions WHERE id = ?", id))
	if err != nil {
		return ToolVersion{}, fmt.Errorf("tool version %q: %w", id, err)
	}
	return v, nil
}

// Versions lists a tool's versions, newest first.
func (s *Store) Versions(ctx context.Context, toolID string) ([]ToolVersion, error) {
	rows, err := s.query(ctx, "SELECT "+versionReadCols+" FROM tool_versions WHERE tool_id = ? ORDER BY created_at DESC, id DESC", toolID)
	return scanAll(rows, err, scanVersion)
}

// IsNotFound reports whether err is ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// UpdateToolInfo sets a tool's title, description, summary and usage instructions.
func (s *Store) UpdateToolInfo(ctx context.Context, t Tool, now time.Time) error {
	_, err := s.exec(ctx, "UPDATE tools SET title = ?, description = ?, summary = ?, usage_instructions = ?, updated_at = ? WHERE id = ?",
		t.Title, t.Description, t.Summary, t.UsageInstructions, ms(now), t.ID)
	return err
}

// ToolSettings is one user's saved settings for a tool in one scope: "" for production,
// "sandbox:{version_id}" for the editor sandbox (docs/spec.md §5b).
type ToolSettings struct {
	UserID, ToolID, Scope string
	Values                json.RawMessage // a JSON object
	UpdatedAt             time.Time
}

// Settings returns the saved settings of user for tool in scope, or ErrNotFound.
func (s *Store) Settings(ctx context.Context, userID, toolID, scope string) (ToolSettings, error) {
	ts := ToolSettings{UserID: userID, ToolID: toolID, Scope: scope}
	var vals string
	var updated int64
	err := s.queryRow(ctx, "SELECT vals, updated_at FROM tool_settings WHERE user_id = ? AND tool_id = ? AND scope = ?",
		userID, toolID, scope).Scan(&vals, &updated)
	if err != nil {
		return ToolSettings{}, mapErr(err)
	}
	ts.Values, ts.UpdatedAt = json.RawMessage(vals), fromMS(updated)
	return ts, nil
}

// PutSettings stores ts, replacing what the user had saved for the tool in its scope.
func (s *Store) PutSettings(ctx context.Context, ts ToolSettings) error {
	_, err := s.exec(ctx, `INSERT INTO tool_settings (user_id, tool_id, scope, vals, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (user_id, tool_id, scope) DO UPDATE SET vals = excluded.vals, updated_at = excluded.updated_at`,
		ts.UserID, ts.ToolID, ts.Scope, string(ts.Values), ms(ts.UpdatedAt))
	return err
}
