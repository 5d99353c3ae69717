package wire

// ToolCategory is a category as a tool carries it.
type ToolCategory struct {
	Slug     string `json:"slug"`
	Title    string `json:"title"`
	Approved bool   `json:"approved"`
}

// Category is a category as GET /api/v1/categories lists it: with the number of tools
// the caller sees that carry it, and who proposed it ("" when an admin made it).
type Category struct {
	Slug       string `json:"slug"`
	Title      string `json:"title"`
	Approved   bool   `json:"approved"`
	Tools      int    `json:"tools"`
	ProposedBy string `json:"proposed_by"`
}

// CategoryList is the answer of GET /api/v1/categories, sorted by title in Swedish order.
type CategoryList struct {
	Count      int        `json:"count"`
	Categories []Category `json:"categories"`
}

// NewCategory is the body of POST /api/v1/categories; slug is made from the title when
// it is empty.
type NewCategory struct {
	Title string `json:"title"`
	Slug  string `json:"slug,omitempty"`
}

// CategoryChange is the body of PATCH /api/v1/categories/{category}: a new title, and
// approved true to approve a proposal.
type CategoryChange struct {
	Title    *string `json:"title,omitempty"`
	Approved bool    `json:"approved,omitempty"`
}
