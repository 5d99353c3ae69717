package docker

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestExtractStaysInside feeds extract the tar a hostile tool could shape: a symlink to
// a host directory, then a file through it, and "..": nothing may land outside dir.
func TestExtractStaysInside(t *testing.T) {
	outside := t.TempDir()
	for _, entries := range [][]tar.Header{
		{{Name: "output/l", Typeflag: tar.TypeSymlink, Linkname: outside}, {Name: "output/l/pwned", Typeflag: tar.TypeReg, Size: 1}},
		{{Name: "output/d", Typeflag: tar.TypeSymlink, Linkname: "../../.."}, {Name: "output/d/x", Typeflag: tar.TypeReg, Size: 1}},
		{{Name: "output/../../escape", Typeflag: tar.TypeReg, Size: 1}},
	} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range entries {
			tw.WriteHeader(&h)
			if h.Size > 0 {
				tw.Write([]byte("x"))
			}
		}
		tw.Close()
		dir := t.TempDir()
		extract(tar.NewReader(&buf), dir, 1<<20) // an error is fine; an escape is not
		if left, _ := os.ReadDir(outside); len(left) != 0 {
			t.Fatalf("%v: extract wrote %v outside its directory", entries, left)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); err == nil {
			t.Fatal("extract wrote through ..")
		}
	}
}
