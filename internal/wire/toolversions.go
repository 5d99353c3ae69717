package wire

import "time"

// VersionSummary is one version in GET /api/v1/tools/{tool}/versions: what a list shows,
// without the source and schemas (GET /api/v1/tool-versions/{id} has those).
type VersionSummary struct {
	ID            string    `json:"id"`
	Number        int       `json:"number"`
	Note          string    `json:"note"`
	CreatedBy     string    `json:"created_by"`
	CreatedByName string    `json:"created_by_name"`
	CreatedAt     time.Time `json:"created_at"`
	Published     bool      `json:"published"`
	// Compiles is the syntax check made when the version was saved: false with
	// SyntaxError (and SyntaxLine, 0 when not known) where Python's compiler stopped, or
	// why the check could not run.
	Compiles    bool   `json:"compiles"`
	SyntaxError string `json:"syntax_error,omitempty"`
	SyntaxLine  int    `json:"syntax_line,omitempty"`
	// LastSandboxStatus is the status of the version's latest editor sandbox run
	// (context sandbox:{id}); "" when it has none.
	LastSandboxStatus string `json:"last_sandbox_status"`
}

// VersionList is the answer of GET /api/v1/tools/{tool}/versions, newest first.
type VersionList struct {
	ToolID   string           `json:"tool_id"`
	Count    int              `json:"count"`
	Versions []VersionSummary `json:"versions"`
}

// VersionRef names a version in a diff.
type VersionRef struct {
	ID     string `json:"id"`
	Number int    `json:"number"`
}

// DiffPart is one part of two versions compared: "source", "input_schema" or
// "settings_schema".
type DiffPart struct {
	Name    string `json:"name"`
	Changed bool   `json:"changed"`
	// Unified is the part's unified diff (diff -u, 3 lines of context); "" when unchanged.
	Unified string `json:"unified"`
}

// VersionDiff is the answer of GET /api/v1/tool-versions/{a}/diff?against={b}: what
// changed from version b (From) to version a (To).
type VersionDiff struct {
	ToolID string     `json:"tool_id"`
	From   VersionRef `json:"from"`
	To     VersionRef `json:"to"`
	Parts  []DiffPart `json:"parts"`
	// Unified is every changed part's unified diff, one after the other.
	Unified string `json:"unified"`
}
