package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// maxActionBytes caps action.json, which also travels as an environment variable.
const maxActionBytes = 120 << 10

// errUnknownAction means the action is not one the session's latest run offered.
var errUnknownAction = errors.New("unknown action")

// sandboxContext is the editor sandbox's context for a version (ADR-0038).
func sandboxContext(versionID string) string { return "sandbox:" + versionID }

func checkContext(c string) error {
	if c == "" || len(c) > session.MaxContextLen {
		return errs.New(errInvalidRequest, map[string]any{"field": "context", "value": c}, "context must be 1 to %d characters", session.MaxContextLen)
	}
	return nil
}

// initialRun runs version as an initial run in context: an upload with files replaces
// the session's files (after every file was validated), one without keeps and injects
// them; a run that offers next actions starts the session over with its state.
func (s *Server) initialRun(w http.ResponseWriter, r *http.Request, u store.User, t store.Tool, v store.ToolVersion, sctx string, wallTime time.Duration) error {
	wait, err := parseWait(r, 60*time.Second)
	if err != nil {
		return err
	}
	dir, form, err := s.readRunUpload(r)
	if err != nil {
		return err
	}
	k := store.SessionKey{ToolID: t.ID, UserID: u.ID, Context: sctx}
	// The session's files change only once the run is admitted: a run refused for
	// capacity leaves them as they were.
	files := func(ctx context.Context) error {
		if len(form.Files) == 0 {
			_, err := s.sessions.Inject(ctx, k, dir)
			return err
		}
		names := make([]string, len(form.Files))
		for i, f := range form.Files {
			names[i] = f.Name
		}
		return s.sessions.Replace(ctx, k, dir, names)
	}
	rn, err := s.runs.Submit(r.Context(), run.Request{Tool: t, Version: v, User: u, Context: sctx, Kind: "initial", InputDir: dir,
		Inputs: form.Inputs, WallTime: wallTime, Before: files,
		AfterSuccess: func(ctx context.Context, runID string, res contract.Result) (*int64, error) {
			if len(res.NextActions) == 0 {
				return nil, nil
			}
			rev, err := s.sessions.Start(ctx, k, res.State, runID)
			return &rev, err
		}})
	if err != nil {
		os.RemoveAll(dir)
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
	r.SetPathValue("tool", req.ToolID)
	t, err := s.visibleTool(r, u)
	if err != nil {
		return err
	}
	if t.PublishedVersionID == "" {
		return errs.New(store.ErrConflict, map[string]any{"tool": t.Slug}, "%s has no published version", t.Slug)
	}
	v, err := s.store.ToolVersion(r.Context(), t.PublishedVersionID)
	if err != nil {
		return err
	}
	return s.runAction(w, r, u, t, v, req, 0)
}

// runAction runs an action as SPEC §6 orders it: the revision must be current, the action
// one the latest run offered and its input valid; the run gets the server's state and a
// snapshot of the session files; afterwards a compare-and-swap from expected to
// expected+1 records its state. Losing that race keeps the run and answers 409.
func (s *Server) runAction(w http.ResponseWriter, r *http.Request, u store.User, t store.Tool, v store.ToolVersion, req actionRequest, wallTime time.Duration) error {
	wait, err := parseWait(r, 60*time.Second)
	if err != nil {
		return err
	}
	k := store.SessionKey{ToolID: t.ID, UserID: u.ID, Context: req.Context}
	sess, err := s.sessions.Get(r.Context(), k)
	if err != nil {
		return err
	}
	expected := *req.ExpectedStateRev
	if expected != sess.StateRev {
		return conflict(expected, sess.StateRev)
	}
	latest, err := s.store.GetRun(r.Context(), sess.LatestRunID)
	if err != nil {
		return err
	}
	var offered []contract.NextAction
	json.Unmarshal([]byte(latest.NextActions), &offered)
	var action *contract.NextAction
	var ids []string
	for i := range offered {
		ids = append(ids, offered[i].ActionID)
		if offered[i].ActionID == req.ActionID {
			action = &offered[i]
		}
	}
	if action == nil {
		return errs.New(errUnknownAction, map[string]any{"action_id": req.ActionID, "offered": ids},
			"%q is not an action this session offers now; it offers: %s", req.ActionID, strings.Join(ids, ", "))
	}
	if err := contract.ValidateInput(*action, req.Input); err != nil {
		return err
	}
	if req.Input == nil {
		req.Input = map[string]any{}
	}
	dir, err := s.runs.NewInputDir()
	if err != nil {
		return err
	}
	act := contract.Action{ActionID: req.ActionID, Input: req.Input, State: json.RawMessage(sess.State)}
	b, _ := json.Marshal(act)
	// SKRIPTOTEKET_ACTION carries this JSON, and the kernel holds one environment string
	// to 128 KiB (MAX_ARG_STRLEN), escapes included.
	if len(b) > maxActionBytes {
		os.RemoveAll(dir)
		return errs.New(errTooLarge, map[string]any{"bytes": len(b), "limit_bytes": maxActionBytes},
			"the action's input and the session's state are %d bytes together; the limit is %d (120 KiB)", len(b), maxActionBytes)
	}
	if _, err = s.sessions.Inject(r.Context(), k, dir); err == nil {
		err = os.WriteFile(filepath.Join(dir, "action.json"), b, 0o444)
	}
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	rn, err := s.runs.Submit(r.Context(), run.Request{Tool: t, Version: v, User: u, Context: req.Context, Kind: "action",
		ActionID: req.ActionID, InputDir: dir, Action: &act, WallTime: wallTime,
		AfterSuccess: func(ctx context.Context, runID string, res contract.Result) (*int64, error) {
			ok, err := s.sessions.Advance(ctx, k, expected, res.State, runID)
			if err != nil || !ok {
				return nil, err
			}
			rev := expected + 1
			return &rev, nil
		}})
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	done, err := s.runs.Wait(r.Context(), rn.ID, wait)
	if err != nil {
		return err
	}
	if done.Status == store.StatusSucceeded && done.StateRev == nil {
		cur, _ := s.sessions.Get(r.Context(), k)
		return conflict(expected, cur.StateRev)
	}
	status := http.StatusCreated
	if !store.Terminal(done.Status) {
		status = http.StatusAccepted
	}
	writeJSON(w, status, map[string]any{"run_id": done.ID, "state_rev": done.StateRev, "run": toRunJSON(done, u)})
	return nil
}

func conflict(expected, current int64) error {
	return errs.New(session.ErrConflict, map[string]any{"expected": expected, "current": current},
		"This session changed in another tab or window (it is at revision %d, not %d). Reload to continue.", current, expected)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.visibleTool(r, u)
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
	t, err := s.visibleTool(r, u)
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
	v, t, err := s.ownedVersion(r, u)
	if err != nil {
		return err
	}
	return s.initialRun(w, r, u, t, v, sandboxContext(v.ID), s.sandboxTimeout)
}

func (s *Server) editorSession(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.ownedVersion(r, u)
	if err != nil {
		return err
	}
	return s.writeSession(w, r, store.SessionKey{ToolID: t.ID, UserID: u.ID, Context: sandboxContext(v.ID)})
}

func (s *Server) editorAction(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.ownedVersion(r, u)
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
	req.Context = sandboxContext(v.ID)
	return s.runAction(w, r, u, t, v, req, s.sandboxTimeout)
}
