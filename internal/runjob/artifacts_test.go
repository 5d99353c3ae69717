package runjob_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runjob"
)

// TestCollectWithoutRoom is a worker's collect: no quota here (the API node applies
// it as it copies the artifacts), so every regular file is kept, and what is not a
// regular file is named in a notice.
func TestCollectWithoutRoom(t *testing.T) {
	ctx := context.Background()
	blobs, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("abc"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "b.csv"), []byte("1,2"), 0o644))
	must(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	arts, notices, err := runjob.Collect(ctx, blobs, "work/runs/r_1/a1/out/", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(arts) != 2 || arts[0].Path != "output/a.txt" || arts[0].Bytes != 3 || arts[1].Path != "output/sub/b.csv" {
		t.Fatalf("artifacts %+v, want output/a.txt and output/sub/b.csv", arts)
	}
	for _, a := range arts {
		if _, err := blobs.Stat(ctx, a.Key); err != nil || a.SHA256 == "" {
			t.Errorf("%s: key %q, checksum %q: %v", a.Path, a.Key, a.SHA256, err)
		}
	}
	want := "Not kept as artifacts: output/link (symbolic links; only regular files are kept)."
	if len(notices) != 1 || notices[0].Kind != contract.KindNotice || notices[0].Message != want {
		t.Fatalf("notices %+v, want %+v", notices, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
