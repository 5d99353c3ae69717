package staging

import (
	"errors"
	"testing"
)

// TestCursor: a cursor Cursor made gives its key back, and anything else (not base64,
// or not a staged file's key) is ErrBadCursor rather than a place to start from.
func TestCursor(t *testing.T) {
	for _, key := range []string{"files/a", "files/f_01HZX/report.v2.txt", "files/a_b-c"} {
		if got, err := ParseCursor(Cursor(key)); err != nil || got != key {
			t.Errorf("ParseCursor(Cursor(%q)) = %q, %v", key, got, err)
		}
	}
	if got, err := ParseCursor(""); err != nil || got != "" {
		t.Errorf("the empty cursor is %q, %v; want the first page", got, err)
	}
	for _, bad := range []string{
		"garbage",          // decodes to bytes that are no key
		"!!!",              // not base64
		Cursor("runs/x"),   // a key, but not a staged file's
		Cursor("files/.."), // a key's shape with a .. segment
		Cursor("files/a") + "=",
	} {
		if _, err := ParseCursor(bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("ParseCursor(%q) = %v, want ErrBadCursor", bad, err)
		}
	}
}
