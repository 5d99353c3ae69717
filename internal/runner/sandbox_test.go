package runner

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestCleanPath(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"input/data.csv", "input/data.csv", true},
		{"a//b/./c", "a/b/c", true},
		{"dir/", "dir", true},
		{".hidden", ".hidden", true},
		{"a..b/..c", "a..b/..c", true},
		{"", "", false},
		{".", "", false},
		{"./", "", false},
		{"/etc/passwd", "", false},
		{"/workspace/x", "", false},
		{"../x", "", false},
		{"a/../b", "", false},
		{"a/..", "", false},
		{"a\x00b", "", false},
		{"a\nb", "", false},
		{"tab\tname", "", false},
		{"ünïcode/名前.txt", "ünïcode/名前.txt", true},
		{strings.Repeat("a", 4097), "", false},
	} {
		got, err := CleanPath(c.in)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q ok=%v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrPath) {
			t.Errorf("CleanPath(%q): %v is not ErrPath", c.in, err)
		}
	}
}

// FuzzCleanPath: whatever comes in, what comes out is a clean relative path that stays
// inside the workspace, or ErrPath.
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"input/data.csv", "../x", "/etc", "a//b", "a\x00", ".", "a/./b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := CleanPath(p)
		if err != nil {
			if !errors.Is(err, ErrPath) {
				t.Fatalf("CleanPath(%q): %v is not ErrPath", p, err)
			}
			return
		}
		if got == "" || got == "." || strings.HasPrefix(got, "/") || path.Clean(got) != got || strings.ContainsAny(got, "\x00\n\r") {
			t.Fatalf("CleanPath(%q) = %q", p, got)
		}
		for _, seg := range strings.Split(got, "/") {
			if seg == ".." {
				t.Fatalf("CleanPath(%q) = %q keeps a .. segment", p, got)
			}
		}
	})
}
