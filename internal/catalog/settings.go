package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// MaxSettingsBytes caps one user's saved settings for a tool, as JSON.
const MaxSettingsBytes = 64 << 10

// Settings is a user's settings for a tool (docs/spec.md §5b): the schema they answer to and the
// saved values that still fit it. UpdatedAt is zero when nothing was saved.
type Settings struct {
	Schema    contract.SettingsSchema
	Values    map[string]any
	UpdatedAt time.Time
}

// scopeOf is where settings saved in session context c are kept: production's under
// "", the editor's under its context, so that an author's trial settings stay apart
// from production's and from other versions' as its session does.
func scopeOf(c session.Context) string {
	if c.IsEditor() {
		return c.String()
	}
	return ""
}

// Memory is the /work/memory.json of a run of version v by userID in context c
// (docs/runner-contract.md): {"settings": {...}}, what the user saved for the tool that
// still fits v's settings_schema, field by field; the editor's own settings in an
// editor context; {} when there are none.
func (s *Service) Memory(ctx context.Context, userID string, v store.ToolVersion, c session.Context) ([]byte, error) {
	schema, err := contract.ParseSettingsSchema(v.SettingsSchema)
	if err != nil || schema == nil {
		return []byte("{}"), err
	}
	saved, _, err := savedSettings(ctx, s.st, userID, v.ToolID, scopeOf(c))
	if err != nil {
		return nil, err
	}
	kept := contract.KeepValidSettings(schema, saved)
	if len(kept) == 0 {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]any{"settings": kept})
}

// Settings returns u's settings for the tool ref, against its published version's
// settings_schema. Values saved under an older schema that no longer fit are left out.
func (s *Service) Settings(ctx context.Context, u store.User, ref string) (Settings, error) {
	t, v, err := s.Published(ctx, u, ref)
	if err != nil {
		return Settings{}, err
	}
	return s.settings(ctx, u, t, v, "")
}

// PutSettings checks values against the published version's settings_schema and saves
// them as u's settings for the tool ref, replacing what u had saved.
func (s *Service) PutSettings(ctx context.Context, u store.User, ref string, values map[string]any) (Settings, error) {
	t, v, err := s.Published(ctx, u, ref)
	if err != nil {
		return Settings{}, err
	}
	return s.putSettings(ctx, u, t, v, "", values)
}

// EditorSettings returns u's editor settings for version id, which u must own: kept
// apart from production, one set per version.
func (s *Service) EditorSettings(ctx context.Context, u store.User, versionID string) (Settings, error) {
	v, t, err := s.OwnedVersion(ctx, u, versionID)
	if err != nil {
		return Settings{}, err
	}
	return s.settings(ctx, u, t, v, scopeOf(session.Editor(v.ID)))
}

// PutEditorSettings checks values against version id's settings_schema and saves them as
// u's editor settings for that version.
func (s *Service) PutEditorSettings(ctx context.Context, u store.User, versionID string, values map[string]any) (Settings, error) {
	v, t, err := s.OwnedVersion(ctx, u, versionID)
	if err != nil {
		return Settings{}, err
	}
	return s.putSettings(ctx, u, t, v, scopeOf(session.Editor(v.ID)), values)
}

func (s *Service) settings(ctx context.Context, u store.User, t store.Tool, v store.ToolVersion, scope string) (Settings, error) {
	schema, err := contract.ParseSettingsSchema(v.SettingsSchema)
	if err != nil {
		return Settings{}, err
	}
	saved, updated, err := savedSettings(ctx, s.st, u.ID, t.ID, scope)
	if err != nil {
		return Settings{}, err
	}
	return Settings{Schema: schema, Values: contract.KeepValidSettings(schema, saved), UpdatedAt: updated}, nil
}

func (s *Service) putSettings(ctx context.Context, u store.User, t store.Tool, v store.ToolVersion, scope string, values map[string]any) (Settings, error) {
	schema, err := contract.ParseSettingsSchema(v.SettingsSchema)
	if err != nil {
		return Settings{}, err
	}
	clean, err := contract.ValidateSettings(schema, values)
	if err != nil {
		return Settings{}, err
	}
	b, err := json.Marshal(clean)
	if err != nil {
		return Settings{}, err
	}
	if len(b) > MaxSettingsBytes {
		return Settings{}, errs.New(ErrInvalid, map[string]any{"field": "values", "rule": "max_length", "limit_bytes": MaxSettingsBytes},
			"the settings are %d bytes as JSON; the limit is %d bytes", len(b), MaxSettingsBytes)
	}
	now := s.now()
	if err := s.st.PutSettings(ctx, store.ToolSettings{UserID: u.ID, ToolID: t.ID, Scope: scope, Values: b, UpdatedAt: now}); err != nil {
		return Settings{}, err
	}
	return Settings{Schema: schema, Values: clean, UpdatedAt: now}, nil
}

// savedSettings returns the values a user saved for a tool in scope, as stored (nil and a
// zero time when none).
func savedSettings(ctx context.Context, st *store.Store, userID, toolID, scope string) (map[string]any, time.Time, error) {
	ts, err := st.Settings(ctx, userID, toolID, scope)
	if errors.Is(err, store.ErrNotFound) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	var vals map[string]any
	if err := json.Unmarshal(ts.Values, &vals); err != nil {
		return nil, time.Time{}, fmt.Errorf("the saved settings of user %s for tool %s: %w", userID, toolID, err)
	}
	return vals, ts.UpdatedAt, nil
}
