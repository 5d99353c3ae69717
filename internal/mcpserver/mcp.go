// Package mcpserver serves skrip's agent sandboxes, staged files and tools to AI agents as
// MCP tools (docs/spec.md §9): the tools, their schemas and descriptions, and how API
// errors reach the agent.
// It is a thin client of the HTTP API (internal/client); `skrip mcp` runs it over stdio.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skrip-dev/skrip/internal/client"
)

// MaxReadBytes is the most sandbox_fs_read returns into the model's context. A larger
// file is refused whole, never cut short.
const MaxReadBytes = 256 << 10

// maxListed is the most files files_list returns; past it the answer says it was cut.
const maxListed = 1000

const instructions = `skrip gives you sandboxes: Linux environments with no network access, each with a persistent working directory, /workspace, that keeps its files between commands until the sandbox is destroyed after a while unused.

A typical task: files_list to find the user's files in the staging area; sandbox_create; sandbox_stage_file to copy a file into /workspace; sandbox_fs_write to add a script; sandbox_exec to run it; sandbox_publish_file to put the result back in the staging area, and tell the user its file_key.

Staging and publishing move the bytes on the server: they never pass through your context, so use them for data files of any size, and sandbox_fs_read and sandbox_fs_write only for small text such as scripts, logs and summaries. Every path is relative to /workspace.

skrip also runs teachers' tools (scripts that make groups from a class list, a PDF from HTML, and such): tools_list shows them with the inputs and files each takes; tool_run runs one on staged files; a run may offer next_actions, taken with run_action and the run's state_rev; run_get reads a run and can copy its artifacts into the staging area. sandbox_list and sandbox_delete free sandboxes you no longer need.`

// NewServer returns an MCP server whose tools call the skrip server c. version is
// the version it reports to clients.
func NewServer(c *client.Client, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "skrip", Title: "skrip sandboxes and tools", Version: version},
		&mcp.ServerOptions{Instructions: instructions})
	t := &tools{c: c}
	mcp.AddTool(s, &mcp.Tool{
		Name: "sandbox_create",
		Description: "Create a sandbox: an isolated Linux environment with no network access and a persistent working directory, /workspace, " +
			"whose files stay between commands. Returns sandbox_id, which every other sandbox_* tool needs, with the sandbox's limits and expires_at. " +
			"The sandbox and all its files are destroyed after idle_timeout without use (the server's default is 15 minutes), " +
			"so publish the results you need with sandbox_publish_file. Create one sandbox per task and reuse it for every step.",
		Annotations: &mcp.ToolAnnotations{Title: "Create a sandbox", OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.create)
	mcp.AddTool(s, &mcp.Tool{
		Name: "sandbox_exec",
		Description: "Run one command in a sandbox and wait for it to end. cmd is an argument array, not a shell string: " +
			`["python3", "transform.py", "input/data.csv"]; for pipes, redirection or wildcards run ["sh", "-c", "..."]. ` +
			"The command starts in /workspace, so relative paths are relative to /workspace, and files it writes there stay for later commands. " +
			"There is no network: nothing can be downloaded or installed. " +
			"Returns exit_code, stdout and stderr (each cut at the server's output limit, with stdout_truncated and stderr_truncated saying so), " +
			"duration_ms, and timed_out or oom_killed when the command was killed. A non-zero exit_code is a normal result, not a tool error: read stderr.",
		Annotations: &mcp.ToolAnnotations{Title: "Run a command in a sandbox", OpenWorldHint: new(false)},
	}, t.exec)
	mcp.AddTool(s, &mcp.Tool{
		Name: "sandbox_fs_read",
		Description: "Read a text file from a sandbox and return its content. path is relative to /workspace (e.g. \"output/summary.txt\"); " +
			"absolute paths and \"..\" are refused. Only UTF-8 text up to 256 KiB is returned, and always whole: a larger or binary file is refused " +
			"with its size. To look at part of a large file use sandbox_exec (head, wc -l, python3); to hand a file to the user use sandbox_publish_file, " +
			"which moves it without passing it through your context.",
		Annotations: &mcp.ToolAnnotations{Title: "Read a text file from a sandbox", ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.read)
	mcp.AddTool(s, &mcp.Tool{
		Name: "sandbox_fs_write",
		Description: "Write text into a file of a sandbox, replacing the file if it exists and making its parent directories. " +
			"path is relative to /workspace (e.g. \"transform.py\"); absolute paths and \"..\" are refused. " +
			"Use it for scripts and small inputs you write yourself. To bring in a file that is already in the staging area " +
			"(such as the user's upload) use sandbox_stage_file instead: its bytes do not pass through your context.",
		Annotations: &mcp.ToolAnnotations{Title: "Write a text file into a sandbox", IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.write)
	mcp.AddTool(s, &mcp.Tool{
		Name: "sandbox_stage_file",
		Description: "Copy a file from skrip's file staging area into a sandbox. file_key is a key from files_list (e.g. \"files/f_01J...\" or \"files/reports/2024.csv\"); " +
			"destination is a path relative to /workspace (e.g. \"input/data.csv\"), whose parent directories are made and which is replaced if it exists. " +
			"The bytes move on the server, checked against the file's checksum, and never pass through your context, so use this for data files of any size. " +
			"Returns path, size_bytes and checksum.",
		Annotations: &mcp.ToolAnnotations{Title: "Stage a file into a sandbox", IdempotentHint: true, OpenWorldHint: new(false)},
	}, t.stage)
	mcp.AddTool(s, &mcp.Tool{
		Name: "sandbox_publish_file",
		Description: "Copy a file from a sandbox into skrip's file staging area, where the user can download it and it outlives the sandbox. " +
			"source is a path relative to /workspace (e.g. \"output/result.csv\"). file_key is optional: give one under files/ (e.g. \"files/reports/result.csv\") " +
			"to choose the key, or leave it out for a new files/f_... key. The bytes move on the server and never pass through your context, " +
			"so use this for results of any size. Returns file_key, size_bytes and checksum: tell the user the file_key.",
		Annotations: &mcp.ToolAnnotations{Title: "Publish a file from a sandbox", OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.publish)
	mcp.AddTool(s, &mcp.Tool{
		Name: "files_list",
		Description: "List your files in skrip's file staging area: the user's uploads and files published from sandboxes. " +
			"prefix keeps only keys that start with it (e.g. \"files/reports/\"). Returns each file's file_key, name, size_bytes, content_type, " +
			"checksum and expiry, and count; never the contents. Copy a file into a sandbox with sandbox_stage_file.",
		Annotations: &mcp.ToolAnnotations{Title: "List staged files", ReadOnlyHint: true, OpenWorldHint: new(false)},
	}, t.list)
	mcp.AddTool(s, &mcp.Tool{
		Name: "files_share",
		Description: "Make a share link of a file in skrip's file staging area: a URL that anyone who has it can open to download the file, " +
			"without signing in, until it expires (ttl, e.g. \"1h\" or \"2d\"; at most the server's limit, 7 days by default, and never past the file's own expiry) " +
			"or has served max_downloads downloads. Use it when the user asks for a link to hand on; it gives access to this one file only. " +
			"file_key is a key from files_list or sandbox_publish_file. Returns url, id and expires_at: give the user the url and when it stops working. " +
			"The url is shown only now; the user can revoke the link with `skrip files unlink <id>`.",
		Annotations: &mcp.ToolAnnotations{Title: "Share a staged file by link", OpenWorldHint: new(false), DestructiveHint: new(false)},
	}, t.share)
	t.addRunTools(s)
	return s
}

// Serve runs an MCP server for c on one session, reading requests from in and writing
// answers to out, until in ends or ctx is done. A line that is not a JSON-RPC message
// gets a JSON-RPC error and the session goes on (filterLines).
func Serve(ctx context.Context, c *client.Client, version string, in io.Reader, out io.Writer) error {
	pr, pw := io.Pipe()
	o := newOutput(out)
	go filterLines(in, pw, o)
	// The filter bounds every line, so the SDK's own cap (which counts its read-ahead
	// and would end the session) is off.
	err := NewServer(c, version).Run(ctx, &mcp.IOTransport{Reader: filtered{pr, in}, Writer: o, MaxLineLength: -1})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// tools holds the tool handlers. An error they return, such as a *client.Error with the
// server's message, reaches the agent as a tool result with isError set (the SDK does
// this for every error but a JSON-RPC one), so the agent can read it and act;
// sandboxGone and pathHint add what the agent can do about some of them.
type tools struct {
	c *client.Client
}

type createIn struct {
	IdleTimeout    string `json:"idle_timeout,omitempty" jsonschema:"destroy the sandbox after it has been unused this long, as a duration such as \"30m\" or \"2h\"; default the server's (15m), at most the server's maximum"`
	MemoryBytes    int64  `json:"memory_bytes,omitempty" jsonschema:"memory limit in bytes for the sandbox's processes; default and at most the server's"`
	WorkspaceBytes int64  `json:"workspace_bytes,omitempty" jsonschema:"size limit of /workspace in bytes; default and at most the server's"`
}

func (t *tools) create(ctx context.Context, _ *mcp.CallToolRequest, in createIn) (*mcp.CallToolResult, client.Sandbox, error) {
	opts := client.SandboxOptions{IdleTimeout: in.IdleTimeout}
	if in.MemoryBytes != 0 || in.WorkspaceBytes != 0 {
		opts.Limits = &client.SandboxLimits{MemoryBytes: in.MemoryBytes, WorkspaceBytes: in.WorkspaceBytes}
	}
	sb, err := t.c.CreateSandbox(ctx, opts)
	return nil, sb, err
}

type execIn struct {
	SandboxID string   `json:"sandbox_id" jsonschema:"the sandbox_id returned by sandbox_create"`
	Cmd       []string `json:"cmd" jsonschema:"the command and its arguments as a non-empty array of strings, e.g. [\"python3\", \"transform.py\"]; not a shell string"`
	TimeoutS  float64  `json:"timeout_s,omitempty" jsonschema:"seconds to let the command run before it is killed; default 60, at most the server's limit"`
	Stdin     *string  `json:"stdin,omitempty" jsonschema:"text to send to the command's standard input; none when left out"`
}

func (t *tools) exec(ctx context.Context, _ *mcp.CallToolRequest, in execIn) (*mcp.CallToolResult, client.ExecResult, error) {
	res, err := t.c.Exec(ctx, in.SandboxID, client.ExecRequest{Cmd: in.Cmd, TimeoutS: in.TimeoutS, Stdin: in.Stdin})
	return nil, res, sandboxGone(err)
}

type readIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox_id returned by sandbox_create"`
	Path      string `json:"path" jsonschema:"the file's path relative to /workspace, e.g. \"output/summary.txt\""`
}

// instead is what an agent may do with a file sandbox_fs_read refuses.
const instead = "Use sandbox_exec to look at part of it (head, tail, wc -l, file, python3), " +
	"or sandbox_publish_file to move it whole to the staging area, where the user can download it."

type readOut struct {
	Path      string `json:"path" jsonschema:"the file's path relative to /workspace"`
	SizeBytes int64  `json:"size_bytes" jsonschema:"the file's size in bytes"`
	Content   string `json:"content" jsonschema:"the whole file, as UTF-8 text"`
}

func (t *tools) read(ctx context.Context, _ *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, readOut, error) {
	rc, size, err := t.c.ReadSandboxFile(ctx, in.SandboxID, in.Path)
	if err != nil {
		return nil, readOut{}, pathHint(sandboxGone(err))
	}
	defer rc.Close()
	if size > MaxReadBytes {
		return nil, readOut{}, fmt.Errorf("%s is %d bytes, more than the %d that sandbox_fs_read returns: the file was not read. %s",
			in.Path, size, MaxReadBytes, instead)
	}
	b, err := io.ReadAll(io.LimitReader(rc, MaxReadBytes+1))
	if err != nil {
		return nil, readOut{}, fmt.Errorf("reading %s: %w", in.Path, err)
	}
	if len(b) > MaxReadBytes {
		return nil, readOut{}, fmt.Errorf("%s is more than the %d bytes that sandbox_fs_read returns: the file was not read. %s",
			in.Path, MaxReadBytes, instead)
	}
	if !utf8.Valid(b) {
		return nil, readOut{}, fmt.Errorf("%s is %d bytes that are not UTF-8 text: the file was not read. %s", in.Path, len(b), instead)
	}
	return nil, readOut{Path: in.Path, SizeBytes: int64(len(b)), Content: string(b)}, nil
}

type writeIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox_id returned by sandbox_create"`
	Path      string `json:"path" jsonschema:"the file's path relative to /workspace, e.g. \"transform.py\"; parent directories are made"`
	Content   string `json:"content" jsonschema:"the file's whole new content, as text"`
}

func (t *tools) write(ctx context.Context, _ *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, client.Written, error) {
	w, err := t.c.WriteSandboxFile(ctx, in.SandboxID, in.Path, strings.NewReader(in.Content), int64(len(in.Content)))
	return nil, w, pathHint(sandboxGone(err))
}

// sandboxGone tells the agent what to do when the server says its sandbox is gone: most
// often it was destroyed after its idle timeout.
func sandboxGone(err error) error {
	var e *client.Error
	if errors.As(err, &e) && e.Code == "not_found" && e.Details["sandbox_id"] != nil {
		return fmt.Errorf("%w (a sandbox is destroyed, with its files, after idle_timeout unused: create a new one with sandbox_create)", err)
	}
	return err
}

// pathHint adds the rules of workspace paths to the server's refusal of one: the path
// travels in the URL, so the server's message may name the URL rather than the path.
func pathHint(err error) error {
	var e *client.Error
	if errors.As(err, &e) && e.Status == http.StatusBadRequest {
		return fmt.Errorf(`%w (paths are relative to /workspace, such as "output/result.csv", with no leading "/" and no "." or ".." segment)`, err)
	}
	return err
}

type stageIn struct {
	SandboxID   string `json:"sandbox_id" jsonschema:"the sandbox_id returned by sandbox_create"`
	FileKey     string `json:"file_key" jsonschema:"the staged file's key, as files_list shows it, e.g. \"files/f_01J...\" or \"files/reports/2024.csv\""`
	Destination string `json:"destination" jsonschema:"where to put the file, relative to /workspace, e.g. \"input/data.csv\""`
}

func (t *tools) stage(ctx context.Context, _ *mcp.CallToolRequest, in stageIn) (*mcp.CallToolResult, client.Staged, error) {
	st, err := t.c.StageFile(ctx, in.SandboxID, in.FileKey, in.Destination)
	return nil, st, sandboxGone(err)
}

type publishIn struct {
	SandboxID string `json:"sandbox_id" jsonschema:"the sandbox_id returned by sandbox_create"`
	Source    string `json:"source" jsonschema:"the file to publish, relative to /workspace, e.g. \"output/result.csv\""`
	FileKey   string `json:"file_key,omitempty" jsonschema:"the key to publish under, starting with files/, e.g. \"files/reports/result.csv\"; a new files/f_... key when left out"`
}

func (t *tools) publish(ctx context.Context, _ *mcp.CallToolRequest, in publishIn) (*mcp.CallToolResult, client.Published, error) {
	p, err := t.c.PublishFile(ctx, in.SandboxID, in.Source, in.FileKey, "")
	return nil, p, sandboxGone(err)
}

type listIn struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"list only keys that start with this, e.g. \"files/reports/\"; every file when left out"`
}

type listOut struct {
	Files     []client.FileInfo `json:"files" jsonschema:"the files, in key order"`
	Count     int               `json:"count" jsonschema:"how many files are listed"`
	Truncated bool              `json:"truncated" jsonschema:"true when more files match than were listed: narrow the prefix to see them"`
}

func (t *tools) list(ctx context.Context, _ *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, listOut, error) {
	out := listOut{Files: []client.FileInfo{}}
	cursor := ""
	for {
		page, next, err := t.c.Files(ctx, in.Prefix, cursor, maxListed-len(out.Files))
		if err != nil {
			return nil, listOut{}, err
		}
		out.Files = append(out.Files, page...)
		if next == "" {
			break
		}
		if len(out.Files) >= maxListed {
			out.Truncated = true
			break
		}
		cursor = next
	}
	out.Count = len(out.Files)
	return nil, out, nil
}

type shareIn struct {
	FileKey      string `json:"file_key" jsonschema:"the staged file's key, as files_list shows it, e.g. \"files/reports/result.csv\""`
	TTL          string `json:"ttl" jsonschema:"how long the link works, as a duration such as \"30m\", \"24h\" or \"7d\"; at most the server's limit (7d by default)"`
	MaxDownloads int64  `json:"max_downloads,omitempty" jsonschema:"how many downloads the link allows, 1 or more; no limit when left out"`
}

func (t *tools) share(ctx context.Context, _ *mcp.CallToolRequest, in shareIn) (*mcp.CallToolResult, client.FileLink, error) {
	if in.MaxDownloads < 0 {
		return nil, client.FileLink{}, fmt.Errorf("max_downloads must be 1 or more, got %d; leave it out for no limit", in.MaxDownloads)
	}
	l, err := t.c.CreateLink(ctx, in.FileKey, in.TTL, in.MaxDownloads)
	return nil, l, err
}
