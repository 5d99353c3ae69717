package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

func TestFilesCLI(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "cli", "user")
		dir := t.TempDir()
		data := make([]byte, 700_000)
		rand.Read(data)
		src := filepath.Join(dir, "data.csv")
		os.WriteFile(src, data, 0o644)

		code, out, errOut := run(t, env, u.Token, "", "files", "upload", src, "--json", "--ttl", "7d")
		if code != 0 {
			t.Fatalf("upload: %d %s", code, errOut)
		}
		var fi struct {
			FileKey  string `json:"file_key"`
			Checksum string `json:"checksum"`
		}
		json.Unmarshal([]byte(out), &fi)
		if !strings.HasPrefix(fi.FileKey, "files/f_") || !strings.HasPrefix(fi.Checksum, "sha256:") {
			t.Fatalf("upload --json: %s", out)
		}
		code, out, _ = run(t, env, u.Token, "", "files", "upload", src, "--key", "files/reports/data.csv")
		if code != 0 || !strings.Contains(out, "Uploaded: files/reports/data.csv (700 kB)") {
			t.Fatalf("upload --key: %d %q", code, out)
		}

		code, out, _ = run(t, env, u.Token, "", "files", "list", "--prefix", "files/reports/")
		if code != 0 || !strings.Contains(out, "files/reports/data.csv") || strings.Contains(out, fi.FileKey) {
			t.Fatalf("list --prefix: %d %q", code, out)
		}
		code, out, _ = run(t, env, u.Token, "", "files", "list", "--json")
		var listed []map[string]any
		if code != 0 || listItems(out, &listed) != nil || len(listed) != 2 {
			t.Fatalf("list --json: %d %q", code, out)
		}

		code, out, _ = run(t, env, u.Token, "", "files", "info", fi.FileKey)
		if code != 0 || !strings.Contains(out, fi.Checksum) || !strings.Contains(out, "data.csv") || !strings.Contains(out, "700000 bytes") || strings.Contains(out, "never") {
			t.Fatalf("info: %d %q", code, out)
		}

		// Download: by key to a path, to a directory (named after the upload), and to stdout.
		dst := filepath.Join(dir, "out.csv")
		code, _, errOut = run(t, env, u.Token, "", "files", "download", fi.FileKey, "-o", dst)
		if got, _ := os.ReadFile(dst); code != 0 || !bytes.Equal(got, data) || !strings.Contains(errOut, "verified") {
			t.Fatalf("download -o: %d %q", code, errOut)
		}
		sub := filepath.Join(dir, "sub")
		os.Mkdir(sub, 0o755)
		code, _, _ = run(t, env, u.Token, "", "files", "download", strings.TrimPrefix(fi.FileKey, "files/"), "-o", sub)
		if got, _ := os.ReadFile(filepath.Join(sub, "data.csv")); code != 0 || !bytes.Equal(got, data) {
			t.Fatalf("download into a directory: %d", code)
		}
		code, out, _ = run(t, env, u.Token, "", "files", "download", "files/reports/data.csv", "-o", "-")
		if code != 0 || out != string(data) {
			t.Fatalf("download -o -: %d, %d bytes", code, len(out))
		}

		// Not a terminal, so delete does not ask.
		code, out, _ = run(t, env, u.Token, "", "files", "delete", "files/reports/data.csv")
		if code != 0 || !strings.Contains(out, "Deleted") {
			t.Fatalf("delete: %d %q", code, out)
		}
		code, _, errOut = run(t, env, u.Token, "", "files", "info", "files/reports/data.csv")
		if code == 0 || !strings.Contains(errOut, "file not found: files/reports/data.csv") {
			t.Fatalf("info after delete: %d %q", code, errOut)
		}
		code, _, errOut = run(t, env, u.Token, "", "files", "download", "files/reports/data.csv", "-o", filepath.Join(dir, "gone"))
		if code == 0 || !strings.Contains(errOut, "not found") {
			t.Fatalf("download of a deleted file: %d %q", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
			t.Fatal("a failed download left a file")
		}
		code, out, _ = run(t, env, env.AdminToken, "", "cleanup")
		if code != 0 || !regexp.MustCompile(`expired files +0`).MatchString(out) {
			t.Fatalf("cleanup: %d %q", code, out)
		}
		code, _, errOut = run(t, env, u.Token, "", "cleanup")
		if code == 0 || !strings.Contains(errOut, "admin") {
			t.Fatalf("cleanup as a user: %d %q", code, errOut)
		}
	})
}

// TestDownloadDetectsCorruption flips a byte of the stored object on disk: the download
// must fail loudly and leave no output file.
func TestDownloadDetectsCorruption(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	_, u := env.User(t, "c", "user")
	dir := t.TempDir()
	src := filepath.Join(dir, "in.txt")
	os.WriteFile(src, []byte("the quick brown fox"), 0o644)
	if code, _, errOut := run(t, env, u.Token, "", "files", "upload", src, "--key", "files/fox"); code != 0 {
		t.Fatal(errOut)
	}
	objects, _ := filepath.Glob(filepath.Join(env.Config.DataDir, "blobs", "objects", "*"))
	if len(objects) != 1 {
		t.Fatalf("objects: %v", objects)
	}
	b, _ := os.ReadFile(objects[0])
	b[4] ^= 0x20
	os.WriteFile(objects[0], b, 0o600)

	dst := filepath.Join(dir, "out.txt")
	code, _, errOut := run(t, env, u.Token, "", "files", "download", "files/fox", "-o", dst)
	if code == 0 || !strings.Contains(errOut, "checksum mismatch") {
		t.Fatalf("download of corrupted bytes: %d %q", code, errOut)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatal("a corrupted download left its file")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".skrip-download-*")); len(leftovers) > 0 {
		t.Fatalf("temp files left: %v", leftovers)
	}
}

// TestFilesCLIOwner: keys are per owner; an admin reaches a user's files with --owner, and
// anyone else naming another owner is told there is nothing to see.
func TestFilesCLIOwner(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	_, u := env.User(t, "ursula", "user")
	_, other := env.User(t, "otto", "user")
	dir := t.TempDir()
	src := filepath.Join(dir, "notes.txt")
	os.WriteFile(src, []byte("ursula's notes"), 0o644)
	if code, _, errOut := run(t, env, u.Token, "", "files", "upload", src, "--key", "files/notes.txt"); code != 0 {
		t.Fatal(errOut)
	}
	os.WriteFile(src, []byte("otto's"), 0o644)
	if code, _, errOut := run(t, env, other.Token, "", "files", "upload", src, "--key", "files/notes.txt"); code != 0 {
		t.Fatalf("the same key for another user: %s", errOut)
	}
	if code, out, errOut := run(t, env, env.AdminToken, "", "files", "list", "--owner", "ursula"); code != 0 || !strings.Contains(out, "files/notes.txt") {
		t.Fatalf("admin list --owner: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := run(t, env, env.AdminToken, "", "files", "download", "files/notes.txt", "--owner", u.ID, "-o", "-"); code != 0 || out != "ursula's notes" {
		t.Fatalf("admin download --owner: %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(t, env, other.Token, "", "files", "download", "files/notes.txt", "-o", "-"); code != 0 || out != "otto's" {
		t.Fatalf("otto's own file: %d %q", code, out)
	}
	if code, _, errOut := run(t, env, other.Token, "", "files", "download", "files/notes.txt", "--owner", "ursula", "-o", "-"); code == 0 || !strings.Contains(errOut, "only admins") {
		t.Fatalf("non-admin download --owner: %d %q", code, errOut)
	}
	if code, _, errOut := run(t, env, env.AdminToken, "", "files", "delete", "files/notes.txt", "--owner", "ursula", "--force"); code != 0 {
		t.Fatalf("admin delete --owner: %s", errOut)
	}
	if code, out, _ := run(t, env, other.Token, "", "files", "list"); code != 0 || !strings.Contains(out, "files/notes.txt") {
		t.Fatalf("otto's file after the admin deleted ursula's: %d %q", code, out)
	}
}

// TestUploadFromStdin: `files upload -` reads standard input, under --key or a key the
// server chooses; the bytes come back whole.
func TestUploadFromStdin(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "ulla", "user")
	body := strings.Repeat("rad,ett\n", 50000)
	code, out, errOut := run(t, env, u.Token, body, "files", "upload", "-", "--key", "files/in/data.csv", "--json")
	var fi map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &fi) != nil || fi["file_key"] != "files/in/data.csv" || fi["size_bytes"] != float64(len(body)) || !strings.HasPrefix(fi["content_type"].(string), "text/csv") {
		t.Fatalf("upload - --key: %d %q %q", code, out, errOut)
	}
	code, out, errOut = run(t, env, u.Token, "", "files", "download", "files/in/data.csv", "-o", "-")
	if code != 0 || out != body {
		t.Fatalf("download: %d (%d bytes) %q", code, len(out), errOut)
	}
	code, out, errOut = run(t, env, u.Token, "hej", "files", "upload", "-")
	if code != 0 || !strings.Contains(out, "Uploaded: files/f_") || !strings.Contains(out, "(3 B)") {
		t.Fatalf("upload - without a key: %d %q %q", code, out, errOut)
	}
}
