package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/wire"
)

// Maintainer is one maintainer of a tool.
type Maintainer = wire.Maintainer

// Maintainers lists a tool's maintainers (its maintainers and admins may).
func (c *Client) Maintainers(ctx context.Context, tool string) ([]Maintainer, error) {
	var out wire.MaintainerList
	err := c.Do(ctx, http.MethodGet, maintainersPath(tool), nil, &out)
	return out.Maintainers, err
}

// AddMaintainer makes user (a name or an id) a maintainer of tool.
func (c *Client) AddMaintainer(ctx context.Context, tool, user string) (Maintainer, error) {
	var m Maintainer
	err := c.Do(ctx, http.MethodPost, maintainersPath(tool), wire.MaintainerRef{User: user}, &m)
	return m, err
}

// RemoveMaintainer removes user (a name or an id) from tool's maintainers.
func (c *Client) RemoveMaintainer(ctx context.Context, tool, user string) error {
	return c.Do(ctx, http.MethodDelete, maintainersPath(tool)+"/"+url.PathEscape(user), nil, nil)
}

func maintainersPath(tool string) string {
	return "/api/v1/tools/" + url.PathEscape(tool) + "/maintainers"
}
