package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/skrip-dev/skrip/internal/wire"
)

// ActionResult is the answer to start_action.
type ActionResult = wire.ActionResult

// StartAction submits an action of a production session.
func (c *Client) StartAction(ctx context.Context, toolID, sctx, actionID string, input map[string]any, expectedRev int64) (ActionResult, error) {
	var out ActionResult
	err := c.Do(ctx, http.MethodPost, "/api/v1/start_action", wire.ActionRequest{ToolID: toolID, Context: sctx, ActionID: actionID,
		Input: input, ExpectedStateRev: &expectedRev}, &out)
	return out, err
}

// EditorRun runs a version in its editor sandbox with files and inputs.
func (c *Client) EditorRun(ctx context.Context, versionID string, paths []string, inputs map[string]any, wait time.Duration) (Run, error) {
	return c.runMultipart(ctx, "/api/v1/editor/tool-versions/"+url.PathEscape(versionID)+"/run-sandbox?wait="+wait.String(), paths, inputs)
}

// EditorAction submits an action of a version's editor sandbox session.
func (c *Client) EditorAction(ctx context.Context, versionID, actionID string, input map[string]any, expectedRev int64) (ActionResult, error) {
	var out ActionResult
	err := c.Do(ctx, http.MethodPost, "/api/v1/editor/tool-versions/"+url.PathEscape(versionID)+"/start-action",
		wire.ActionRequest{ActionID: actionID, Input: input, ExpectedStateRev: &expectedRev}, &out)
	return out, err
}

// Session is a tool session as the API shows it.
type Session = wire.Session

// SessionOf returns the caller's session of tool in context.
func (c *Client) SessionOf(ctx context.Context, tool, sctx string) (Session, error) {
	var s Session
	return s, c.Do(ctx, http.MethodGet, "/api/v1/tools/"+url.PathEscape(tool)+"/sessions/"+url.PathEscape(sctx), nil, &s)
}

// SessionFileList is the answer of the session-files route.
type SessionFileList = wire.SessionFiles

// SessionFiles lists the caller's session files of tool in context.
func (c *Client) SessionFiles(ctx context.Context, tool, sctx string) (SessionFileList, error) {
	var out SessionFileList
	return out, c.Do(ctx, http.MethodGet, "/api/v1/tools/"+url.PathEscape(tool)+"/session-files?context="+url.QueryEscape(sctx), nil, &out)
}

// ClearSessionFiles removes the caller's session files of tool in context.
func (c *Client) ClearSessionFiles(ctx context.Context, tool, sctx string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/tools/"+url.PathEscape(tool)+"/session-files?context="+url.QueryEscape(sctx), nil, nil)
}

// EditorGoBack makes step rev of a version's editor sandbox session current again; the
// session must be at expectedRev.
func (c *Client) EditorGoBack(ctx context.Context, versionID string, rev, expectedRev int64) (Session, error) {
	var s Session
	return s, c.Do(ctx, http.MethodPost, "/api/v1/editor/tool-versions/"+url.PathEscape(versionID)+"/session/back",
		wire.GoBackRequest{Rev: &rev, ExpectedStateRev: &expectedRev}, &s)
}

// ContinueRequest asks that an editor sandbox session go on from another version's.
type ContinueRequest = wire.ContinueRequest

// EditorContinue makes a version's editor sandbox session go on from the one of version
// from, a version of the same tool (from its kept step rev, when not nil).
func (c *Client) EditorContinue(ctx context.Context, versionID string, req ContinueRequest) (Session, error) {
	var s Session
	return s, c.Do(ctx, http.MethodPost, "/api/v1/editor/tool-versions/"+url.PathEscape(versionID)+"/session/continue", req, &s)
}

// EditorSession returns the caller's session of a version's editor sandbox.
func (c *Client) EditorSession(ctx context.Context, versionID string) (Session, error) {
	var s Session
	return s, c.Do(ctx, http.MethodGet, "/api/v1/editor/tool-versions/"+url.PathEscape(versionID)+"/session", nil, &s)
}
