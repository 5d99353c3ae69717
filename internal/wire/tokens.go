package wire

// WebSessionList is the answer of GET /api/v1/me/sessions: the caller's signed-in
// browsers, the latest seen first.
type WebSessionList struct {
	Count    int          `json:"count"`
	Sessions []WebSession `json:"sessions"`
}
