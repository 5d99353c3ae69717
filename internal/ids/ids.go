// Package ids makes the identifiers skrip hands out: a short type prefix and a ULID, so
// ids sort by creation time and say what they name ("u_01J…" is a user).
package ids

import "github.com/oklog/ulid/v2"

// New returns prefix + "_" + a fresh ULID.
func New(prefix string) string {
	return prefix + "_" + ulid.Make().String()
}
