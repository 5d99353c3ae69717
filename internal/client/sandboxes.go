package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/wire"
)

// Sandbox is a persistent agent sandbox (docs/spec.md §9).
type Sandbox = wire.Sandbox

// SandboxLimits are the limits a new sandbox asks for; zero takes the server's.
// Sandbox.Limits are the ones it got.
type SandboxLimits = wire.NewSandboxLimits

// SandboxOptions are what a new sandbox may ask for; zero values take the server's.
type SandboxOptions struct {
	Limits      *SandboxLimits
	IdleTimeout string // a duration such as "30m"; "" is the server's default
}

// ExecResult is how a command in a sandbox ended.
type ExecResult = wire.ExecResult

// ExecRequest is a command to run in a sandbox.
type ExecRequest = wire.ExecRequest

// Staged is a file staged into a workspace.
type Staged = wire.Staged

// Published is a workspace file published to the staging area: the new staged file.
type Published = wire.Published

// Written is a file written into a workspace.
type Written = wire.Written

func sandboxPath(id string) string { return "/api/v1/sandboxes/" + url.PathEscape(id) }

// SandboxFSPath is the API path of a workspace file.
func SandboxFSPath(id, p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return sandboxPath(id) + "/fs/" + strings.Join(segs, "/")
}

// CreateSandbox makes a sandbox.
func (c *Client) CreateSandbox(ctx context.Context, opts SandboxOptions) (Sandbox, error) {
	in := wire.NewSandbox{Limits: opts.Limits}
	if opts.IdleTimeout != "" {
		b, err := json.Marshal(opts.IdleTimeout)
		if err != nil {
			return Sandbox{}, err
		}
		in.IdleTimeout = b
	}
	var out Sandbox
	return out, c.Do(ctx, http.MethodPost, "/api/v1/sandboxes", in, &out)
}

// Sandboxes lists the caller's sandboxes (everyone's with all, for an admin).
func (c *Client) Sandboxes(ctx context.Context, all bool) ([]Sandbox, error) {
	var out wire.SandboxList
	p := "/api/v1/sandboxes"
	if all {
		p += "?all=true"
	}
	return out.Sandboxes, c.Do(ctx, http.MethodGet, p, nil, &out)
}

// SandboxInfo returns one sandbox.
func (c *Client) SandboxInfo(ctx context.Context, id string) (Sandbox, error) {
	var out Sandbox
	return out, c.Do(ctx, http.MethodGet, sandboxPath(id), nil, &out)
}

// DeleteSandbox destroys a sandbox.
func (c *Client) DeleteSandbox(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, sandboxPath(id), nil, nil)
}

// Exec runs a command and returns how it ended.
func (c *Client) Exec(ctx context.Context, id string, req ExecRequest) (ExecResult, error) {
	var out ExecResult
	return out, c.Do(ctx, http.MethodPost, sandboxPath(id)+"/exec", req, &out)
}

// ExecStream runs a command and passes its output lines to onLine ("stdout" or
// "stderr") as they come, and the server's notices about them ("notice": lines left
// out of the stream, a line cut).
func (c *Client) ExecStream(ctx context.Context, id string, req ExecRequest, onLine func(stream, line string)) (ExecResult, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return ExecResult{}, err
	}
	resp, err := c.Request(ctx, http.MethodPost, sandboxPath(id)+"/exec", bytes.NewReader(b),
		http.Header{"Accept": {wire.ExecNDJSON}, "Content-Type": {"application/json"}})
	if err != nil {
		return ExecResult{}, err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), wire.ExecNDJSON) {
		var out ExecResult
		return out, decode(resp, &out)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var msg wire.ExecMessage
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			return ExecResult{}, fmt.Errorf("reading the exec stream: %w", err)
		}
		switch {
		case msg.Result != nil:
			return *msg.Result, nil
		case msg.Error != nil:
			return ExecResult{}, &Error{Status: resp.StatusCode, ErrorInfo: *msg.Error}
		case msg.Notice != "":
			onLine("notice", msg.Notice)
		default:
			onLine(msg.Stream, msg.Line)
		}
	}
	if err := sc.Err(); err != nil {
		return ExecResult{}, fmt.Errorf("reading the exec stream: %w", err)
	}
	return ExecResult{}, fmt.Errorf("the exec stream ended without a result")
}

// WriteSandboxFile streams body into path p of the workspace (size -1 if unknown).
func (c *Client) WriteSandboxFile(ctx context.Context, id, p string, body io.Reader, size int64) (Written, error) {
	resp, err := c.RequestSized(ctx, http.MethodPut, SandboxFSPath(id, p), body, size, http.Header{"Content-Type": {"application/octet-stream"}})
	if err != nil {
		return Written{}, err
	}
	defer resp.Body.Close()
	var out Written
	return out, decode(resp, &out)
}

// ReadSandboxFile opens a workspace file; the caller closes it. A body that ends short
// of its Content-Length reads as an error.
func (c *Client) ReadSandboxFile(ctx context.Context, id, p string) (io.ReadCloser, int64, error) {
	resp, err := c.Request(ctx, http.MethodGet, SandboxFSPath(id, p), nil, nil)
	if err != nil {
		return nil, 0, err
	}
	size, _ := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	return resp.Body, size, nil
}

// StageFile copies the staged file key into the workspace at dest.
func (c *Client) StageFile(ctx context.Context, id, key, dest string) (Staged, error) {
	var out Staged
	return out, c.Do(ctx, http.MethodPost, sandboxPath(id)+"/stage", wire.StageRequest{FileKey: key, Destination: dest}, &out)
}

// PublishFile copies the workspace file source into the staging area (under key, when set).
func (c *Client) PublishFile(ctx context.Context, id, source, key, ttl string) (Published, error) {
	var out Published
	return out, c.Do(ctx, http.MethodPost, sandboxPath(id)+"/publish", wire.PublishRequest{Source: source, FileKey: key, TTL: ttl}, &out)
}
