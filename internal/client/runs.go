package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/wire"
)

// Tool is a tool as listings and changes show it.
type Tool = wire.Tool

// ToolDetail is one tool with its published version's schemas (nil when it has none).
type ToolDetail = wire.ToolDetail

// Version is a tool version. Its schemas are nil when it has none.
type Version = wire.Version

// Artifact is a file a run produced.
type Artifact = wire.Artifact

// Output is one output of a run; which fields are set depends on Kind.
type Output = contract.Output

// Column is a table column.
type Column = contract.Column

// Field is one input of a next action's form, or one setting.
type Field = contract.Field

// NextAction is a form a run offers.
type NextAction = contract.NextAction

// Run is a run as the API shows it.
type Run = wire.Run

// CreateTool creates a tool from source, publishing it when publish is set.
func (c *Client) CreateTool(ctx context.Context, slug, title, description, source string, publish bool) (Tool, Version, error) {
	return c.AddTool(ctx, NewTool{Slug: slug, Title: title, Description: description, Source: source, Publish: publish})
}

// Tools lists the tools the caller may see.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	var out wire.ToolList
	return out.Tools, c.Do(ctx, http.MethodGet, "/api/v1/tools", nil, &out)
}

// ToolOf returns a tool by id or slug, with its published version's schemas.
func (c *Client) ToolOf(ctx context.Context, ref string) (ToolDetail, error) {
	var t ToolDetail
	err := c.Do(ctx, http.MethodGet, "/api/v1/tools/"+url.PathEscape(ref), nil, &t)
	t.InputSchema, t.SettingsSchema = noNull(t.InputSchema), noNull(t.SettingsSchema)
	return t, err
}

// CreateVersion adds a version without schemas to a tool.
func (c *Client) CreateVersion(ctx context.Context, tool, source string) (Version, error) {
	return c.AddVersion(ctx, tool, NewVersion{Source: source})
}

// Publish publishes a version.
func (c *Client) Publish(ctx context.Context, versionID string) (Tool, error) {
	var t Tool
	return t, c.Do(ctx, http.MethodPost, "/api/v1/tool-versions/"+url.PathEscape(versionID)+"/publish", nil, &t)
}

// Unpublish leaves a tool with no published version.
func (c *Client) Unpublish(ctx context.Context, tool string) (Tool, error) {
	var t Tool
	return t, c.Do(ctx, http.MethodPost, "/api/v1/tools/"+url.PathEscape(tool)+"/unpublish", nil, &t)
}

// RunFiles uploads paths and inputs as a run of tool, waiting up to wait for its end.
func (c *Client) RunFiles(ctx context.Context, tool string, paths []string, inputs map[string]any, wait time.Duration) (Run, error) {
	return c.runMultipart(ctx, "/api/v1/tools/"+url.PathEscape(tool)+"/runs?wait="+wait.String(), paths, inputs)
}

// runMultipart streams files and inputs as multipart to path and decodes the run.
func (c *Client) runMultipart(ctx context.Context, path string, paths []string, inputs map[string]any) (Run, error) {
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil {
			return Run{}, err
		} else if st.IsDir() {
			return Run{}, fmt.Errorf("%s is a directory; name the files in it", p)
		}
	}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		pw.CloseWithError(func() error {
			if inputs != nil {
				b, _ := json.Marshal(inputs)
				if err := mw.WriteField("inputs", string(b)); err != nil {
					return err
				}
			}
			for _, p := range paths {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				part, err := mw.CreateFormFile("files", filepath.Base(p))
				if err == nil {
					_, err = io.Copy(part, f)
				}
				f.Close()
				if err != nil {
					return err
				}
			}
			return mw.Close()
		}())
	}()
	resp, err := c.Request(ctx, http.MethodPost, path, pr, http.Header{"Content-Type": {mw.FormDataContentType()}})
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return Run{}, err
	}
	defer resp.Body.Close()
	var r Run
	return r, decode(resp, &r)
}

// GetRun returns a run, waiting up to wait for it to end.
func (c *Client) GetRun(ctx context.Context, id string, wait time.Duration) (Run, error) {
	var r Run
	q := ""
	if wait > 0 {
		q = "?wait=" + wait.String()
	}
	return r, c.Do(ctx, http.MethodGet, "/api/v1/runs/"+url.PathEscape(id)+q, nil, &r)
}

// WaitRun polls until the run is over or ctx ends.
func (c *Client) WaitRun(ctx context.Context, r Run) (Run, error) {
	for !r.Done() {
		var err error
		if r, err = c.GetRun(ctx, r.RunID, 30*time.Second); err != nil {
			return r, err
		}
	}
	return r, nil
}

// CancelRun stops a run.
func (c *Client) CancelRun(ctx context.Context, id string) (Run, error) {
	var r Run
	return r, c.Do(ctx, http.MethodPost, "/api/v1/runs/"+url.PathEscape(id)+"/cancel", nil, &r)
}

// DownloadArtifact streams an artifact into w and verifies its checksum.
func (c *Client) DownloadArtifact(ctx context.Context, a Artifact, w io.Writer) error {
	resp, err := c.Request(ctx, http.MethodGet, a.URL, nil, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, sum, err := copyVerify(ctx, w, resp.Body)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", a.Path, err)
	}
	if got := strings.TrimPrefix(sum, "sha256:"); got != a.SHA256 || n != a.Bytes {
		return &ErrChecksum{Key: a.Path, Want: "sha256:" + a.SHA256, Got: sum}
	}
	return nil
}
