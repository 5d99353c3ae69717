package wire

import (
	"encoding/json"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
)

// Tool is a tool as listings and changes show it. PublishedVersionID is null until a
// version is published.
type Tool struct {
	ID                string `json:"id"`
	Slug              string `json:"slug"`
	Title             string `json:"title"`
	Description       string `json:"description"`
	Summary           string `json:"summary"`
	UsageInstructions string `json:"usage_instructions"`
	AuthorID          string `json:"author_id"`
	// Author is the author's name; "borttagen användare" once they were deleted.
	Author             string    `json:"author"`
	PublishedVersionID *string   `json:"published_version_id"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
	// Categories are the tool's categories, by title; an author's proposal an admin has
	// not approved yet has approved false.
	Categories []ToolCategory `json:"categories"`
}

// ToolDetail is one tool (GET /api/v1/tools/{tool}) with what its published version asks
// for: its input_schema and settings_schema, null when it has none or nothing is
// published.
type ToolDetail struct {
	Tool
	InputSchema    json.RawMessage `json:"input_schema"`
	SettingsSchema json.RawMessage `json:"settings_schema"`
}

// ToolList is the answer of GET /api/v1/tools.
type ToolList struct {
	Count int    `json:"count"`
	Tools []Tool `json:"tools"`
}

// Version is a tool version. Its schemas are null when it has none.
type Version struct {
	ID             string          `json:"id"`
	ToolID         string          `json:"tool_id"`
	Source         string          `json:"source"`
	InputSchema    json.RawMessage `json:"input_schema"`
	SettingsSchema json.RawMessage `json:"settings_schema"`
	Entrypoint     string          `json:"entrypoint"`
	CreatedBy      string          `json:"created_by"`
	// CreatedByName is the creator's name; "borttagen användare" once they were deleted.
	CreatedByName string    `json:"created_by_name"`
	CreatedAt     time.Time `json:"created_at"`
	// Number counts the tool's versions 1, 2, 3… in the order they were made.
	Number int `json:"number"`
	// Note says what changed in the version; "" for none.
	Note string `json:"note"`
}

// NewTool is the body of POST /api/v1/tools: a tool with its first version. The schemas
// are JSON, absent for none.
type NewTool struct {
	Slug              string          `json:"slug"`
	Title             string          `json:"title"`
	Description       string          `json:"description,omitempty"`
	Summary           string          `json:"summary,omitempty"`
	UsageInstructions string          `json:"usage_instructions,omitempty"`
	Source            string          `json:"source"`
	InputSchema       json.RawMessage `json:"input_schema,omitempty"`
	SettingsSchema    json.RawMessage `json:"settings_schema,omitempty"`
	Publish           bool            `json:"publish"`
	// Categories name the tool's categories by slug or title; a title that names none
	// yet is proposed as a new one, for an admin to approve.
	Categories []string `json:"categories,omitempty"`
}

// CreatedTool is the answer of POST /api/v1/tools.
type CreatedTool struct {
	Tool    Tool    `json:"tool"`
	Version Version `json:"version"`
}

// NewVersion is the body of POST /api/v1/tools/{tool}/versions. The schemas are JSON,
// absent for none.
type NewVersion struct {
	// Note says what changed (optional, at most 500 bytes).
	Note           string          `json:"note,omitempty"`
	Source         string          `json:"source"`
	InputSchema    json.RawMessage `json:"input_schema,omitempty"`
	SettingsSchema json.RawMessage `json:"settings_schema,omitempty"`
}

// ToolInfo is the body of PATCH /api/v1/tools/{tool}: the fields it holds change, the
// others stay as they are.
type ToolInfo struct {
	Title             *string `json:"title,omitempty"`
	Description       *string `json:"description,omitempty"`
	Summary           *string `json:"summary,omitempty"`
	UsageInstructions *string `json:"usage_instructions,omitempty"`
	// Categories, when present, replace the tool's categories (as NewTool's do).
	Categories *[]string `json:"categories,omitempty"`
}

// Settings is a user's settings for a tool (GET and PUT of a settings route): the
// schema and the saved values that fit it. UpdatedAt is null when nothing was saved.
type Settings struct {
	// SettingsSchema is null for a version without one (openapi:"nullable" says so to
	// the OpenAPI document).
	SettingsSchema contract.SettingsSchema `json:"settings_schema" openapi:"nullable"`
	Values         map[string]any          `json:"values"`
	UpdatedAt      *time.Time              `json:"updated_at"`
}

// SettingsUpdate is the body of a PUT of settings: every value to keep, as a JSON object
// ({} clears them). It stays raw so the API can tell a missing or null values from {}
// and keep numbers as written.
type SettingsUpdate struct {
	Values json.RawMessage `json:"values"`
}
