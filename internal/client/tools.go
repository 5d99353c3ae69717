package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/wire"
)

// NewTool is a tool to create (POST /api/v1/tools). The schemas are JSON, nil for none.
type NewTool = wire.NewTool

// AddTool creates a tool with its first version.
func (c *Client) AddTool(ctx context.Context, n NewTool) (Tool, Version, error) {
	var out wire.CreatedTool
	err := c.Do(ctx, http.MethodPost, "/api/v1/tools", n, &out)
	return out.Tool, noNulls(out.Version), err
}

// NewVersion is a version to add to a tool. The schemas are JSON, nil for none.
type NewVersion = wire.NewVersion

// AddVersion adds a version to a tool.
func (c *Client) AddVersion(ctx context.Context, tool string, n NewVersion) (Version, error) {
	var v Version
	err := c.Do(ctx, http.MethodPost, "/api/v1/tools/"+url.PathEscape(tool)+"/versions", n, &v)
	return noNulls(v), err
}

// VersionOf returns a tool version; only its tool's author or an admin may read it.
func (c *Client) VersionOf(ctx context.Context, id string) (Version, error) {
	var v Version
	err := c.Do(ctx, http.MethodGet, "/api/v1/tool-versions/"+url.PathEscape(id), nil, &v)
	return noNulls(v), err
}

// noNulls makes the schemas the API shows as null nil.
func noNulls(v Version) Version {
	v.InputSchema, v.SettingsSchema = noNull(v.InputSchema), noNull(v.SettingsSchema)
	return v
}

// noNull is raw, or nil when it is JSON null.
func noNull(raw json.RawMessage) json.RawMessage {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return raw
}

// ToolInfo is what UpdateTool changes: the fields that are not nil.
type ToolInfo = wire.ToolInfo

// UpdateTool changes a tool's title, description, summary or usage instructions.
func (c *Client) UpdateTool(ctx context.Context, tool string, info ToolInfo) (Tool, error) {
	var t Tool
	return t, c.Do(ctx, http.MethodPatch, "/api/v1/tools/"+url.PathEscape(tool), info, &t)
}

// Settings is a user's settings for a tool: the schema and the saved values that fit it
// (UpdatedAt is nil when nothing was saved), and Raw, the answer as the server sent it.
type Settings struct {
	wire.Settings
	Raw json.RawMessage `json:"-"`
}

// ToolSettings returns the caller's settings for a tool.
func (c *Client) ToolSettings(ctx context.Context, tool string) (Settings, error) {
	return c.settings(ctx, http.MethodGet, settingsPath(tool), nil)
}

// PutToolSettings saves values as the caller's settings for a tool, replacing them all.
func (c *Client) PutToolSettings(ctx context.Context, tool string, values map[string]any) (Settings, error) {
	return c.settings(ctx, http.MethodPut, settingsPath(tool), values)
}

// EditorSettings returns the caller's editor settings for a version.
func (c *Client) EditorSettings(ctx context.Context, versionID string) (Settings, error) {
	return c.settings(ctx, http.MethodGet, editorSettingsPath(versionID), nil)
}

// PutEditorSettings saves values as the caller's editor settings for a version.
func (c *Client) PutEditorSettings(ctx context.Context, versionID string, values map[string]any) (Settings, error) {
	return c.settings(ctx, http.MethodPut, editorSettingsPath(versionID), values)
}

func settingsPath(tool string) string { return "/api/v1/tools/" + url.PathEscape(tool) + "/settings" }

func editorSettingsPath(versionID string) string {
	return "/api/v1/editor/tool-versions/" + url.PathEscape(versionID) + "/settings"
}

func (c *Client) settings(ctx context.Context, method, path string, values map[string]any) (Settings, error) {
	var in any
	if method == http.MethodPut {
		if values == nil {
			values = map[string]any{}
		}
		b, err := json.Marshal(values)
		if err != nil {
			return Settings{}, err
		}
		in = wire.SettingsUpdate{Values: b}
	}
	var raw json.RawMessage
	if err := c.Do(ctx, method, path, in, &raw); err != nil {
		return Settings{}, err
	}
	s := Settings{Raw: raw}
	if err := json.Unmarshal(raw, &s.Settings); err != nil {
		return Settings{}, err
	}
	return s, nil
}
