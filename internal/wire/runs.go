package wire

import (
	"encoding/json"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
)

// Run statuses that are not final; every other status is.
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
)

// Run is a run as the API shows it. Stdout and stderr are shown to the run's owner only,
// and absent for anyone else (an admin).
type Run struct {
	RunID           string                `json:"run_id"`
	ToolID          string                `json:"tool_id"`
	VersionID       string                `json:"version_id"`
	UserID          string                `json:"user_id"`
	Context         string                `json:"context"`
	Kind            string                `json:"kind"`
	ActionID        *string               `json:"action_id"`
	Status          string                `json:"status"`
	ErrorSummary    *string               `json:"error_summary"`
	ErrorSource     *string               `json:"error_source"` // a Source constant; null when the run did not fail
	Inputs          map[string]any        `json:"inputs"`
	Outputs         []contract.Output     `json:"outputs"`
	NextActions     []contract.NextAction `json:"next_actions"`
	Artifacts       []Artifact            `json:"artifacts"`
	InputManifest   InputManifest         `json:"input_manifest"`
	StateRev        *int64                `json:"state_rev"`
	Attempts        int64                 `json:"attempts"`
	CreatedAt       time.Time             `json:"created_at"`
	StartedAt       *time.Time            `json:"started_at"`
	FinishedAt      *time.Time            `json:"finished_at"`
	DurationMS      *int64                `json:"duration_ms"`
	Stdout          *string               `json:"stdout,omitempty"`
	Stderr          *string               `json:"stderr,omitempty"`
	StdoutTruncated bool                  `json:"stdout_truncated,omitempty"`
	StderrTruncated bool                  `json:"stderr_truncated,omitempty"`
}

// Where a run's error came from (Run.ErrorSource): decide by it, not by the summary's
// words, which are for people.
const (
	SourceTool   = "tool"   // the tool's own message to its user (a ToolUserError)
	SourceCrash  = "crash"  // an uncaught exception in the tool
	SourceRunner = "runner" // a limit, a timeout, the sandbox, a lost worker
	SourcePolicy = "policy" // the result broke the contract
	SourceInput  = "input"  // the user's input was refused
)

// Done reports whether the run is over.
func (r Run) Done() bool { return r.Status != StatusQueued && r.Status != StatusRunning }

// Artifact is a file a run left in /work/output. ExpiredAt is set once the server's
// SKRIP_RUN_ARTIFACTS_TTL removed its bytes.
type Artifact struct {
	Path      string     `json:"path"`
	Name      string     `json:"name"`
	Bytes     int64      `json:"bytes"`
	SHA256    string     `json:"sha256"`
	URL       string     `json:"url"`
	ExpiredAt *time.Time `json:"expired_at,omitempty"`
}

// InputManifest is what a run was given: the names and sizes of its input files.
type InputManifest struct {
	Files []ManifestFile `json:"files"`
}

// ManifestFile is one file of an input manifest.
type ManifestFile struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// RunList is the answer of GET /api/v1/runs: one page, newest first. NextCursor is null
// on the last page.
type RunList struct {
	Count      int     `json:"count"`
	NextCursor *string `json:"next_cursor"`
	Runs       []Run   `json:"runs"`
}

// RunRequest is the application/json body of a run (POST /api/v1/tools/{tool}/runs and
// the editor's run-sandbox): its inputs, and the keys of the caller's staged files to use
// as its uploaded files. Inputs is kept raw so that numbers stay as written.
type RunRequest struct {
	Inputs   json.RawMessage `json:"inputs,omitempty"`
	FileKeys []string        `json:"file_keys,omitempty"`
}

// ActionRequest is the body of start_action (POST /api/v1/start_action, and the
// editor's, which names neither tool nor context). ExpectedStateRev is the state_rev of
// the run whose action this is.
type ActionRequest struct {
	ToolID           string         `json:"tool_id,omitempty"`
	Context          string         `json:"context,omitempty"`
	ActionID         string         `json:"action_id"`
	Input            map[string]any `json:"input"`
	ExpectedStateRev *int64         `json:"expected_state_rev"`
}

// ActionResult is the answer to start_action: the action's run and the session's
// state_rev after it.
type ActionResult struct {
	Run      Run    `json:"run"`
	RunID    string `json:"run_id"`
	StateRev *int64 `json:"state_rev"`
}
