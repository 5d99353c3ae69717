package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skrip-dev/skrip/examples"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// LoadDemo creates and publishes the example tools that are not there yet, authored by
// the user admin. It is idempotent, so `skrip serve --demo` may be used on every start.
func (a *App) LoadDemo(ctx context.Context) ([]string, error) {
	admin, err := a.Store.UserByName(ctx, "admin")
	if err != nil {
		return nil, fmt.Errorf("loading the demo tools needs the user admin: %w", err)
	}
	tools, err := examples.Tools()
	if err != nil {
		return nil, err
	}
	var loaded []string
	for _, ex := range tools {
		if _, err := a.Store.Tool(ctx, ex.Slug); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return loaded, err
		}
		now := time.Now()
		t := store.Tool{ID: ids.New("t"), Slug: ex.Slug, Title: ex.Title, Description: cmp.Or(ex.Description, ex.Summary), Summary: ex.Summary,
			UsageInstructions: ex.UsageInstructions, AuthorID: admin.ID, CreatedAt: now, UpdatedAt: now}
		v := store.ToolVersion{ID: ids.New("v"), ToolID: t.ID, Source: ex.Source, InputSchema: ex.InputSchema,
			SettingsSchema: ex.SettingsSchema, Entrypoint: "run_tool", CreatedBy: admin.ID, CreatedAt: now}
		if _, err := a.Store.CreateTool(ctx, t, v, true); err != nil && !errors.Is(err, store.ErrConflict) {
			return loaded, err
		}
		loaded = append(loaded, ex.Slug)
	}
	if len(loaded) > 0 {
		a.log.Info("loaded the demo tools", "tools", loaded)
	}
	return loaded, nil
}
