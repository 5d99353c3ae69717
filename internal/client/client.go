// Package client is the Go client of skrip's HTTP API. The CLI uses it for every verb
// except serve and doctor; programs may use it too. The bodies it sends and reads are
// package wire's, the ones the API writes; the names here are aliases of them.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/skrip-dev/skrip/internal/wire"
)

// Client talks to one skrip server as one user.
type Client struct {
	base      *url.URL
	token     string
	http      *http.Client
	fileOwner string // ?owner= of every files route; "" for the caller's own files
}

// New returns a client of the server at base (e.g. http://127.0.0.1:8080), sending token
// as a bearer token.
func New(base, token string) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server %q is not an http:// or https:// URL", base)
	}
	return &Client{base: u, token: token, http: &http.Client{Transport: http.DefaultTransport}}, nil
}

// Error is an error answer of the API (docs/spec.md §3): its HTTP status and what its body said.
type Error struct {
	Status int
	wire.ErrorInfo
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return e.Message
}

// UnreachableError is a request that got no answer from the server: the connection was
// refused or broke, a name did not resolve, or the request timed out.
type UnreachableError struct {
	Server string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach skrip at %s: %v (is `skrip serve` running? --server or SKRIP_SERVER choose the address)", e.Server, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// IsCode reports whether err is an API error with this code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// URL returns the absolute URL of an API path.
func (c *Client) URL(path string) string {
	return c.base.String() + path
}

// Request sends a request with the bearer token and returns the response when it is a
// success (2xx); any other answer is decoded into an *Error. The caller closes the body.
func (c *Client) Request(ctx context.Context, method, path string, body io.Reader, header http.Header) (*http.Response, error) {
	return c.RequestSized(ctx, method, path, body, -1, header)
}

// RequestSized is Request with a known body length (sent as Content-Length); -1 means
// unknown.
func (c *Client) RequestSized(ctx context.Context, method, path string, body io.Reader, size int64, header http.Header) (*http.Response, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL(path), body)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		req.ContentLength = size
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &UnreachableError{Server: c.base.String(), Err: unwrapURLError(err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	apiErr := &Error{Status: resp.StatusCode}
	var answer struct {
		Error *wire.ErrorInfo `json:"error"`
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(b, &answer) == nil && answer.Error != nil {
		apiErr.ErrorInfo = *answer.Error
	}
	if apiErr.Status == http.StatusUnauthorized && c.token == "" {
		apiErr.Message += " (run skrip login, or pass --token-file or set SKRIP_TOKEN)"
	}
	return nil, apiErr
}

// checkPath refuses an API path with a piece that is "." or "..": path pieces given by a
// user (a slug, a key, an id) are escaped, but escaping keeps dots, and such a piece
// would address another path than the one meant, once the path is cleaned on the way.
func checkPath(path string) error {
	p, _, _ := strings.Cut(path, "?")
	if box, file, ok := strings.Cut(p, "/fs/"); ok && strings.HasPrefix(box, "/api/v1/sandboxes/") {
		// A workspace path: said in the words the server uses for one.
		for _, seg := range strings.Split(file, "/") {
			if u, err := url.PathUnescape(seg); err == nil && (u == "." || u == "..") {
				return fmt.Errorf("the path %q has a %q segment; give it relative to /workspace, inside it", file, u)
			}
		}
		p = box
	}
	for _, seg := range strings.Split(p, "/") {
		if u, err := url.PathUnescape(seg); err == nil && (u == "." || u == "..") {
			return fmt.Errorf("%q cannot be a name on the server: a slug, key or id is never . or ..", u)
		}
	}
	return nil
}

// Do sends in (when not nil) as JSON and decodes a JSON answer into out (when not nil).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	h := http.Header{"Accept": {"application/json"}}
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
		h.Set("Content-Type", "application/json")
	}
	resp, err := c.Request(ctx, method, path, body, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decode(resp, out)
}

// decode reads a JSON answer into out, or discards it when out is nil.
func decode(resp *http.Response, out any) error {
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("reading the answer to %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// User is a user as the API shows it.
type User = wire.User

// CreatedUser is a new user with its first token.
type CreatedUser = wire.CreatedUser

// Me returns the caller.
func (c *Client) Me(ctx context.Context) (User, error) {
	var u User
	return u, c.Do(ctx, http.MethodGet, "/api/v1/me", nil, &u)
}

// CreateUser creates a user (admin only) and returns it with its first token. Without a
// password the user signs in with tokens only.
func (c *Client) CreateUser(ctx context.Context, name, role, password string) (CreatedUser, error) {
	var u CreatedUser
	return u, c.Do(ctx, http.MethodPost, "/api/v1/users", wire.NewUser{Name: name, Role: role, Password: password}, &u)
}

// Users lists every user (admin only).
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var out wire.UserList
	return out.Users, c.Do(ctx, http.MethodGet, "/api/v1/users", nil, &out)
}

// SetRole changes a user's role (admin only); user is an id or a name.
func (c *Client) SetRole(ctx context.Context, user, role string) (User, error) {
	var u User
	return u, c.Do(ctx, http.MethodPatch, "/api/v1/users/"+url.PathEscape(user), wire.RoleChange{Role: role}, &u)
}

// SetPassword sets the web sign-in password of user (an id or a name).
func (c *Client) SetPassword(ctx context.Context, user, password string) error {
	return c.Do(ctx, http.MethodPut, "/api/v1/users/"+url.PathEscape(user)+"/password", wire.NewPassword{Password: password}, nil)
}

// CreateToken issues a new token for user (an id or a name; admins may name anyone).
func (c *Client) CreateToken(ctx context.Context, user, name string) (string, error) {
	var out wire.IssuedToken
	return out.Secret, c.Do(ctx, http.MethodPost, "/api/v1/users/"+url.PathEscape(user)+"/tokens", wire.NewToken{Name: name}, &out)
}
