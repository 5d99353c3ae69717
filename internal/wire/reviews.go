package wire

import "time"

// Review is a version submitted for review before publishing, and the decision on it
// (docs/api.md "Review before publishing").
type Review struct {
	ID        string `json:"id"`
	ToolID    string `json:"tool_id"`
	Tool      string `json:"tool"` // the tool's slug
	ToolTitle string `json:"tool_title"`
	VersionID string `json:"version_id"`
	// PublishedVersionID is the tool's published version now, what a reviewer compares
	// the submitted version against; null when the tool has none.
	PublishedVersionID *string    `json:"published_version_id"`
	Author             string     `json:"author"` // the submitter's user name
	Note               string     `json:"note"`
	SubmittedAt        time.Time  `json:"submitted_at"`
	Status             string     `json:"status"` // pending, approved, changes_requested or superseded
	DecidedBy          *string    `json:"decided_by"`
	DecidedAt          *time.Time `json:"decided_at"`
	Comment            string     `json:"comment"`
}

// NewSubmission is the body of POST /api/v1/tool-versions/{id}/submit.
type NewSubmission struct {
	Note string `json:"note"`
}

// ChangeRequest is the body of POST /api/v1/reviews/{id}/request-changes.
type ChangeRequest struct {
	Comment string `json:"comment"`
}

// ReviewList is the answer of GET /api/v1/reviews (one page, newest first; NextCursor
// is null on the last page) and of GET /api/v1/tools/{tool}/reviews.
type ReviewList struct {
	Reviews    []Review `json:"reviews"`
	Count      int      `json:"count"`
	NextCursor *string  `json:"next_cursor"`
}
