package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunKinds (issue 31): a run's kinds are the values the API shows (docs/spec.md §5,
// kind: initial|action), and the code outside this package names them by constant, not
// as bare strings it would have to keep in step.
func TestRunKinds(t *testing.T) {
	if KindInitial != "initial" || KindAction != "action" {
		t.Fatalf("run kinds are %q and %q; the API shows initial and action", KindInitial, KindAction)
	}
	bare := regexp.MustCompile(`Kind\s*(==|!=|:)\s*"(initial|action)"`)
	// The web's templates too: eq .Kind "action" (no other kind of theirs is named so).
	bareTemplate := regexp.MustCompile(`Kind\)?\s+"(initial|action)"`)
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
			return err
		}
		re := bare
		switch {
		case strings.HasSuffix(path, ".html"):
			re = bareTemplate
		case !strings.HasSuffix(path, ".go"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAll(b, -1) {
			t.Errorf("%s: %s; use store.KindInitial or store.KindAction (in a template, .IsAction)", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
