package store

import (
	"context"
	"fmt"
	"time"
)

// SetFavourite marks toolID as a favourite of userID (on) or not. Either way it is
// idempotent: marking twice keeps one mark, unmarking an unmarked tool changes nothing.
func (s *Store) SetFavourite(ctx context.Context, userID, toolID string, on bool, now time.Time) error {
	var err error
	if on {
		_, err = s.exec(ctx, "INSERT INTO favourites (user_id, tool_id, created_at) VALUES (?, ?, ?) ON CONFLICT (user_id, tool_id) DO NOTHING", userID, toolID, ms(now))
	} else {
		_, err = s.exec(ctx, "DELETE FROM favourites WHERE user_id = ? AND tool_id = ?", userID, toolID)
	}
	if err != nil {
		return fmt.Errorf("favourite %q of %q: %w", toolID, userID, err)
	}
	return nil
}

// Favourites lists the ids of userID's favourite tools, most recently marked first.
func (s *Store) Favourites(ctx context.Context, userID string) ([]string, error) {
	rows, err := s.query(ctx, "SELECT tool_id FROM favourites WHERE user_id = ? ORDER BY created_at DESC, tool_id", userID)
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (string, error) {
		var id string
		return id, row.Scan(&id)
	})
}

// RecentTools lists the ids of the distinct tools userID ran in runContext, the most
// recently run first, at most limit of them. The index runs_user_context_tool serves it:
// one index range per user and context, grouped by tool.
func (s *Store) RecentTools(ctx context.Context, userID, runContext string, limit int) ([]string, error) {
	rows, err := s.query(ctx, "SELECT tool_id FROM runs WHERE user_id = ? AND context = ? GROUP BY tool_id ORDER BY MAX(created_at) DESC, tool_id LIMIT ?",
		userID, runContext, limit)
	return scanAll(rows, err, func(row interface{ Scan(...any) error }) (string, error) {
		var id string
		return id, row.Scan(&id)
	})
}
