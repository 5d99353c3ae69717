package api_test

import (
	"encoding/json"
	"mime"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestDownloadHeaders fetches a user's HTML through every route that sends a user's
// bytes: the files API (GET and HEAD), a share link, a run's artifact and a sandbox file.
// Each says nosniff and Content-Security-Policy: sandbox, so that no browser runs the
// file's script on the app's origin, and names the file twice: an ASCII filename that
// curl -OJ saves under, and filename* with the whole name.
func TestDownloadHeaders(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "ulla", "user")
	page := []byte(`<script>fetch("/api/v1/me")</script>`)
	name := `Sida "ö".html`
	if a := upload(t, env, u.Token, [][2]string{{"key", "files/page.html"}, {"content_type", "text/html"}}, name, page); a.status != 201 {
		t.Fatalf("upload: %d %s", a.status, a.raw)
	}
	l := makeLink(t, env, u.Token, "files/page.html", `{"ttl": "1h"}`)
	if l.status != 201 {
		t.Fatalf("link: %d %s", l.status, l.raw)
	}
	linkPath := strings.TrimPrefix(l.body["url"].(string), env.URL)

	publish(t, env, "echo", echoTool)
	run := runUpload(t, env, u.Token, "echo", []string{"a.csv"}, []string{"x"}, `{}`, "")
	var r client.Run
	json.Unmarshal([]byte(run.raw), &r)
	if run.status != 201 || r.Status != "succeeded" {
		t.Fatalf("run: %d %s", run.status, run.raw)
	}

	box := newSandbox(t, env, u.Token, `{}`)
	if a := send(t, env, "PUT", "/api/v1/sandboxes/"+box+"/fs/"+url.PathEscape(name), u.Token, "text/html", strings.NewReader(string(page))); a.status != 201 {
		t.Fatalf("sandbox write: %d %s", a.status, a.raw)
	}

	for _, tc := range []struct {
		route, method, path, token, name string
	}{
		{"files API", "GET", "/api/v1/files/files/page.html", u.Token, name},
		{"files API", "HEAD", "/api/v1/files/files/page.html", u.Token, name},
		{"share link", "GET", linkPath, "", name},
		{"share link", "HEAD", linkPath, "", name},
		{"artifact", "GET", "/api/v1/runs/" + r.RunID + "/artifacts/output/sub%20dir/Rapport%20%C3%B6.md", u.Token, "Rapport ö.md"},
		{"sandbox file", "GET", "/api/v1/sandboxes/" + box + "/fs/" + url.PathEscape(name), u.Token, name},
	} {
		a := send(t, env, tc.method, tc.path, tc.token, "", nil)
		if a.status != 200 {
			t.Errorf("%s %s (%s): %d %s", tc.method, tc.path, tc.route, a.status, a.raw)
			continue
		}
		h := a.header
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Security-Policy") != "sandbox" {
			t.Errorf("%s %s (%s): X-Content-Type-Options %q, Content-Security-Policy %q; want nosniff and sandbox",
				tc.method, tc.path, tc.route, h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"))
		}
		cd := h.Get("Content-Disposition")
		_, params, err := mime.ParseMediaType(cd)
		if err != nil || params["filename"] != tc.name || !strings.HasPrefix(cd, `attachment; filename="`) || !strings.Contains(cd, "; filename*=UTF-8''") {
			t.Errorf("%s %s (%s): Content-Disposition %q names %q (%v), want both filename and filename* of %q",
				tc.method, tc.path, tc.route, cd, params["filename"], err, tc.name)
		}
		// A client that reads only filename (curl -OJ) gets the name in ASCII.
		ascii, _, _ := strings.Cut(cd, "; filename*=")
		if _, params, err := mime.ParseMediaType(ascii); err != nil || params["filename"] != asciiName(tc.name) {
			t.Errorf("%s %s (%s): the ASCII filename of %q is %q (%v), want %q", tc.method, tc.path, tc.route, cd, params["filename"], err, asciiName(tc.name))
		}
	}
}

// asciiName is name as the ASCII filename parameter gives it: each character outside
// printable ASCII replaced by _.
func asciiName(name string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return '_'
		}
		return r
	}, name)
}

// TestCurlSavesUnderName downloads a share link with curl -OJ, which reads only the ASCII
// filename of Content-Disposition: it must save the file under its name, not the link's
// token.
func TestCurlSavesUnderName(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not available: apt-get install curl")
	}
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "betty", "user")
	if a := send(t, env, "PUT", "/api/v1/files/files/betyg.pdf?filename="+url.QueryEscape("Betyg åk 9.pdf"), u.Token, "application/pdf",
		strings.NewReader("%PDF-1.4 betyg")); a.status != 201 {
		t.Fatalf("upload: %d %s", a.status, a.raw)
	}
	l := makeLink(t, env, u.Token, "files/betyg.pdf", `{"ttl": "1h"}`)
	if l.status != 201 {
		t.Fatalf("link: %d %s", l.status, l.raw)
	}
	dir := t.TempDir()
	cmd := exec.Command(curl, "-sS", "-f", "-O", "-J", l.body["url"].(string))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("curl -OJ: %v\n%s", err, out)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "Betyg _k 9.pdf" {
		t.Fatalf("curl -OJ saved %q, want [\"Betyg _k 9.pdf\"]", names)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, names[0])); string(b) != "%PDF-1.4 betyg" {
		t.Fatalf("curl -OJ saved %q", b)
	}
}
