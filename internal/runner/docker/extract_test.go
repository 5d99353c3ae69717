package docker

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/skrip-dev/skrip/internal/runner"
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
		extract(tar.NewReader(&buf), dir, &runner.OutputBudget{Limit: 1 << 20}) // an error is fine; an escape is not
		if left, _ := os.ReadDir(outside); len(left) != 0 {
			t.Fatalf("%v: extract wrote %v outside its directory", entries, left)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); err == nil {
			t.Fatal("extract wrote through ..")
		}
	}
}

// TestExtractCountsSparseFiles feeds extract the tar GNU tar makes (-S, --sort=name, as
// collect runs it) of files that hold nothing but claim 3 MiB each: they count by that
// apparent size, the ones that do not fit are not written and are listed, and nothing on
// disk passes the cap.
func TestExtractCountsSparseFiles(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("tar not available: apt-get install tar")
	}
	src := t.TempDir()
	os.Mkdir(filepath.Join(src, "output"), 0o755)
	for _, name := range []string{"c.bin", "a.bin", "b.bin", "d.bin"} {
		f, err := os.Create(filepath.Join(src, "output", name))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(3 << 20)
		f.Close()
	}
	os.WriteFile(filepath.Join(src, "output", "small.txt"), []byte("hello"), 0o644)
	out, err := exec.Command("tar", "-C", src, "--sort=name", "-S", "-cf", "-", "output").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 1<<20 {
		t.Errorf("the tar of sparse files is %d bytes: holes were sent", len(out))
	}
	dir := t.TempDir()
	budget := runner.OutputBudget{Limit: 8 << 20}
	if _, err := extract(tar.NewReader(bytes.NewReader(out)), dir, &budget); err != nil {
		t.Fatal(err)
	}
	var kept []string
	var total int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		info, _ := e.Info()
		kept = append(kept, e.Name())
		total += info.Size()
	}
	if got := fmt.Sprint(kept); got != "[a.bin b.bin small.txt]" || total > budget.Limit {
		t.Errorf("kept %s (%d bytes), want a.bin, b.bin and small.txt within %d", got, total, budget.Limit)
	}
	l := budget.LeftOut
	if l.Count != 2 || l.Bytes != 6<<20 || len(l.Files) != 2 || l.Files[0] != (runner.OutputFile{Path: "c.bin", Bytes: 3 << 20}) {
		t.Errorf("left out %+v, want c.bin and d.bin", l)
	}
}
