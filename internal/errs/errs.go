// Package errs lets a package attach a user-facing message and details (the file, the
// limit, the value) to one of its sentinel errors. The api package maps the sentinel to
// an HTTP status and code; the message and details go to the client unchanged.
package errs

import (
	"errors"
	"fmt"
	"time"
)

// Error is a sentinel (Kind) with a sentence a user can act on and structured details.
type Error struct {
	Kind    error
	Message string
	Details map[string]any
	// RetryAfter, when positive, is how long the client should wait before it tries
	// again: the answer carries it as Retry-After (a per-user limit, a throttled sign-in).
	RetryAfter time.Duration
}

// New returns an Error of kind, with a message made from format and args.
func New(kind error, details map[string]any, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Details: details}
}

// Retry returns e with RetryAfter set to d.
func (e *Error) Retry(d time.Duration) *Error {
	e.RetryAfter = d
	return e
}

// RetryAfterOf is the wait an error in err's chain asks for, or 0 when none does.
func RetryAfterOf(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel, so errors.Is(err, kind) holds.
func (e *Error) Unwrap() error { return e.Kind }
