package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/wire"
)

// ToolVersions lists a tool's versions, newest first, with their notes, syntax check and
// latest sandbox run.
func (c *Client) ToolVersions(ctx context.Context, tool string) (wire.VersionList, error) {
	var out wire.VersionList
	return out, c.Do(ctx, http.MethodGet, "/api/v1/tools/"+url.PathEscape(tool)+"/versions", nil, &out)
}

// DiffVersions compares version with against (the older, usually): source and schemas.
func (c *Client) DiffVersions(ctx context.Context, version, against string) (wire.VersionDiff, error) {
	var out wire.VersionDiff
	return out, c.Do(ctx, http.MethodGet, "/api/v1/tool-versions/"+url.PathEscape(version)+"/diff?against="+url.QueryEscape(against), nil, &out)
}

// RestoreVersion makes a new version of a tool from an old one.
func (c *Client) RestoreVersion(ctx context.Context, version string) (Version, error) {
	var out Version
	return out, c.Do(ctx, http.MethodPost, "/api/v1/tool-versions/"+url.PathEscape(version)+"/restore", nil, &out)
}
