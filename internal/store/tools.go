package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Tool is a script people run; its published version is what users get.
type Tool struct {
	ID                 string
	Slug               string
	Title              string
	Description        string
	AuthorID           string
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
	CreatedBy  string
	CreatedAt  time.Time
}

const toolCols = "id, slug, title, description, author_id, COALESCE(published_version_id, ''), created_at, updated_at"

func scanTool(row interface{ Scan(...any) error }) (Tool, error) {
	var t Tool
	var created, updated int64
	if err := row.Scan(&t.ID, &t.Slug, &t.Title, &t.Description, &t.AuthorID, &t.PublishedVersionID, &created, &updated); err != nil {
		return Tool{}, mapErr(err)
	}
	t.CreatedAt, t.UpdatedAt = fromMS(created), fromMS(updated)
	return t, nil
}

const versionCols = "id, tool_id, source, entrypoint, created_by, created_at"

func scanVersion(row interface{ Scan(...any) error }) (ToolVersion, error) {
	var v ToolVersion
	var created int64
	if err := row.Scan(&v.ID, &v.ToolID, &v.Source, &v.Entrypoint, &v.CreatedBy, &created); err != nil {
		return ToolVersion{}, mapErr(err)
	}
	v.CreatedAt = fromMS(created)
	return v, nil
}

// CreateTool stores a tool with its first version, publishing it when publish is set. A
// taken slug gives ErrConflict.
func (s *Store) CreateTool(ctx context.Context, t Tool, v ToolVersion, publish bool) (Tool, error) {
	if publish {
		t.PublishedVersionID = v.ID
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind("INSERT INTO tools (id, slug, title, description, author_id, published_version_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)"),
			t.ID, t.Slug, t.Title, t.Description, t.AuthorID, ms(t.CreatedAt), ms(t.UpdatedAt)); err != nil {
			return err
		}
		if err := insertVersion(ctx, s, tx, v); err != nil {
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
	return t, nil
}

func insertVersion(ctx context.Context, s *Store, tx *sql.Tx, v ToolVersion) error {
	_, err := tx.ExecContext(ctx, s.rebind("INSERT INTO tool_versions ("+versionCols+") VALUES (?, ?, ?, ?, ?, ?)"),
		v.ID, v.ToolID, v.Source, v.Entrypoint, v.CreatedBy, ms(v.CreatedAt))
	return err
}

// CreateVersion stores a new version of a tool.
func (s *Store) CreateVersion(ctx context.Context, v ToolVersion) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := insertVersion(ctx, s, tx, v); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.rebind("UPDATE tools SET updated_at = ? WHERE id = ?"), ms(v.CreatedAt), v.ToolID)
		return err
	})
}

// Publish makes versionID the tool's published version.
func (s *Store) Publish(ctx context.Context, toolID, versionID string, now time.Time) error {
	_, err := s.exec(ctx, "UPDATE tools SET published_version_id = ?, updated_at = ? WHERE id = ?", versionID, ms(now), toolID)
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

// Tools lists tools by slug: the published ones, plus every tool authored by authorID
// (empty: none), or all tools when all is set.
func (s *Store) Tools(ctx context.Context, authorID string, all bool) ([]Tool, error) {
	rows, err := s.query(ctx, "SELECT "+toolCols+" FROM tools WHERE ? OR published_version_id IS NOT NULL OR author_id = ? ORDER BY slug", all, authorID)
	return scanAll(rows, err, scanTool)
}

// ToolVersion returns a tool version.
func (s *Store) ToolVersion(ctx context.Context, id string) (ToolVersion, error) {
	v, err := scanVersion(s.queryRow(ctx, "SELECT "+versionCols+" FROM tool_versions WHERE id = ?", id))
	if err != nil {
		return ToolVersion{}, fmt.Errorf("tool version %q: %w", id, err)
	}
	return v, nil
}

// Versions lists a tool's versions, newest first.
func (s *Store) Versions(ctx context.Context, toolID string) ([]ToolVersion, error) {
	rows, err := s.query(ctx, "SELECT "+versionCols+" FROM tool_versions WHERE tool_id = ? ORDER BY created_at DESC, id DESC", toolID)
	return scanAll(rows, err, scanVersion)
}

// IsNotFound reports whether err is ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
