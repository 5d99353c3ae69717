package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/wire"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// initialRun runs version v as an initial run in context c (workflow.Service.Initial
// says how the session's files and state change) and answers with the run.
func (s *Server) initialRun(w http.ResponseWriter, r *http.Request, u store.User, t store.Tool, v store.ToolVersion, c session.Context) error {
	wait, err := parseWait(r, 60*time.Second)
	if err != nil {
		return err
	}
	in := workflow.Initial{Tool: t, Version: v, User: u, Context: c, Body: r}
	if isJSON(r) {
		if in, err = s.jsonRun(w, r, in); err != nil {
			return err
		}
	}
	rn, err := s.svc.Workflow.Initial(r.Context(), in)
	if err != nil {
		return err
	}
	return s.answerRun(w, r, u, rn.ID, wait, http.StatusCreated)
}

// isJSON reports whether r's body is application/json.
func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// jsonRun reads a run sent as application/json (wire.RunRequest): its inputs, and the
// caller's staged files named by file_keys, which the run takes as its uploaded files
// (copied in by upload.CopyFiles, under the same rules and caps as a multipart upload's,
// replacing the session's files as those would). Keys are looked up in the caller's own
// files only; a key with no file is 404 naming it, before anything runs or changes.
func (s *Server) jsonRun(w http.ResponseWriter, r *http.Request, in workflow.Initial) (workflow.Initial, error) {
	var req wire.RunRequest
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return in, err
	}
	inputs, err := upload.ParseInputs(req.Inputs)
	if err != nil {
		return in, err
	}
	in.Body, in.Form = nil, upload.Form{Inputs: inputs}
	lim := s.svc.Runs.UploadLimits()
	if len(req.FileKeys) > lim.MaxFiles {
		return in, errs.New(upload.ErrTooLarge, map[string]any{"field": "file_keys", "limit_files": lim.MaxFiles},
			"file_keys names %d files; a run takes at most %d", len(req.FileKeys), lim.MaxFiles)
	}
	if len(req.FileKeys) > 0 {
		// Staged files read into a run: the token must reach them, as for a sandbox's
		// stage (checkAlsoFiles).
		if c, ok := httpkit.CredentialFrom(r.Context()); ok && !c.Scope.Has(account.ScopeFiles) && !c.Scope.Has(account.ScopeRead) {
			return in, errs.New(account.ErrScope, map[string]any{"scope": c.Scope.Words(), "needs": []string{account.ScopeFiles, account.ScopeRead}, "field": "file_keys"},
				"file_keys reaches your staged files, outside this token's scope (%s); a run on staged files needs the scope runs and files (or read)", strings.Join(c.Scope.Words(), ","))
		}
	}
	ownerID := in.User.ID
	for _, key := range req.FileKeys {
		f, err := s.svc.Staging.Get(r.Context(), ownerID, key)
		if errors.Is(err, staging.ErrNotFound) {
			return in, errs.New(staging.ErrNotFound, map[string]any{"field": "file_keys", "key": key},
				"file_keys names %s, but you have no staged file under that key", key)
		}
		if err != nil {
			return in, err
		}
		in.Files = append(in.Files, upload.Source{Name: f.OriginalName, Size: f.Size, Key: f.Key,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return s.svc.Staging.Open(ctx, ownerID, f.Key) }})
	}
	return in, nil
}

// actionRequest is the body of start_action. State is there only to be refused: state is
// server-owned, so it is no part of the wire's request.
type actionRequest struct {
	wire.ActionRequest
	State json.RawMessage `json:"state"`
}

func decodeAction(w http.ResponseWriter, r *http.Request) (actionRequest, error) {
	var req actionRequest
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return req, err
	}
	if req.State != nil {
		return req, errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "state"},
			"do not send state: the server keeps the session's state and gives it to the run")
	}
	if req.ActionID == "" {
		return req, errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "action_id"}, "action_id is required")
	}
	if req.ExpectedStateRev == nil {
		return req, errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "expected_state_rev"},
			"expected_state_rev is required: send the state_rev of the run whose action this is")
	}
	return req, nil
}

func (s *Server) startAction(w http.ResponseWriter, r *http.Request, u store.User) error {
	req, err := decodeAction(w, r)
	if err != nil {
		return err
	}
	c, err := session.ParseContext(req.Context)
	if err != nil {
		return err
	}
	if c.IsEditor() {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "context"},
			"sandbox contexts belong to the editor: POST /api/v1/editor/tool-versions/{version_id}/start-action")
	}
	t, v, err := s.svc.Catalog.Published(r.Context(), u, req.ToolID)
	if err != nil {
		return err
	}
	return s.runAction(w, r, u, t, v, c, req)
}

// runAction runs an action (workflow.Service.Action says how) and answers with it. A run
// that succeeded but lost the race for the session's revision is kept, and answered with
// 409.
func (s *Server) runAction(w http.ResponseWriter, r *http.Request, u store.User, t store.Tool, v store.ToolVersion, c session.Context, req actionRequest) error {
	wait, err := parseWait(r, 60*time.Second)
	if err != nil {
		return err
	}
	rn, err := s.svc.Workflow.Action(r.Context(), workflow.Action{Tool: t, Version: v, User: u, Context: c, ActionID: req.ActionID,
		Input: req.Input, ExpectedStateRev: *req.ExpectedStateRev})
	if err != nil {
		return err
	}
	done, err := s.svc.Runs.Wait(r.Context(), rn.ID, wait)
	if err != nil {
		return err
	}
	if workflow.LostRace(done) {
		return s.svc.Workflow.RaceLost(r.Context(), done, *req.ExpectedStateRev)
	}
	status := http.StatusCreated
	if !store.Terminal(done.Status) {
		status = http.StatusAccepted
	}
	out, err := runOf(done, u)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, status, wire.ActionResult{Run: out, RunID: done.ID, StateRev: done.StateRev})
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, err := s.svc.Catalog.Visible(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	c, err := session.ParseContext(r.PathValue("context"))
	if err != nil {
		return err
	}
	return s.writeSession(w, r, t, u, c)
}

func (s *Server) writeSession(w http.ResponseWriter, r *http.Request, t store.Tool, u store.User, c session.Context) error {
	sess, err := s.svc.Workflow.Session(r.Context(), t, u, c)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, wire.Session{Context: c.String(), State: json.RawMessage(sess.State), StateRev: sess.StateRev,
		ToolID: t.ID, UpdatedAt: sess.UpdatedAt})
	return nil
}

// sessionOf is the tool of a session-files route and the context its query names.
func (s *Server) sessionOf(r *http.Request, u store.User) (store.Tool, session.Context, error) {
	t, err := s.svc.Catalog.Visible(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return t, session.Context{}, err
	}
	c, err := session.ParseContext(r.URL.Query().Get("context"))
	return t, c, err
}

func (s *Server) getSessionFiles(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, c, err := s.sessionOf(r, u)
	if err != nil {
		return err
	}
	files, set, err := s.svc.Workflow.Files(r.Context(), t, u, c)
	if err != nil {
		return err
	}
	if set.SetID == "" {
		return errs.New(session.ErrNoSession, map[string]any{"context": c.String()}, "no session files for this tool in context %q", c)
	}
	out := wire.SessionFiles{Files: make([]wire.SessionFile, 0, len(files))}
	for _, f := range files {
		out.Files = append(out.Files, wire.SessionFile{Name: f.Name, Bytes: f.Bytes, SHA256: f.SHA256})
	}
	accessed, expires := set.LastAccessedAt, set.LastAccessedAt.Add(s.svc.Workflow.FilesTTL())
	out.LastAccessedAt, out.ExpiresAt = &accessed, &expires
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteSessionFiles(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, c, err := s.sessionOf(r, u)
	if err != nil {
		return err
	}
	n, err := s.svc.Workflow.ClearFiles(r.Context(), t, u, c)
	if err != nil {
		return err
	}
	if n == 0 {
		return errs.New(session.ErrNoSession, map[string]any{"context": c.String()}, "no session files for this tool in context %q", c)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) editorRun(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.svc.Catalog.OwnedVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	return s.initialRun(w, r, u, t, v, session.Editor(v.ID))
}

func (s *Server) editorSession(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.svc.Catalog.OwnedVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	return s.writeSession(w, r, t, u, session.Editor(v.ID))
}

func (s *Server) editorAction(w http.ResponseWriter, r *http.Request, u store.User) error {
	v, t, err := s.svc.Catalog.OwnedVersion(r.Context(), u, r.PathValue("version"))
	if err != nil {
		return err
	}
	req, err := decodeAction(w, r)
	if err != nil {
		return err
	}
	if req.ToolID != "" && req.ToolID != t.ID && req.ToolID != t.Slug {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "tool_id"}, "tool_id %q is not the tool of version %s", req.ToolID, v.ID)
	}
	return s.runAction(w, r, u, t, v, session.Editor(v.ID), req)
}

// editorGoBack makes an earlier step of a version's sandbox session current again
// (workflow.Service.GoBack) and answers with the session.
func (s *Server) editorGoBack(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req wire.GoBackRequest
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Rev == nil {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "rev"}, "rev is required: the state_rev of the step to go back to")
	}
	if req.ExpectedStateRev == nil {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "expected_state_rev"},
			"expected_state_rev is required: send the session's state_rev as you last saw it")
	}
	sess, err := s.svc.Workflow.GoBack(r.Context(), u, r.PathValue("version"), *req.ExpectedStateRev, *req.Rev)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, sessionOut(sess))
	return nil
}

// editorContinue makes a version's sandbox session go on from another version's of the
// same tool (workflow.Service.ContinueFrom) and answers with the session.
func (s *Server) editorContinue(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req wire.ContinueRequest
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.FromVersionID == "" {
		return errs.New(httpkit.ErrInvalidRequest, map[string]any{"field": "from_version_id"},
			"from_version_id is required: the version of the same tool whose sandbox session to go on from")
	}
	sess, err := s.svc.Workflow.ContinueFrom(r.Context(), u, workflow.Continue{VersionID: r.PathValue("version"), From: req.FromVersionID,
		Rev: req.Rev, Expected: req.ExpectedStateRev})
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, sessionOut(sess))
	return nil
}

// sessionOut is sess as the API shows it.
func sessionOut(sess store.Session) wire.Session {
	return wire.Session{Context: sess.Context, State: json.RawMessage(sess.State), StateRev: sess.StateRev, ToolID: sess.ToolID, UpdatedAt: sess.UpdatedAt}
}
