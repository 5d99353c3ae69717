package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/skrip-dev/skrip/internal/wire"
)

// Token is an API token as listed: never its secret.
type Token = wire.Token

// IssuedToken is a new token's listing and, this once, its secret.
type IssuedToken = wire.IssuedToken

// IssueToken issues a token for user (an id or a name; admins may name anyone) with the
// name, scope (none: all) and expiry (empty: until revoked) of spec.
func (c *Client) IssueToken(ctx context.Context, user string, spec wire.NewToken) (IssuedToken, error) {
	var out IssuedToken
	return out, c.Do(ctx, http.MethodPost, "/api/v1/users/"+url.PathEscape(user)+"/tokens", spec, &out)
}

// Tokens lists tokens: with user empty the caller's own; a user's id or name for that
// user's (admins, or the caller naming themselves); "*" for every user's (admins).
func (c *Client) Tokens(ctx context.Context, user string) ([]Token, error) {
	path := "/api/v1/tokens"
	if user != "" {
		path += "?user=" + url.QueryEscape(user)
	}
	var out wire.TokenList
	return out.Tokens, c.Do(ctx, http.MethodGet, path, nil, &out)
}

// RevokeToken revokes the token id (the caller's own, or anyone's for an admin); from
// then on it is refused.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/tokens/"+url.PathEscape(id), nil, nil)
}

// RevokeCurrentToken revokes the token the client holds (a logout).
func (c *Client) RevokeCurrentToken(ctx context.Context) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/tokens/current", nil, nil)
}

// WebSessions lists the caller's signed-in browsers.
func (c *Client) WebSessions(ctx context.Context) ([]wire.WebSession, error) {
	var out wire.WebSessionList
	return out.Sessions, c.Do(ctx, http.MethodGet, "/api/v1/me/sessions", nil, &out)
}

// EndWebSessions signs the caller out of every browser.
func (c *Client) EndWebSessions(ctx context.Context) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/me/sessions", nil, nil)
}
