package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/skrip-dev/skrip/internal/wire"
)

// DisableUser disables user (an id or a name; admin only): they sign in nowhere, and
// their runs and sandboxes stop.
func (c *Client) DisableUser(ctx context.Context, user string) (User, error) {
	var u User
	return u, c.Do(ctx, http.MethodPost, "/api/v1/users/"+url.PathEscape(user)+"/disable", nil, &u)
}

// EnableUser lets a disabled user sign in again (admin only).
func (c *Client) EnableUser(ctx context.Context, user string) (User, error) {
	var u User
	return u, c.Do(ctx, http.MethodPost, "/api/v1/users/"+url.PathEscape(user)+"/enable", nil, &u)
}

// DeleteUser deletes user and everything they hold (admin only); tools they wrote stay.
func (c *Client) DeleteUser(ctx context.Context, user string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/users/"+url.PathEscape(user), nil, nil)
}

// User returns one user (admin, or the user themselves).
func (c *Client) User(ctx context.Context, user string) (User, error) {
	var u User
	return u, c.Do(ctx, http.MethodGet, "/api/v1/users/"+url.PathEscape(user), nil, &u)
}

// ExportUser streams the zip of everything held about user into w (admin, or the user
// themselves) and returns how many bytes it wrote. An export the server broke off
// midway is an error.
func (c *Client) ExportUser(ctx context.Context, user string, w io.Writer) (int64, error) {
	resp, err := c.Request(ctx, http.MethodGet, "/api/v1/users/"+url.PathEscape(user)+"/export", nil, http.Header{"Accept": {"application/zip"}})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(w, resp.Body)
}

// Invite makes an invitation link for a new user of role, valid for expiresIn (a
// duration such as 48h or 7d; "" is the server's default), admin only.
func (c *Client) Invite(ctx context.Context, role, expiresIn string) (wire.Invitation, error) {
	var out wire.Invitation
	return out, c.Do(ctx, http.MethodPost, "/api/v1/invitations", wire.NewInvitation{Role: role, ExpiresIn: expiresIn}, &out)
}

// Audit returns one page of the audit log, newest first (admin only): up to limit
// events (0: the server's default) older than cursor ("" starts at the newest).
func (c *Client) Audit(ctx context.Context, limit int, cursor string) (wire.AuditList, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	path := "/api/v1/audit"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out wire.AuditList
	return out, c.Do(ctx, http.MethodGet, path, nil, &out)
}
