package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/contract"
)

// maxTools is the most tools tools_list describes; past it the answer says it was cut.
const maxTools = 200

// maxWait is the longest tool_run, run_action and run_get hold for a run to end.
const maxWait = 60 * time.Second

// addRunTools adds the tools that run skrip's tools, and list and delete sandboxes.
func (t *tools) addRunTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "sandbox_list",
		Description: "List your sandboxes: each one's sandbox_id, limits, when it was last used and when it expires if left unused. " +
			"A user may hold only a few sandboxes at once (10 by default), so when sandbox_create is refused for that, " +
			"delete the ones you no longer need with sandbox_delete after publishing what you want to keep.",
		Annotations: &mcp.ToolAnnotations{Title: "List sandboxes", ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.listBoxes)
	mcp.AddTool(s, &mcp.Tool{
		Name: "sandbox_delete",
		Description: "Delete a sandbox and every file in its /workspace, now, rather than waiting for its idle timeout. " +
			"Publish what you need to keep first with sandbox_publish_file: nothing of the sandbox can be read afterwards. " +
			"Use it when a task is done, or to make room when you hold as many sandboxes as a user may (see sandbox_list).",
		Annotations: &mcp.ToolAnnotations{Title: "Delete a sandbox", DestructiveHint: new(true), IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.deleteBox)
	mcp.AddTool(s, &mcp.Tool{
		Name: "tools_list",
		Description: "List the tools of skrip you may run (teachers' scripts, such as making groups from a class list or a PDF from HTML), " +
			"each with slug, title, summary, usage_instructions, input_schema (the JSON Schema of the inputs object tool_run takes) and files " +
			"(how many staged files the tool takes and of which types, or null when it takes none). query keeps tools whose slug, title or summary contain it.",
		Annotations: &mcp.ToolAnnotations{Title: "List skrip's tools", ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.listTools)
	mcp.AddTool(s, &mcp.Tool{
		Name: "tool_run",
		Description: "Run a skrip tool on staged files and inputs, in a sandbox on the server, and wait for it (up to wait_s, 60 at most). " +
			"tool is a slug from tools_list; inputs must fit its input_schema; file_keys are staged files (from files_list or sandbox_publish_file) " +
			"that go in as the user's upload would. Returns the run: run_id, status (queued or running when it did not end in time: call run_get), " +
			"outputs, next_actions (forms the tool offers next: take one with run_action and the run's state_rev), artifacts and error_summary.",
		Annotations: &mcp.ToolAnnotations{Title: "Run a tool", OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.runTool)
	mcp.AddTool(s, &mcp.Tool{
		Name: "run_action",
		Description: "Take one of the next_actions a run offered: run_id is that run, action_id one of its next_actions, input the action's fields, " +
			"expected_state_rev the run's state_rev. The tool runs again with its server-held state and the files of the first run. " +
			"A conflict means another step was taken since: read the latest run (run_get) and decide again. Returns the new run as tool_run does.",
		Annotations: &mcp.ToolAnnotations{Title: "Take a tool's next action", OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.runAction)
	mcp.AddTool(s, &mcp.Tool{
		Name: "run_get",
		Description: "Read a run: status, outputs, next_actions, state_rev, artifacts, error_summary, and the tool's stdout and stderr. " +
			"wait_s waits up to that many seconds (60 at most) for a run that has not ended. With stage_artifacts the run's artifacts are copied " +
			"into the staging area (under files/runs/<run_id>/) and each gets its file_key: stage them into a sandbox, share them, or tell the user the key.",
		Annotations: &mcp.ToolAnnotations{Title: "Read a run", OpenWorldHint: new(false), IdempotentHint: true},
	}, t.getRun)
}

type boxesOut struct {
	Sandboxes []client.Sandbox `json:"sandboxes" jsonschema:"your sandboxes"`
	Count     int              `json:"count" jsonschema:"how many"`
}

func (t *tools) listBoxes(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, boxesOut, error) {
	list, err := t.c.Sandboxes(ctx, false)
	if list == nil {
		list = []client.Sandbox{}
	}
	return nil, boxesOut{Sandboxes: list, Count: len(list)}, err
}

type deleteIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox_id of the sandbox to delete"`
}

type deleteOut struct {
	Deleted string `json:"deleted" jsonschema:"the sandbox_id deleted"`
}

func (t *tools) deleteBox(ctx context.Context, _ *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, deleteOut, error) {
	if err := t.c.DeleteSandbox(ctx, in.SandboxID); err != nil {
		return nil, deleteOut{}, sandboxGone(err)
	}
	return nil, deleteOut{Deleted: in.SandboxID}, nil
}

type toolsIn struct {
	Query string `json:"query,omitempty" jsonschema:"keep only tools whose slug, title or summary contain this (case-insensitive); every tool when left out"`
}

type toolOut struct {
	Slug              string         `json:"slug"`
	Title             string         `json:"title"`
	Summary           string         `json:"summary"`
	UsageInstructions string         `json:"usage_instructions"`
	InputSchema       map[string]any `json:"input_schema" jsonschema:"the JSON Schema of tool_run's inputs"`
	Files             *filesSpec     `json:"files" jsonschema:"the staged files tool_run's file_keys may name; null when the tool takes none"`
}

type filesSpec struct {
	Label  string   `json:"label"`
	Min    int      `json:"min" jsonschema:"fewest files"`
	Max    int      `json:"max" jsonschema:"most files; 0 when the server's upload limit is the only one"`
	Accept []string `json:"accept" jsonschema:"file name endings allowed, such as .csv; any when empty"`
}

type toolsOut struct {
	Tools     []toolOut `json:"tools"`
	Count     int       `json:"count"`
	Truncated bool      `json:"truncated" jsonschema:"true when more tools match than were listed: give a query"`
}

func (t *tools) listTools(ctx context.Context, _ *mcp.CallToolRequest, in toolsIn) (*mcp.CallToolResult, toolsOut, error) {
	all, err := t.c.Tools(ctx)
	if err != nil {
		return nil, toolsOut{}, err
	}
	q := strings.ToLower(strings.TrimSpace(in.Query))
	var picked []client.Tool
	for _, tl := range all {
		if q == "" || strings.Contains(strings.ToLower(tl.Slug+" "+tl.Title+" "+tl.Summary), q) {
			picked = append(picked, tl)
		}
	}
	out := toolsOut{Tools: make([]toolOut, 0, min(len(picked), maxTools))}
	if len(picked) > maxTools {
		picked, out.Truncated = picked[:maxTools], true
	}
	// Each tool's schema is a request of its own: a few at once.
	details := make([]toolOut, len(picked))
	errs := make([]error, len(picked))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, tl := range picked {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			details[i], errs[i] = t.describe(ctx, tl)
		}()
	}
	wg.Wait()
	for i := range details {
		if errs[i] != nil {
			continue // unpublished since it was listed
		}
		out.Tools = append(out.Tools, details[i])
	}
	out.Count = len(out.Tools)
	return nil, out, nil
}

func (t *tools) describe(ctx context.Context, tl client.Tool) (toolOut, error) {
	d, err := t.c.ToolOf(ctx, tl.Slug)
	if err != nil {
		return toolOut{}, err
	}
	schema, err := contract.ParseInputSchema(d.InputSchema, 0)
	if err != nil {
		return toolOut{}, err
	}
	out := toolOut{Slug: d.Slug, Title: d.Title, Summary: d.Summary, UsageInstructions: d.UsageInstructions, InputSchema: schema.InputsSchema()}
	switch f := schema.FileField(); {
	case schema == nil:
		out.Files = &filesSpec{Label: "files", Accept: []string{}}
	case f != nil:
		out.Files = &filesSpec{Label: f.Label, Accept: f.Accept}
		if f.Min != nil {
			out.Files.Min = *f.Min
		}
		if f.Max != nil {
			out.Files.Max = *f.Max
		}
		if out.Files.Accept == nil {
			out.Files.Accept = []string{}
		}
	}
	return out, nil
}

// runOut is a run as the tools show it to an agent.
type runOut struct {
	RunID        string                `json:"run_id"`
	Tool         string                `json:"tool_id"`
	Status       string                `json:"status" jsonschema:"queued, running, succeeded, failed, timed_out or cancelled"`
	StateRev     *int64                `json:"state_rev" jsonschema:"give it as expected_state_rev to run_action"`
	Outputs      []map[string]any      `json:"outputs" jsonschema:"what the tool shows: each has a kind (notice, markdown, table, json, html_sandboxed, vega_lite) and that kind's fields, as docs/runner-contract.md lists them"`
	NextActions  []contract.NextAction `json:"next_actions"`
	Artifacts    []artifactOut         `json:"artifacts"`
	ErrorSummary *string               `json:"error_summary"`
	ErrorSource  *string               `json:"error_source" jsonschema:"tool (the tool's own message), crash, runner, policy or input; null unless it failed"`
	Stdout       *string               `json:"stdout,omitempty"`
	Stderr       *string               `json:"stderr,omitempty"`
}

type artifactOut struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Bytes   int64  `json:"bytes"`
	FileKey string `json:"file_key,omitempty" jsonschema:"the staged copy's key, with stage_artifacts"`
	Expired bool   `json:"expired,omitempty" jsonschema:"the server no longer keeps its bytes"`
}

func runOf(r client.Run, logs bool) runOut {
	out := runOut{RunID: r.RunID, Tool: r.ToolID, Status: r.Status, StateRev: r.StateRev, Outputs: []map[string]any{}, NextActions: r.NextActions,
		ErrorSummary: r.ErrorSummary, ErrorSource: r.ErrorSource, Artifacts: []artifactOut{}}
	// An output's fields depend on its kind (contract.Output writes only its kind's), so
	// the agent gets them as the API writes them.
	for _, o := range r.Outputs {
		var m map[string]any
		if b, err := json.Marshal(o); err == nil && json.Unmarshal(b, &m) == nil {
			out.Outputs = append(out.Outputs, m)
		}
	}
	if out.NextActions == nil {
		out.NextActions = []contract.NextAction{}
	}
	for _, a := range r.Artifacts {
		out.Artifacts = append(out.Artifacts, artifactOut{Name: a.Name, Path: a.Path, Bytes: a.Bytes, Expired: a.ExpiredAt != nil})
	}
	if logs {
		out.Stdout, out.Stderr = r.Stdout, r.Stderr
	}
	return out
}

func waitOf(s float64) time.Duration {
	d := time.Duration(s * float64(time.Second))
	if d < 0 {
		return 0
	}
	return min(d, maxWait)
}

type runIn struct {
	Tool     string         `json:"tool" jsonschema:"the tool's slug, from tools_list"`
	Inputs   map[string]any `json:"inputs,omitempty" jsonschema:"the inputs, fitting the tool's input_schema"`
	FileKeys []string       `json:"file_keys,omitempty" jsonschema:"staged files to run the tool on, e.g. [\"files/klass.csv\"]"`
	WaitS    *float64       `json:"wait_s,omitempty" jsonschema:"seconds to wait for the run to end, 0 to 60; default 60"`
}

func (t *tools) runTool(ctx context.Context, _ *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, runOut, error) {
	wait := maxWait
	if in.WaitS != nil {
		wait = waitOf(*in.WaitS)
	}
	r, err := t.c.RunJSON(ctx, in.Tool, in.Inputs, in.FileKeys, wait)
	if err != nil {
		return nil, runOut{}, err
	}
	return nil, runOf(r, false), nil
}

type actionIn struct {
	RunID            string         `json:"run_id" jsonschema:"the run whose next_actions offered the action"`
	ActionID         string         `json:"action_id" jsonschema:"one of that run's next_actions"`
	Input            map[string]any `json:"input,omitempty" jsonschema:"the action's fields, by name"`
	ExpectedStateRev int64          `json:"expected_state_rev" jsonschema:"the state_rev of that run"`
	WaitS            *float64       `json:"wait_s,omitempty" jsonschema:"seconds to wait for the new run to end, 0 to 60; default 60"`
}

func (t *tools) runAction(ctx context.Context, _ *mcp.CallToolRequest, in actionIn) (*mcp.CallToolResult, runOut, error) {
	r, err := t.c.GetRun(ctx, in.RunID, 0)
	if err != nil {
		return nil, runOut{}, err
	}
	input := in.Input
	if input == nil {
		input = map[string]any{}
	}
	var res client.ActionResult
	if v, ok := strings.CutPrefix(r.Context, "sandbox:"); ok {
		res, err = t.c.EditorAction(ctx, v, in.ActionID, input, in.ExpectedStateRev)
	} else {
		res, err = t.c.StartAction(ctx, r.ToolID, r.Context, in.ActionID, input, in.ExpectedStateRev)
	}
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Code == "conflict" {
		return nil, runOut{}, fmt.Errorf("%w (another step was taken since state_rev %d: read the latest run of this tool with run_get and decide again)", err, in.ExpectedStateRev)
	}
	if err != nil {
		return nil, runOut{}, err
	}
	wait := maxWait
	if in.WaitS != nil {
		wait = waitOf(*in.WaitS)
	}
	next := res.Run
	if !next.Done() && wait > 0 {
		if next, err = t.c.GetRun(ctx, res.RunID, wait); err != nil {
			return nil, runOut{}, err
		}
	}
	return nil, runOf(next, false), nil
}

type getIn struct {
	RunID          string   `json:"run_id" jsonschema:"the run's id, from tool_run or run_action"`
	WaitS          *float64 `json:"wait_s,omitempty" jsonschema:"seconds to wait for a run that has not ended, 0 to 60; default 0"`
	StageArtifacts bool     `json:"stage_artifacts,omitempty" jsonschema:"copy the run's artifacts into the staging area and give each its file_key"`
}

func (t *tools) getRun(ctx context.Context, _ *mcp.CallToolRequest, in getIn) (*mcp.CallToolResult, runOut, error) {
	var wait time.Duration
	if in.WaitS != nil {
		wait = waitOf(*in.WaitS)
	}
	r, err := t.c.GetRun(ctx, in.RunID, wait)
	if err != nil {
		return nil, runOut{}, err
	}
	out := runOf(r, true)
	if in.StageArtifacts {
		for i, a := range r.Artifacts {
			if a.ExpiredAt != nil {
				continue
			}
			key := artifactKey(r.RunID, a.Path)
			if err := t.stageArtifact(ctx, a, key); err != nil {
				return nil, runOut{}, fmt.Errorf("copying artifact %s to %s: %w", a.Path, key, err)
			}
			out.Artifacts[i].FileKey = key
		}
	}
	return nil, out, nil
}

// artifactKey is where run_get stages an artifact: files/runs/<run>/ and its path under
// output/, each piece made a key segment ("Grupper 7A.pdf" is Grupper_7A.pdf).
func artifactKey(runID, p string) string {
	parts := strings.Split(path.Clean(strings.TrimPrefix(p, "output/")), "/")
	for i, s := range parts {
		parts[i] = blob.SafeSegment(s)
	}
	return "files/runs/" + blob.SafeSegment(runID) + "/" + strings.Join(parts, "/")
}

// stageArtifact streams artifact a into the staging area under key; its bytes pass
// through this process, never the agent's context. The staged file's checksum must be
// the artifact's, or it is deleted again.
func (t *tools) stageArtifact(ctx context.Context, a client.Artifact, key string) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(t.c.DownloadArtifact(ctx, a, pw)) }()
	err := t.c.Put(ctx, key, pr, a.Bytes, "")
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return err
	}
	fi, err := t.c.FileInfoOf(ctx, key)
	if err != nil {
		return err
	}
	if fi.Checksum != "sha256:"+a.SHA256 {
		t.c.DeleteFile(context.WithoutCancel(ctx), key)
		return fmt.Errorf("the copy's checksum %s is not the artifact's sha256:%s; it was deleted", fi.Checksum, a.SHA256)
	}
	return nil
}
