package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestFilesVersionsCLI: with SKRIP_FILES_VERSIONS=1, `skrip files versions` lists the
// current version and the one kept, `download --version` fetches the kept one (checksum
// verified), an unknown id fails naming it, and `skrip cleanup` prints the trim count.
func TestFilesVersionsCLI(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.FilesVersions = 1
	env := apptest.Start(t, cfg)
	_, u := env.User(t, "vilma", "user")
	dir := t.TempDir()
	src := filepath.Join(dir, "note.txt")
	for _, text := range []string{"first", "second"} {
		if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, errOut := run(t, env, u.Token, "", "files", "upload", src, "--key", "files/note.txt"); code != 0 {
			t.Fatalf("upload: %d %s", code, errOut)
		}
	}
	code, out, errOut := run(t, env, u.Token, "", "files", "versions", "files/note.txt", "--json")
	var list []client.FileVersion
	if code != 0 || listItems(out, &list) != nil || len(list) != 2 || !list[0].Current || list[1].Current || list[1].ReplacedAt == nil {
		t.Fatalf("files versions --json: %d %s %s", code, out, errOut)
	}
	code, out, _ = run(t, env, u.Token, "", "files", "versions", "files/note.txt")
	if code != 0 || !strings.Contains(out, list[0].VersionID) || !strings.Contains(out, list[1].VersionID) || !strings.Contains(out, "current") {
		t.Fatalf("files versions: %d %s", code, out)
	}

	dst := filepath.Join(dir, "old.txt")
	code, _, errOut = run(t, env, u.Token, "", "files", "download", "files/note.txt", "--version", list[1].VersionID, "-o", dst)
	if got, _ := os.ReadFile(dst); code != 0 || string(got) != "first" || !strings.Contains(errOut, "verified") {
		t.Fatalf("download --version: %d %q %s", code, got, errOut)
	}
	code, out, _ = run(t, env, u.Token, "", "files", "download", "files/note.txt", "-o", "-")
	if code != 0 || out != "second" {
		t.Fatalf("download of the current version: %d %q", code, out)
	}
	code, _, errOut = run(t, env, u.Token, "", "files", "download", "files/note.txt", "--version", "v_nope", "-o", "-")
	if code == 0 || !strings.Contains(errOut, "v_nope") {
		t.Fatalf("download of an unknown version: %d %s", code, errOut)
	}
	code, out, _ = run(t, env, env.AdminToken, "", "cleanup")
	if code != 0 || !regexp.MustCompile(`file versions trimmed +0`).MatchString(out) {
		t.Fatalf("cleanup: %d %q", code, out)
	}
}
