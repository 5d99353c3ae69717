package wire

import (
	"encoding/json"
	"time"
)

// Sandbox is a persistent agent sandbox (docs/spec.md §9).
type Sandbox struct {
	SandboxID    string        `json:"sandbox_id"`
	OwnerID      string        `json:"owner_id"`
	Runner       string        `json:"runner"`
	Status       string        `json:"status"`
	Workspace    string        `json:"workspace"`
	Limits       SandboxLimits `json:"limits"`
	IdleTimeout  string        `json:"idle_timeout"`
	IdleTimeoutS float64       `json:"idle_timeout_s"`
	CreatedAt    time.Time     `json:"created_at"`
	LastActiveAt time.Time     `json:"last_active_at"`
	ExpiresAt    time.Time     `json:"expires_at"`
}

// SandboxLimits are the limits a sandbox got.
type SandboxLimits struct {
	MemoryBytes    int64   `json:"memory_bytes"`
	Pids           int     `json:"pids"`
	CPUs           float64 `json:"cpus"`
	WorkspaceBytes int64   `json:"workspace_bytes"`
	TmpBytes       int64   `json:"tmp_bytes"`
	LogBytes       int64   `json:"log_bytes"`
	ExecTimeoutS   float64 `json:"max_exec_timeout_s"`
}

// SandboxList is the answer of GET /api/v1/sandboxes.
type SandboxList struct {
	Count     int       `json:"count"`
	Sandboxes []Sandbox `json:"sandboxes"`
}

// NewSandbox is the body of POST /api/v1/sandboxes (optional). What it leaves out takes
// the server's defaults. IdleTimeout is seconds (900) or a duration ("15m").
type NewSandbox struct {
	Limits      *NewSandboxLimits `json:"limits,omitempty"`
	IdleTimeout json.RawMessage   `json:"idle_timeout,omitempty"`
}

// NewSandboxLimits are the limits a new sandbox may ask for; zero takes the server's.
type NewSandboxLimits struct {
	MemoryBytes    int64   `json:"memory_bytes,omitempty"`
	Pids           int     `json:"pids,omitempty"`
	CPUs           float64 `json:"cpus,omitempty"`
	WorkspaceBytes int64   `json:"workspace_bytes,omitempty"`
}

// ExecRequest is the body of POST /api/v1/sandboxes/{id}/exec: a command (an argument
// array, not a shell string), its timeout in seconds (0 for the server's) and its stdin.
type ExecRequest struct {
	Cmd      []string `json:"cmd"`
	TimeoutS float64  `json:"timeout_s,omitempty"`
	Stdin    *string  `json:"stdin,omitempty"`
}

// ExecResult is how a command in a sandbox ended.
type ExecResult struct {
	ExitCode        int    `json:"exit_code"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	DurationMS      int64  `json:"duration_ms"`
	TimedOut        bool   `json:"timed_out"`
	OOMKilled       bool   `json:"oom_killed"`
}

// ExecNDJSON is the media type of a streamed exec: one ExecMessage a line.
const ExecNDJSON = "application/x-ndjson"

// ExecMessage is one line of a streamed exec, one of: an output line (Stream "stdout"
// or "stderr", and Line with its newline), a Notice (lines left out of the stream, a
// line cut), the Result that ends the stream, or the Error that ends it.
type ExecMessage struct {
	Error  *ErrorInfo  `json:"error,omitempty"`
	Line   string      `json:"line,omitempty"`
	Notice string      `json:"notice,omitempty"`
	Result *ExecResult `json:"result,omitempty"`
	Stream string      `json:"stream,omitempty"`
}

// Written is the answer of PUT /api/v1/sandboxes/{id}/fs/{path}: the file written into
// the workspace.
type Written struct {
	OK        bool   `json:"ok"`
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
}

// StageRequest is the body of POST /api/v1/sandboxes/{id}/stage: a staged file to copy
// into the workspace, at path Destination.
type StageRequest struct {
	FileKey     string `json:"file_key"`
	Destination string `json:"destination"`
}

// Staged is the answer of a stage: the file now in the workspace.
type Staged struct {
	Checksum  string `json:"checksum"`
	OK        bool   `json:"ok"`
	Path      string `json:"path"`
	SizeBytes int64  `json:"size_bytes"`
}

// PublishRequest is the body of POST /api/v1/sandboxes/{id}/publish: a workspace file to
// copy into the staging area, under FileKey when set, kept for TTL when set.
type PublishRequest struct {
	Source  string `json:"source"`
	FileKey string `json:"file_key,omitempty"`
	TTL     string `json:"ttl,omitempty"`
}

// Published is the answer of a publish: the new staged file.
type Published struct {
	OK bool `json:"ok"`
	FileInfo
}
