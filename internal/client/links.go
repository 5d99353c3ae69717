package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/wire"
)

// FileLink is a share link of a staged file (docs/api.md "Share links").
type FileLink = wire.FileLink

// CreateLink makes a share link of the file under key that works for ttl (a Go duration
// or Nd), for maxDownloads downloads when it is more than 0. Only this answer carries the
// link's URL.
func (c *Client) CreateLink(ctx context.Context, key, ttl string, maxDownloads int64) (FileLink, error) {
	in := wire.NewFileLink{TTL: ttl}
	if maxDownloads > 0 {
		in.MaxDownloads = &maxDownloads
	}
	var l FileLink
	return l, c.Do(ctx, http.MethodPost, FilePath(key)+"/links"+c.ownerQuery("?"), in, &l)
}

// Links lists the unexpired share links of the file under key, the newest first.
func (c *Client) Links(ctx context.Context, key string) ([]FileLink, error) {
	var out wire.FileLinkList
	return out.Links, c.Do(ctx, http.MethodGet, "/api/v1/links?key="+url.QueryEscape(key)+c.ownerQuery("&"), nil, &out)
}

// RevokeLink deletes the share link id: its URL stops working at once.
func (c *Client) RevokeLink(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/links/"+url.PathEscape(id)+c.ownerQuery("?"), nil, nil)
}

// UploadLink is an upload link (docs/api.md "Upload links").
type UploadLink = wire.UploadLink

// CreateUploadLink makes an upload link to key: whoever has its URL may upload a file
// there (docs/api.md "Upload links").
func (c *Client) CreateUploadLink(ctx context.Context, key string, in wire.NewUploadLink) (UploadLink, error) {
	var l UploadLink
	return l, c.Do(ctx, http.MethodPost, FilePath(key)+"/upload-links"+c.ownerQuery("?"), in, &l)
}

// UploadLinks lists the caller's upload links that have not expired, newest first.
func (c *Client) UploadLinks(ctx context.Context) ([]UploadLink, error) {
	var out wire.UploadLinkList
	return out.UploadLinks, c.Do(ctx, http.MethodGet, "/api/v1/upload-links"+c.ownerQuery("?"), nil, &out)
}

// RevokeUploadLink deletes upload link id: its URL stops working at once.
func (c *Client) RevokeUploadLink(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/upload-links/"+url.PathEscape(id)+c.ownerQuery("?"), nil, nil)
}
