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
)

// Tool is a tool as the API shows it. InputSchema and SettingsSchema are its published
// version's, and only ToolOf fills them in; nil when it has none.
type Tool struct {
	ID                 string          `json:"id"`
	Slug               string          `json:"slug"`
	Title              string          `json:"title"`
	Description        string          `json:"description"`
	Summary            string          `json:"summary"`
	UsageInstructions  string          `json:"usage_instructions"`
	AuthorID           string          `json:"author_id"`
	PublishedVersionID *string         `json:"published_version_id"`
	InputSchema        json.RawMessage `json:"input_schema,omitempty"`
	SettingsSchema     json.RawMessage `json:"settings_schema,omitempty"`
	CreatedAt          time.Time       `json:"created_at"`
	UpdatedAt          time.Time       `json:"updated_at"`
}

// Version is a tool version. Its schemas are nil when it has none.
type Version struct {
	ID             string          `json:"id"`
	ToolID         string          `json:"tool_id"`
	Source         string          `json:"source"`
	InputSchema    json.RawMessage `json:"input_schema"`
	SettingsSchema json.RawMessage `json:"settings_schema"`
	Entrypoint     string          `json:"entrypoint"`
	CreatedBy      string          `json:"created_by"`
	CreatedAt      time.Time       `json:"created_at"`
}

// Artifact is a file a run produced.
type Artifact struct {
	Path      string     `json:"path"`
	Name      string     `json:"name"`
	Bytes     int64      `json:"bytes"`
	SHA256    string     `json:"sha256"`
	URL       string     `json:"url"`
	ExpiredAt *time.Time `json:"expired_at,omitempty"` // set once SKRIP_RUN_ARTIFACTS_TTL removed the bytes
}

// Output is one output of a run; which fields are set depends on Kind.
type Output struct {
	Kind     string           `json:"kind"`
	Level    string           `json:"level,omitempty"`
	Message  string           `json:"message,omitempty"`
	Markdown string           `json:"markdown,omitempty"`
	Title    string           `json:"title,omitempty"`
	Columns  []Column         `json:"columns,omitempty"`
	Rows     []map[string]any `json:"rows,omitempty"`
	Value    any              `json:"value,omitempty"`
	HTML     string           `json:"html,omitempty"`
	Spec     any              `json:"spec,omitempty"`
}

// Column is a table column.
type Column struct {
	Key   string `json:"key"`
	Label string `json:"label"`
}

// Field is one input of a next action's form.
type Field struct {
	Name    string `json:"name"`
	Label   string `json:"label"`
	Kind    string `json:"kind"`
	Options []struct {
		Value string `json:"value"`
		Label string `json:"label"`
	} `json:"options,omitempty"`
}

// NextAction is a form a run offers.
type NextAction struct {
	ActionID string         `json:"action_id"`
	Label    string         `json:"label"`
	Kind     string         `json:"kind"`
	Fields   []Field        `json:"fields"`
	Prefill  map[string]any `json:"prefill,omitempty"`
}

// Run is a run as the API shows it.
type Run struct {
	RunID         string          `json:"run_id"`
	ToolID        string          `json:"tool_id"`
	VersionID     string          `json:"version_id"`
	UserID        string          `json:"user_id"`
	Context       string          `json:"context"`
	Kind          string          `json:"kind"`
	ActionID      *string         `json:"action_id"`
	Status        string          `json:"status"`
	ErrorSummary  *string         `json:"error_summary"`
	Inputs        map[string]any  `json:"inputs"`
	Outputs       []Output        `json:"outputs"`
	NextActions   []NextAction    `json:"next_actions"`
	Artifacts     []Artifact      `json:"artifacts"`
	InputManifest json.RawMessage `json:"input_manifest"`
	StateRev      *int64          `json:"state_rev"`
	CreatedAt     time.Time       `json:"created_at"`
	StartedAt     *time.Time      `json:"started_at"`
	FinishedAt    *time.Time      `json:"finished_at"`
	DurationMS    *int64          `json:"duration_ms"`
	Stdout        *string         `json:"stdout"`
	Stderr        *string         `json:"stderr"`
}

// Done reports whether the run is over.
func (r Run) Done() bool { return r.Status != "queued" && r.Status != "running" }

// CreateTool creates a tool from source, publishing it when publish is set.
func (c *Client) CreateTool(ctx context.Context, slug, title, description, source string, publish bool) (Tool, Version, error) {
	return c.AddTool(ctx, NewTool{Slug: slug, Title: title, Description: description, Source: source, Publish: publish})
}

// Tools lists the tools the caller may see.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	var out struct {
		Tools []Tool `json:"tools"`
	}
	return out.Tools, c.Do(ctx, http.MethodGet, "/api/v1/tools", nil, &out)
}

// ToolOf returns a tool by id or slug, with its published version's schemas.
func (c *Client) ToolOf(ctx context.Context, ref string) (Tool, error) {
	var t Tool
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
