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
