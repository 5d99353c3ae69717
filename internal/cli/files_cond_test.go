package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestFilesCLIConditions: files upload --if-match/--if-none-match and files delete
// --if-match send the conditions (a checksum as files info prints it is taken for the
// ETag), a refused one exits 1 with the server's sentence and changes nothing, and a
// conditional upload of a large file goes in one request, since a resumable one takes
// no condition.
func TestFilesCLIConditions(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "cond", "user")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	v1, v2 := write("v1.txt", "one"), write("v2.txt", "two")
	const key = "files/c.txt"
	checksum := func() string {
		code, out, errOut := run(t, env, u.Token, "", "files", "info", key, "--json")
		var fi struct{ Checksum string }
		if code != 0 || json.Unmarshal([]byte(out), &fi) != nil {
			t.Fatalf("info: %d %s %s", code, out, errOut)
		}
		return fi.Checksum
	}
	if code, _, errOut := run(t, env, u.Token, "", "files", "upload", v1, "--key", key, "--if-none-match", "*"); code != 0 {
		t.Fatalf("create-only upload: %d %s", code, errOut)
	}
	first := checksum()
	code, _, errOut := run(t, env, u.Token, "", "files", "upload", v2, "--key", key, "--if-none-match", "*")
	if code != 1 || !strings.Contains(errOut, "If-None-Match") || checksum() != first {
		t.Fatalf("create-only upload over a file: %d %q", code, errOut)
	}
	code, _, errOut = run(t, env, u.Token, "", "files", "upload", v2, "--key", key, "--if-match", "sha256:00")
	if code != 1 || !strings.Contains(errOut, "If-Match") || checksum() != first {
		t.Fatalf("upload with a wrong --if-match: %d %q", code, errOut)
	}
	// A file over the resumable threshold still goes, in one request.
	if code, _, errOut := run(t, env, u.Token, "", "files", "upload", v2, "--key", key, "--if-match", first, "--resumable-threshold", "0"); code != 0 {
		t.Fatalf("upload with the right --if-match: %d %s", code, errOut)
	}
	second := checksum()
	if second == first {
		t.Fatal("the conditional upload changed nothing")
	}
	code, _, errOut = run(t, env, u.Token, "", "files", "delete", key, "--if-match", first)
	if code != 1 || !strings.Contains(errOut, "If-Match") || checksum() != second {
		t.Fatalf("delete with a stale --if-match: %d %q", code, errOut)
	}
	if code, out, errOut := run(t, env, u.Token, "", "files", "delete", key, "--if-match", second); code != 0 || !strings.Contains(out, "Deleted") {
		t.Fatalf("delete with the right --if-match: %d %s %s", code, out, errOut)
	}
}
