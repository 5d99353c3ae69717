package runner

import (
	"io/fs"
	"os"
	"path/filepath"
)

// OutputFile is a regular file a run left in /work/output.
type OutputFile struct {
	Path  string // relative to /work/output, with slashes
	Bytes int64  // its apparent size: what reading it yields, holes included
}

// LeftOut is what a run's /work/output held past its cap: files not handed to
// Spec.Collect.
type LeftOut struct {
	Files []OutputFile // the first maxListed, in path order
	Count int
	Bytes int64
}

// maxListed is how many left-out files LeftOut names.
const maxListed = 10

// OutputBudget is the one rule both runners apply to /work/output: offered its regular
// files in path order, it keeps each one whose apparent size fits in what is left of
// Limit and leaves the others out. A sparse file counts by its apparent size, not by the
// blocks it holds: storing it costs every byte reading it yields.
type OutputBudget struct {
	Limit   int64
	used    int64
	LeftOut LeftOut
}

// Keep reports whether the file at path, of size bytes, fits; one that does not is
// recorded as left out.
func (b *OutputBudget) Keep(path string, size int64) bool {
	if size <= b.Limit-b.used {
		b.used += size
		return true
	}
	l := &b.LeftOut
	if len(l.Files) < maxListed {
		l.Files = append(l.Files, OutputFile{Path: path, Bytes: size})
	}
	l.Count++
	l.Bytes += size
	return false
}

// FitDir applies an OutputBudget of limit to the regular files under dir, in path order
// (filepath.WalkDir's lexical order), and removes the ones left out, so that dir holds at
// most limit bytes of regular files however sparse they were.
func FitDir(dir string, limit int64) (LeftOut, error) {
	b := OutputBudget{Limit: limit}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if b.Keep(filepath.ToSlash(rel), info.Size()) {
			return nil
		}
		return os.Remove(p)
	})
	return b.LeftOut, err
}
