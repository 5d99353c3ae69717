package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/wire"
)

// FileVersion is one version of a staged file (docs/api.md "Versions").
type FileVersion = wire.FileVersion

// FileVersions lists the versions of the file under key: the current one first, then
// the previous ones the server keeps, the newest first.
func (c *Client) FileVersions(ctx context.Context, key string) ([]FileVersion, error) {
	var out wire.FileVersionList
	// The query route, not …/{key}/versions: it names the file whatever its key ends in.
	return out.Versions, c.Do(ctx, http.MethodGet, "/api/v1/file-versions?key="+url.QueryEscape(key)+c.ownerQuery("&"), nil, &out)
}
