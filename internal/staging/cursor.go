package staging

import (
	"encoding/base64"
	"errors"
	"strings"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/errs"
)

// ErrBadCursor means a listing's cursor is not one a listing gave out (400).
var ErrBadCursor = errors.New("invalid files cursor")

// Cursor is the opaque cursor of the page of files that follows key: the API's
// next_cursor and the files page's "more" link carry the same one, so a client never
// learns to build it from a key.
func Cursor(key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key))
}

// ParseCursor returns the key a cursor pages after ("" for an empty cursor, the first
// page). A cursor that Cursor did not make, one that is not base64 or does not hold a
// staged file's key, is ErrBadCursor: a listing that quietly started over from the
// first page would pass for a complete one.
func ParseCursor(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	key := string(b)
	if err == nil && strings.HasPrefix(key, "files/") && blob.ValidateKey(key) == nil {
		return key, nil
	}
	return "", errs.New(ErrBadCursor, map[string]any{"field": "cursor", "value": cursor},
		"cursor %q is not one this server gave out: pass a listing's next cursor unchanged, or none for the first page", cursor)
}
