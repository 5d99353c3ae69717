package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

func checkContext(c string) error {
	if c == "" || len(c) > session.MaxContextLen {
		return errs.New(errInvalidRequest, map[string]any{"field": "context", "value": c}, "context must be 1 to %d characters", session.MaxContextLen)
	}
	return nil
}

// initialRun runs version as an initial run in context (run.Steps.Initial says how the
// session's files and state change) and answers with the run.
func (s *Server) initialRun(w http.ResponseWriter, r *http.Request, u store.User, t store.Tool, v store.ToolVersion, sctx string, wallTime time.Duration) error {
	wait, err := parseWait(r, 60*time.Second)
	if err != nil {
		return err
	}
	dir, form, err := s.readRunUpload(r)
	if err != nil {
		return err
	}
	rn, err := s.steps.Initial(r.Context(), run.Initial{Tool: t, Version: v, User: u, Context: sctx, Dir: dir, Form: form, WallTime: wallTime})
	if err != nil {
		return err
	}
	return s.answerRun(w, r, u, rn.ID, wait, http.StatusCreated)
}

// actionRequest is the body of start_action. State is there only to be refused: state is
// server-owned.
type actionRequest struct {
	ToolID           string          `json:"tool_id"`
	Context          string          `json:"context"`
	ActionID         string          `json:"action_id"`
	Input            map[string]any  `json:"input"`
	ExpectedStateRev *int64          `json:"expected_state_rev"`
	State            json.RawMessage `json:"state"`
}

func decodeAction(w http.ResponseWriter, r *http.Request) (actionRequest, error) {
	var req actionRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return req, err
	}
	if req.State != nil {
		return req, errs.New(errInvalidRequest, map[string]any{"field": "state"},
			"do not send state: the server keeps the session's state and gives it to the run")
	}
	if req.ActionID == "" {
		return req, errs.New(errInvalidRequest, map[string]any{"field": "action_id"}, "action_id is required")
	}
	if req.ExpectedStateRev == nil {
		return req, errs.New(errInvalidRequest, map[string]any{"field": "expected_state_rev"},
			"expected_state_rev is required: send the state_rev of the run whose action this is")
	}
	return req, nil
}

func (s *Server) startAction(w http.ResponseWriter, r *http.Request, u store.User) error {
	req, err := decodeAction(w, r)
	if err != nil {
		return err
	}
	if req.Context == "" {
		req.Context = "default"
	}
	if err := checkContext(req.Context); err != nil {
		return err
	}
	if strings.HasPrefix(req.Context, "sandbox:") {
		return errs.New(errInvalidRequest, map[string]any{"field": "context"},
			"sandbox contexts belong to the editor: POST /api/v1/editor/tool-versions/{version_id}/start-action")
	}
	t, v, err := s.catalog.Published(r.Context(), u, req.ToolID)
	if err != nil {
		return err
	}
	return s.runAction(w, r, u, t, v, req, 0)
}

// runAction runs an action (run.Steps.Action says how) and answers with it. A run that
// succeeded but lost the race for the session's revision is kept, and answered with 409.
func (s *Server) runAction(w http.ResponseWriter, r *http.Request, u store.User, t store.Tool, v store.ToolVersion, req actionRequest, wallTime time.Duration) error {
	wait, err := parseWait(r, 60*time.Second)
	if err != nil {
		return err
	}
	rn, err := s.steps.Action(r.Context(), run.Action{Tool: t, Version: v, User: u, Context: req.Context, ActionID: req.ActionID,
		Input: req.Input, ExpectedStateRev: *req.ExpectedStateRev, WallTime: wallTime})
	if err != nil {
		return err
	}
	done, err := s.runs.Wait(r.Context(), rn.ID, wait)
	if err != nil {
		return err
	}
	if run.LostRace(done) {
		cur, _ := s.sessions.Get(r.Context(), store.SessionKey{ToolID: t.ID, UserID: u.ID, Context: req.Context})
		return run.Conflict(*req.ExpectedStateRev, cur.StateRev)
	}
	status := http.StatusCreated
	if !store.Terminal(done.Status) {
		status = http.StatusAccepted
	}
	writeJSON(w, status, map[string]any{"run_id": done.ID, "state_rev": done.StateRev, "run": toRunJSON(done, u)})
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.catalog.Visible(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	c := r.PathValue("context")
	if err := checkContext(c); err != nil {
		return err
	}
	return s.writeSession(w, r, store.SessionKey{ToolID: t.ID, UserID: u.ID, Context: c})
}

func (s *Server) writeSession(w http.ResponseWriter, r *http.Request, k store.SessionKey) error {
	sess, err := s.sessions.Get(r.Context(), k)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tool_id": k.ToolID, "context": k.Context, "state_rev": sess.StateRev,
		"state": json.RawMessage(sess.State), "updated_at": sess.UpdatedAt})
	return nil
}

func (s *Server) sessionKeyOf(r *http.Request, u store.User) (store.SessionKey, error) {
	t, err := s.catalog.Visible(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return store.SessionKey{}, err
	}
	c := r.URL.Query().Get("context")
	if c == "" {
		c = "default"
	}
	if err := checkContext(c); err != nil {
		return store.SessionKey{}, err
	}
	return store.SessionKey{ToolID: t.ID, UserID: u.ID, Context: c}, nil
}

func (s *Server) getSessionFiles(w http.ResponseWriter, r *http.Request, u store.User) error {
	k, err := s.sessionKeyOf(r, u)
	if err != nil {
		return err
	}
	files, set, err := s.sessions.Files(r.Context(), k)
	if err != nil {
		return err
	}
	if set.SetID == "" {
		return errs.New(session.ErrNoSession, map[string]any{"context": k.Context}, "no session files for this tool in context %q", k.Context)
	}
	type fileJSON struct {
		Name   string `json:"name"`
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	out := make([]fileJSON, 0, len(files))
	for _, f := range files {
		out = append(out, fileJSON{f.Name, f.Bytes, f.SHA256})
	}
	body := map[string]any{"files": out, "last_accessed_at": nil, "expires_at": nil}
	if set.SetID != "" {
		body["last_accessed_at"] = set.LastAccessedAt
		body["expires_at"] = set.LastAccessedAt.Add(s.sessions.TTL())
	}
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (s *Server) deleteSessionFiles(w http.ResponseWriter, r *http.Request, u store.User) error {
	k, err := s.sessionKeyOf(r, u)
	if err != nil {
		return err
	}
	n, _, err := s.sessions.Clear(r.Context(), k)
	if err != nil {
		return err
	}
	if n == 0 {
		return errs.New(session.ErrNoSession, map[string]any{"context": k.Context}, "no session files for this tool in context %q", k.Context)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) editorRun(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.catalog.OwnedVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	return s.initialRun(w, r, u, t, v, run.SandboxContext(v.ID), s.sandboxTimeout)
}

func (s *Server) editorSession(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.catalog.OwnedVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	return s.writeSession(w, r, store.SessionKey{ToolID: t.ID, UserID: u.ID, Context: run.SandboxContext(v.ID)})
}

func (s *Server) editorAction(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.catalog.OwnedVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	req, err := decodeAction(w, r)
	if err != nil {
		return err
	}
	if req.ToolID != "" && req.ToolID != t.ID && req.ToolID != t.Slug {
		return errs.New(errInvalidRequest, map[string]any{"field": "tool_id"}, "tool_id %q is not the tool of version %s", req.ToolID, v.ID)
	}
	req.Context = run.SandboxContext(v.ID)
	return s.runAction(w, r, u, t, v, req, s.sandboxTimeout)
}
