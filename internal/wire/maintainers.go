package wire

import "time"

// Maintainer is one maintainer of a tool (GET /api/v1/tools/{tool}/maintainers).
type Maintainer struct {
	UserID string `json:"user_id"`
	// Name is the user's name; "borttagen användare" once they were deleted.
	Name string `json:"name"`
	Role string `json:"role"`
	// Author says they are the tool's author, who is always a maintainer.
	Author bool `json:"author"`
	// AddedBy is the id of the user who added them.
	AddedBy string    `json:"added_by"`
	AddedAt time.Time `json:"added_at"`
}

// MaintainerList is the answer of GET /api/v1/tools/{tool}/maintainers.
type MaintainerList struct {
	Maintainers []Maintainer `json:"maintainers"`
	Count       int          `json:"count"`
}

// MaintainerRef names a user to add (POST) or remove (DELETE with a body) as a
// maintainer: their name or their id.
type MaintainerRef struct {
	User string `json:"user"`
}
