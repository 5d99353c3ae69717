package api

import (
	"net/http"
	"time"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/store"
)

// settingsJSON is a user's settings for a tool (SPEC §5b). updated_at is null when
// nothing was saved yet.
type settingsJSON struct {
	SettingsSchema contract.SettingsSchema `json:"settings_schema"`
	Values         map[string]any          `json:"values"`
	UpdatedAt      *time.Time              `json:"updated_at"`
}

func toSettingsJSON(st catalog.Settings) settingsJSON {
	out := settingsJSON{SettingsSchema: st.Schema, Values: st.Values}
	if out.Values == nil {
		out.Values = map[string]any{}
	}
	if !st.UpdatedAt.IsZero() {
		out.UpdatedAt = &st.UpdatedAt
	}
	return out
}

// settingsRequest is the body of a PUT of settings: the values to save, all of them.
type settingsRequest struct {
	Values map[string]any `json:"values"`
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request, u store.User) error {
	st, err := s.catalog.Settings(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSettingsJSON(st))
	return nil
}

func (s *Server) putSettings(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req settingsRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	st, err := s.catalog.PutSettings(r.Context(), u, r.PathValue("tool"), req.Values)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSettingsJSON(st))
	return nil
}

func (s *Server) getEditorSettings(w http.ResponseWriter, r *http.Request, u store.User) error {
	st, err := s.catalog.EditorSettings(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSettingsJSON(st))
	return nil
}

func (s *Server) putEditorSettings(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req settingsRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	st, err := s.catalog.PutEditorSettings(r.Context(), u, r.PathValue("version"), req.Values)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toSettingsJSON(st))
	return nil
}
