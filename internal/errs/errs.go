// Package errs lets a package attach a user-facing message and details (the file, the
// limit, the value) to one of its sentinel errors. The api package maps the sentinel to
// an HTTP status and code; the message and details go to the client unchanged.
package errs

import "fmt"

// Error is a sentinel (Kind) with a sentence a user can act on and structured details.
type Error struct {
	Kind    error
	Message string
	Details map[string]any
}

// New returns an Error of kind, with a message made from format and args.
func New(kind error, details map[string]any, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Details: details}
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel, so errors.Is(err, kind) holds.
func (e *Error) Unwrap() error { return e.Kind }
