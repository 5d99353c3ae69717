// Package wire holds the JSON shapes of the HTTP API (docs/api.md): the api package
// writes them, the client reads them. Both sides use these one definitions, so a field
// cannot be added, renamed or dropped on one side only.
//
// Bodies the API used to write from maps declare their fields in alphabetical order,
// the order a map is written in, so the bytes on the wire did not change.
package wire

// ErrorBody is the shape of every error answer: {"error": {code, message, details}}.
type ErrorBody struct {
	Error ErrorInfo `json:"error"`
}

// ErrorInfo is what an error answer says: a code of the error table, a message for a
// person, and details for a program (absent when there are none).
type ErrorInfo struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}
