package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// settingsOf is a user's settings for a tool (docs/spec.md §5b). updated_at is null when nothing
// was saved yet.
func settingsOf(st catalog.Settings) wire.Settings {
	out := wire.Settings{SettingsSchema: st.Schema, Values: st.Values}
	if out.Values == nil {
		out.Values = map[string]any{}
	}
	if !st.UpdatedAt.IsZero() {
		out.UpdatedAt = &st.UpdatedAt
	}
	return out
}

// settingsRequest is the body of a PUT of settings: the values to save, all of them.
type settingsRequest wire.SettingsUpdate

// values reads the settings to save. values is required and must be an object: a body
// without it, or with null, would otherwise read as {} and wipe what the user saved;
// {} itself clears them. Numbers stay as written (json.Number), so one too large for a
// float64 is refused by the settings' own rules, naming its key, not by the decoder.
func (req settingsRequest) values() (map[string]any, error) {
	raw := bytes.TrimSpace(req.Values)
	if len(raw) == 0 {
		return nil, errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "values", "rule": "required"},
			`values is required: send {"values": {...}} with every setting to keep ({"values": {}} clears them)`)
	}
	if raw[0] != '{' {
		return nil, errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "values", "rule": contract.RuleType},
			"values must be a JSON object of setting names and values, not %s", jsonValueKind(raw[0]))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "values"}, "values is not a valid JSON object")
	}
	return out, nil
}

// jsonValueKind names the kind of JSON value that starts with c.
func jsonValueKind(c byte) string {
	switch c {
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "true or false"
	}
	return "a number"
}

// settingsStore is one place a user's settings live: production settings by tool, or
// the editor sandbox's by version. ref is the path value that names it.
type settingsStore struct {
	param string
	get   func(ctx context.Context, u store.User, ref string) (catalog.Settings, error)
	put   func(ctx context.Context, u store.User, ref string, values map[string]any) (catalog.Settings, error)
}

func (s *Server) toolSettings() settingsStore {
	return settingsStore{"tool", s.svc.Catalog.Settings, s.svc.Catalog.PutSettings}
}

func (s *Server) editorSettings() settingsStore {
	return settingsStore{"version", s.svc.Catalog.EditorSettings, s.svc.Catalog.PutEditorSettings}
}

// getSettings answers GET on a settings route: {settings_schema, values, updated_at}.
func (s *Server) getSettings(where settingsStore) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, u store.User) error {
		st, err := where.get(r.Context(), u, r.PathValue(where.param))
		if err != nil {
			return err
		}
		httpkit.WriteJSON(w, http.StatusOK, settingsOf(st))
		return nil
	}
}

// putSettings answers PUT on a settings route: {values} replaces what was saved.
func (s *Server) putSettings(where settingsStore) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, u store.User) error {
		var req settingsRequest
		if err := httpkit.DecodeJSON(w, r, &req); err != nil {
			return err
		}
		values, err := req.values()
		if err != nil {
			return err
		}
		st, err := where.put(r.Context(), u, r.PathValue(where.param), values)
		if err != nil {
			return err
		}
		httpkit.WriteJSON(w, http.StatusOK, settingsOf(st))
		return nil
	}
}
