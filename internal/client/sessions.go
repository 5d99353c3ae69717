package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// ActionResult is the answer to start_action.
type ActionResult struct {
	RunID    string `json:"run_id"`
	StateRev *int64 `json:"state_rev"`
	Run      Run    `json:"run"`
}

// StartAction submits an action of a production session.
func (c *Client) StartAction(ctx context.Context, toolID, sctx, actionID string, input map[string]any, expectedRev int64) (ActionResult, error) {
	var out ActionResult
	err := c.Do(ctx, http.MethodPost, "/api/v1/start_action", map[string]any{"tool_id": toolID, "context": sctx, "action_id": actionID,
		"input": input, "expected_state_rev": expectedRev}, &out)
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
		map[string]any{"action_id": actionID, "input": input, "expected_state_rev": expectedRev}, &out)
	return out, err
}

// Session is a tool session as the API shows it.
type Session struct {
	ToolID    string          `json:"tool_id"`
	Context   string          `json:"context"`
	StateRev  int64           `json:"state_rev"`
	State     json.RawMessage `json:"state"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// SessionOf returns the caller's session of tool in context.
func (c *Client) SessionOf(ctx context.Context, tool, sctx string) (Session, error) {
	var s Session
	return s, c.Do(ctx, http.MethodGet, "/api/v1/tools/"+url.PathEscape(tool)+"/sessions/"+url.PathEscape(sctx), nil, &s)
}

// SessionFileList is the answer of the session-files route.
type SessionFileList struct {
	Files []struct {
		Name   string `json:"name"`
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	} `json:"files"`
	LastAccessedAt *time.Time `json:"last_accessed_at"`
	ExpiresAt      *time.Time `json:"expires_at"`
}

// SessionFiles lists the caller's session files of tool in context.
func (c *Client) SessionFiles(ctx context.Context, tool, sctx string) (SessionFileList, error) {
	var out SessionFileList
	return out, c.Do(ctx, http.MethodGet, "/api/v1/tools/"+url.PathEscape(tool)+"/session-files?context="+url.QueryEscape(sctx), nil, &out)
}

// ClearSessionFiles removes the caller's session files of tool in context.
func (c *Client) ClearSessionFiles(ctx context.Context, tool, sctx string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/tools/"+url.PathEscape(tool)+"/session-files?context="+url.QueryEscape(sctx), nil, nil)
}
