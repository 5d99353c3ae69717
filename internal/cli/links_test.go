package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestFilesLinkCLI: `skrip files link` prints a URL that downloads the file with no
// token, `links` lists it with its downloads, and `unlink` ends it.
func TestFilesLinkCLI(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "ulla", "user")
	src := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(src, []byte("hej då"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, env, u.Token, "", "files", "upload", src, "--key", "files/note.txt"); code != 0 {
		t.Fatalf("upload: %d %s", code, errOut)
	}
	code, out, errOut := run(t, env, u.Token, "", "files", "link", "files/note.txt", "--ttl", "1h", "--max-downloads", "3")
	url := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(url, env.URL+"/s/skl_") || strings.Contains(url, "\n") || !strings.Contains(errOut, "0 of 3 downloads used") {
		t.Fatalf("files link: %d %q %q", code, out, errOut)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hej då" {
		t.Fatalf("GET %s: %d %q", url, resp.StatusCode, b)
	}
	code, out, _ = run(t, env, u.Token, "", "files", "links", "files/note.txt", "--json")
	var list []client.FileLink
	if code != 0 || listItems(out, &list) != nil || len(list) != 1 || list[0].Downloads != 1 || *list[0].MaxDownloads != 3 {
		t.Fatalf("files links --json: %d %s", code, out)
	}
	if code, out, _ = run(t, env, u.Token, "", "files", "links", "files/note.txt"); code != 0 || !strings.Contains(out, list[0].ID) || !strings.Contains(out, "1 of 3") {
		t.Fatalf("files links: %d %s", code, out)
	}
	if code, out, _ = run(t, env, u.Token, "", "files", "unlink", list[0].ID); code != 0 || !strings.Contains(out, "Revoked: "+list[0].ID) {
		t.Fatalf("files unlink: %d %s", code, out)
	}
	if resp, err := http.Get(url); err != nil || resp.StatusCode != 404 {
		t.Fatalf("GET of a revoked link: %v %v", resp, err)
	}
	// Refusals: no --ttl is a usage error; a ttl over the limit is the server's, named.
	if code, _, errOut = run(t, env, u.Token, "", "files", "link", "files/note.txt"); code != 2 || !strings.Contains(errOut, "ttl") {
		t.Fatalf("files link without --ttl: %d %s", code, errOut)
	}
	if code, _, errOut = run(t, env, u.Token, "", "files", "link", "files/note.txt", "--ttl", "30d"); code == 0 || !strings.Contains(errOut, "7d") {
		t.Fatalf("files link --ttl 30d: %d %s", code, errOut)
	}
	if code, _, errOut = run(t, env, u.Token, "", "files", "link", "files/note.txt", "--ttl", "1h", "--max-downloads", "0"); code != 2 {
		t.Fatalf("files link --max-downloads 0: %d %s", code, errOut)
	}
	if code, _, errOut = run(t, env, u.Token, "", "files", "unlink", list[0].ID); code == 0 || !strings.Contains(errOut, list[0].ID) {
		t.Fatalf("files unlink of a revoked link: %d %s", code, errOut)
	}
}

// TestUploadLinkCommands: files upload-link prints a URL anyone may PUT a file to;
// upload-links lists it with its uses, and upload-unlink ends it.
func TestUploadLinkCommands(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	uc, u := env.User(t, "ulla", "user")
	code, out, errOut := run(t, env, u.Token, "", "files", "upload-link", "files/in/svar.txt", "--ttl", "1h", "--type", "text/plain", "--max-bytes", "1KiB")
	url := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(url, env.URL+"/u/sku_") || !strings.Contains(errOut, "1 upload(s) of at most 1.0 kB, text/plain") {
		t.Fatalf("upload-link: %d %q %q", code, out, errOut)
	}
	req, _ := http.NewRequest("PUT", url, strings.NewReader("mitt svar"))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("PUT to the link: %d", resp.StatusCode)
	}
	if fi, err := uc.FileInfoOf(t.Context(), "files/in/svar.txt"); err != nil || fi.SizeBytes != 9 {
		t.Fatalf("the file: %+v %v", fi, err)
	}
	code, out, _ = run(t, env, u.Token, "", "files", "upload-links", "--json")
	var list []map[string]any
	if code != 0 || listItems(out, &list) != nil || len(list) != 1 || list[0]["used"] != float64(1) || list[0]["file_key"] != "files/in/svar.txt" {
		t.Fatalf("upload-links --json: %d %s", code, out)
	}
	id := list[0]["id"].(string)
	if code, out, _ := run(t, env, u.Token, "", "files", "upload-unlink", id); code != 0 || out != "Revoked: "+id+"\n" {
		t.Fatalf("upload-unlink: %d %q", code, out)
	}
	if code, out, _ := run(t, env, u.Token, "", "files", "upload-links"); code != 0 || strings.Contains(out, id) {
		t.Fatalf("upload-links after the revoke: %d %q", code, out)
	}
	if code, _, errOut := run(t, env, u.Token, "", "files", "upload-link", "files/x.txt", "--ttl", "1h", "--max-bytes", "lots"); code != 2 || !strings.Contains(errOut, "--max-bytes") {
		t.Fatalf("a bad --max-bytes: %d %q", code, errOut)
	}
}
