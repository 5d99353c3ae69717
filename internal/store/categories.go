package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Category groups tools on the home page. Admins manage the list; an author's proposal
// for a tool is stored unapproved until an admin approves it (docs/web-ui.md).
type Category struct {
	ID         string
	Slug       string
	Title      string
	Approved   bool
	ProposedBy string // the user id of the author who proposed it; "" when an admin made it
	CreatedAt  time.Time
	Tools      int // how many tools carry it (Categories fills it in)
}

// ToolCategory says tool ToolID carries category CategoryID.
type ToolCategory struct{ ToolID, CategoryID string }

const categoryCols = "id, slug, title, approved, proposed_by, created_at"

func scanCategory(row interface{ Scan(...any) error }) (Category, error) {
	var c Category
	var approved int
	var created int64
	if err := row.Scan(&c.ID, &c.Slug, &c.Title, &approved, &c.ProposedBy, &created); err != nil {
		return Category{}, mapErr(err)
	}
	c.Approved, c.CreatedAt = approved != 0, fromMS(created)
	return c, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CreateCategory stores c. A taken slug gives ErrConflict.
func (s *Store) CreateCategory(ctx context.Context, c Category) error {
	_, err := s.exec(ctx, "INSERT INTO categories ("+categoryCols+") VALUES (?, ?, ?, ?, ?, ?)",
		c.ID, c.Slug, c.Title, boolInt(c.Approved), c.ProposedBy, ms(c.CreatedAt))
	if err != nil {
		return fmt.Errorf("creating category %q: %w", c.Slug, err)
	}
	return nil
}

// Category returns the category with slug, or ErrNotFound.
func (s *Store) Category(ctx context.Context, slug string) (Category, error) {
	c, err := scanCategory(s.queryRow(ctx, "SELECT "+categoryCols+" FROM categories WHERE slug = ?", slug))
	if err != nil {
		return Category{}, fmt.Errorf("category %q: %w", slug, err)
	}
	return c, nil
}

// Categories lists every category, approved or proposed, by slug, each with the number
// of tools that carry it.
func (s *Store) Categories(ctx context.Context) ([]Category, error) {
	rows, err := s.query(ctx, "SELECT "+categoryCols+", (SELECT COUNT(*) FROM tool_categories tc WHERE tc.category_id = categories.id) FROM categories ORDER BY slug")
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (Category, error) {
		var c Category
		var approved int
		var created int64
		if err := row.Scan(&c.ID, &c.Slug, &c.Title, &approved, &c.ProposedBy, &created, &c.Tools); err != nil {
			return Category{}, err
		}
		c.Approved, c.CreatedAt = approved != 0, fromMS(created)
		return c, nil
	})
}

// UpdateCategory sets the title and approval of the category with c's id.
func (s *Store) UpdateCategory(ctx context.Context, c Category) error {
	res, err := s.exec(ctx, "UPDATE categories SET title = ?, approved = ? WHERE id = ?", c.Title, boolInt(c.Approved), c.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("category %q: %w", c.Slug, ErrNotFound)
	}
	return nil
}

// DeleteCategory removes a category; the tools that carried it lose it.
func (s *Store) DeleteCategory(ctx context.Context, id string) error {
	res, err := s.exec(ctx, "DELETE FROM categories WHERE id = ?", id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("category %q: %w", id, ErrNotFound)
	}
	return nil
}

// ToolCategories lists which tool carries which category, every pair.
func (s *Store) ToolCategories(ctx context.Context) ([]ToolCategory, error) {
	rows, err := s.query(ctx, "SELECT tool_id, category_id FROM tool_categories ORDER BY tool_id, category_id")
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (ToolCategory, error) {
		var tc ToolCategory
		return tc, row.Scan(&tc.ToolID, &tc.CategoryID)
	})
}

// SetToolCategories makes cats the categories of toolID, in one transaction. A category
// whose slug is not stored yet is stored as given (a proposal, unless Approved); one
// that is keeps its own id, title and approval, so two authors proposing the same new
// category at once share it. Proposals left with no tool are deleted.
func (s *Store) SetToolCategories(ctx context.Context, toolID string, cats []Category) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.txExec(ctx, tx, "DELETE FROM tool_categories WHERE tool_id = ?", toolID); err != nil {
			return err
		}
		for _, c := range cats {
			if _, err := s.txExec(ctx, tx, "INSERT INTO categories ("+categoryCols+") VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (slug) DO NOTHING",
				c.ID, c.Slug, c.Title, boolInt(c.Approved), c.ProposedBy, ms(c.CreatedAt)); err != nil {
				return err
			}
			var id string
			if err := s.txQueryRow(ctx, tx, "SELECT id FROM categories WHERE slug = ?", c.Slug).Scan(&id); err != nil {
				return err
			}
			if _, err := s.txExec(ctx, tx, "INSERT INTO tool_categories (tool_id, category_id) VALUES (?, ?) ON CONFLICT DO NOTHING", toolID, id); err != nil {
				return err
			}
		}
		// A proposal no tool carries any longer goes, so that proposals are bounded by
		// the tools' categories however often an author changes them.
		_, err := s.txExec(ctx, tx, "DELETE FROM categories WHERE approved = 0 AND NOT EXISTS (SELECT 1 FROM tool_categories tc WHERE tc.category_id = categories.id)")
		return err
	})
	if err != nil {
		return fmt.Errorf("setting the categories of tool %q: %w", toolID, mapErr(err))
	}
	return nil
}
