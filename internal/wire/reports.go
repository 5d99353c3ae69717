package wire

import "time"

// Report is a problem report as the API shows it (docs/api.md "Problem reports"). The
// run's input files are named (InputManifest) only when the reporter shared them; skrip
// does not keep a past run's input bytes, so names and sizes are all there is to see.
type Report struct {
	ID           string         `json:"id"`
	RunID        string         `json:"run_id"`
	ToolID       string         `json:"tool_id"`
	Tool         string         `json:"tool"` // the tool's slug
	ToolTitle    string         `json:"tool_title"`
	VersionID    string         `json:"version_id"`
	RunStatus    string         `json:"run_status"`
	ErrorSummary string         `json:"error_summary"`
	Message      string         `json:"message"`
	ShareFiles   bool           `json:"share_files"`
	Reporter     string         `json:"reporter"` // the reporter's user name
	Status       string         `json:"status"`   // open or closed
	CreatedAt    time.Time      `json:"created_at"`
	ClosedAt     *time.Time     `json:"closed_at"`
	InputFiles   []ManifestFile `json:"input_files,omitempty"`
}

// NewReport is the body of POST /api/v1/runs/{run_id}/report.
type NewReport struct {
	Message    string `json:"message"`
	ShareFiles bool   `json:"share_files"`
}

// ReportList is the answer of GET /api/v1/reports: one page, newest first. NextCursor
// is null on the last page.
type ReportList struct {
	Reports    []Report `json:"reports"`
	Count      int      `json:"count"`
	NextCursor *string  `json:"next_cursor"`
}
