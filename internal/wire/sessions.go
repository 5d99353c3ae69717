package wire

import (
	"encoding/json"
	"time"
)

// Session is a tool session (GET /api/v1/tools/{tool}/sessions/{context}): the state
// the server keeps for the tool's runs in one context, and its revision.
type Session struct {
	Context   string          `json:"context"`
	State     json.RawMessage `json:"state"`
	StateRev  int64           `json:"state_rev"`
	ToolID    string          `json:"tool_id"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// SessionFiles is the answer of GET /api/v1/tools/{tool}/session-files: the files a
// session keeps between its runs, and when they expire unless a run uses them.
type SessionFiles struct {
	ExpiresAt      *time.Time    `json:"expires_at"`
	Files          []SessionFile `json:"files"`
	LastAccessedAt *time.Time    `json:"last_accessed_at"`
}

// SessionFile is one session file.
type SessionFile struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// GoBackRequest is the body of POST /api/v1/editor/tool-versions/{version_id}/session/back:
// the kept step to make current again, and the revision the session is at now.
type GoBackRequest struct {
	Rev              *int64 `json:"rev"`
	ExpectedStateRev *int64 `json:"expected_state_rev"`
}

// ContinueRequest is the body of POST
// /api/v1/editor/tool-versions/{version_id}/session/continue: the version of the same tool
// whose sandbox session to go on from, the kept step of it to go on from (none: where it
// is), and the revision the version's own session is at (0: it has none; none: whatever
// it is).
type ContinueRequest struct {
	FromVersionID    string `json:"from_version_id"`
	Rev              *int64 `json:"rev,omitempty"`
	ExpectedStateRev *int64 `json:"expected_state_rev,omitempty"`
}
