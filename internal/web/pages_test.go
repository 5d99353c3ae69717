package web_test

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	apiwire "github.com/skrip-dev/skrip/internal/wire"
)

// browserless is a cookie-keeping HTTP client that does not follow redirects, so tests
// see each answer the server gives a browser.
type browserless struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowserless(t *testing.T, base string) *browserless {
	jar, _ := cookiejar.New(nil)
	return &browserless{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browserless) do(method, path string, form url.Values, header http.Header, raw ...io.Reader) (int, http.Header, string) {
	b.t.Helper()
	var body io.Reader
	if len(raw) > 0 {
		body = raw[0]
	}
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(out)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signInToken opens the sign-in page and returns its form's anti-forgery token, which
// goes with the sign-in cookie the page sets ("" when signed in: the page redirects).
func (b *browserless) signInToken() string {
	b.t.Helper()
	status, _, page := b.do("GET", "/signin", nil, nil)
	if status == http.StatusSeeOther {
		return ""
	}
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no csrf field on the sign-in page:\n%s", page)
	}
	return m[1]
}

// signIn signs in, as a browser does (with the form's token, or when signed in already,
// with its Origin), and returns the page's anti-forgery token.
func (b *browserless) signIn(name, pw string) string {
	b.t.Helper()
	status, h, body := b.do("POST", "/signin", url.Values{"name": {name}, "password": {pw}, "next": {"/files"}, "csrf": {b.signInToken()}},
		http.Header{"Origin": {b.base}})
	if status != http.StatusSeeOther || h.Get("Location") != "/files" {
		b.t.Fatalf("sign-in answered %d to %q:\n%s", status, h.Get("Location"), body)
	}
	_, _, page := b.do("GET", "/files", nil, nil)
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no csrf field on the files page:\n%s", page)
	}
	return m[1]
}

func TestPagesAndCookies(t *testing.T) {
	apptest.Each(t, func(t *testing.T, be apptest.Backend) {
		env := apptest.New(t, be)
		ctx := context.Background()
		if _, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password"); err != nil {
			t.Fatal(err)
		}
		b := newBrowserless(t, env.URL)

		status, h, _ := b.do("GET", "/runs", nil, nil)
		if status != http.StatusSeeOther || h.Get("Location") != "/signin?next=%2Fruns" {
			t.Fatalf("signed out, /runs answered %d to %q; want the sign-in page", status, h.Get("Location"))
		}
		status, _, body := b.do("POST", "/signin", url.Values{"name": {"ada"}, "password": {"wrong password"}, "csrf": {b.signInToken()}}, nil)
		if status != http.StatusUnauthorized || !strings.Contains(body, "stämmer inte") {
			t.Fatalf("a wrong password answered %d:\n%s", status, body)
		}
		status, h, _ = b.do("POST", "/signin", url.Values{"name": {"ada"}, "password": {"a good password"}, "next": {"//evil.example/"}, "csrf": {b.signInToken()}}, nil)
		if status != http.StatusSeeOther || h.Get("Location") != "/" {
			t.Fatalf("sign-in with an off-site next answered %d to %q; want /", status, h.Get("Location"))
		}
		cookie := h.Get("Set-Cookie")
		for _, want := range []string{"skrip_session=", "HttpOnly", "SameSite=Lax", "Path=/"} {
			if !strings.Contains(cookie, want) {
				t.Fatalf("the session cookie %q lacks %s", cookie, want)
			}
		}
		csrf := b.signIn("ada", "a good password")

		status, h, _ = b.do("GET", "/", nil, nil)
		if status != http.StatusOK || !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") || h.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("the catalogue answered %d with CSP %q", status, h.Get("Content-Security-Policy"))
		}

		// A form without the token, or with another session's, is refused and changes nothing.
		if _, err := env.Admin.CreateUser(ctx, "bob", "user", "another password"); err != nil {
			t.Fatal(err)
		}
		other := newBrowserless(t, env.URL)
		otherCSRF := other.signIn("bob", "another password")
		for _, token := range []string{"", otherCSRF} {
			status, _, body = b.do("POST", "/signout", url.Values{"csrf": {token}}, nil)
			if status != http.StatusForbidden || !strings.Contains(body, "Formuläret är för gammalt eller kommer från en annan webbplats.") {
				t.Fatalf("sign-out with csrf %q answered %d:\n%s", token, status, body)
			}
		}

		// A multipart form is no way around the token: not to a form route, and not to a
		// run upload, which reads the body before it checks (and then keeps nothing).
		if _, _, err := env.Admin.CreateTool(ctx, "probe", "Probe", "", "def run_tool(i, o):\n    return 'hej'\n", true); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/signout", "/tools/probe/runs"} {
			var mp bytes.Buffer
			w := multipart.NewWriter(&mp)
			fw, _ := w.CreateFormFile("files", "a.txt")
			fw.Write([]byte("hej"))
			w.Close()
			status, _, body = b.do("POST", path, nil, http.Header{"Content-Type": {w.FormDataContentType()}}, &mp)
			if status != http.StatusForbidden {
				t.Fatalf("a multipart POST to %s without the token answered %d:\n%s", path, status, body)
			}
		}
		if status, _, _ = b.do("GET", "/files", nil, nil); status != http.StatusOK {
			t.Fatalf("the multipart POST to /signout signed the user out (%d)", status)
		}
		if status, _, body = b.do("GET", "/runs", nil, nil); strings.Contains(body, "/runs/r_") {
			t.Fatalf("the refused upload created a run (%d):\n%s", status, body)
		}

		// The API takes the cookie, but a change needs the page's token in X-CSRF-Token.
		put := func(hdr http.Header) int {
			req, _ := http.NewRequest("PUT", env.URL+"/api/v1/files/files/notes.txt", strings.NewReader("hej"))
			for k, v := range hdr {
				req.Header[k] = v
			}
			resp, err := b.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode >= 400 && resp.StatusCode != 401 && resp.StatusCode != 403 {
				b, _ := io.ReadAll(resp.Body)
				t.Logf("PUT answered %d: %s", resp.StatusCode, b)
			}
			return resp.StatusCode
		}
		if got := put(nil); got != http.StatusForbidden {
			t.Fatalf("a cookie PUT without X-CSRF-Token answered %d; want 403", got)
		}
		if got := put(http.Header{"X-Csrf-Token": {otherCSRF}}); got != http.StatusForbidden {
			t.Fatalf("a cookie PUT with another session's token answered %d; want 403", got)
		}
		if got := put(http.Header{"X-Csrf-Token": {csrf}}); got != http.StatusCreated && got != http.StatusOK {
			t.Fatalf("a cookie PUT with the page's token answered %d", got)
		}
		if status, _, body = b.do("GET", "/files", nil, nil); !strings.Contains(body, "files/notes.txt") || !strings.Contains(body, "3 byte") {
			t.Fatalf("the files page (%d) does not list notes.txt with its size:\n%s", status, body)
		}

		// Signing out ends the session on the server, not only in this browser.
		status, _, _ = b.do("POST", "/signout", url.Values{"csrf": {csrf}}, nil)
		if status != http.StatusSeeOther {
			t.Fatalf("sign-out answered %d", status)
		}
		if got := put(http.Header{"X-Csrf-Token": {csrf}}); got != http.StatusUnauthorized {
			t.Fatalf("after sign-out the API answered %d; want 401", got)
		}

		// Only admins see the users page.
		status, _, _ = other.do("GET", "/admin/users", nil, nil)
		if status != http.StatusForbidden {
			t.Fatalf("a user opening /admin/users got %d; want 403", status)
		}
		status, _, body = other.do("GET", "/no/such/page", nil, http.Header{"Accept": {"text/html,*/*"}})
		if status != http.StatusNotFound || !strings.Contains(body, "Det finns ingen sida här") {
			t.Fatalf("an unknown page answered %d:\n%s", status, body)
		}
	})
}

// TestFilesPageOwner: an admin sees a user's staged files with ?owner=, with links that
// reach those files; anyone else gets 404 for another user's files.
func TestFilesPageOwner(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	for _, u := range [][2]string{{"root", "admin"}, {"ada", "user"}, {"bob", "user"}} {
		if _, err := env.Admin.CreateUser(ctx, u[0], u[1], "a good password"); err != nil {
			t.Fatal(err)
		}
	}
	f, err := env.Admin.WithFileOwner("ada").Upload(ctx, "notes.txt", strings.NewReader("ada's notes"), client.UploadOptions{Key: "files/notes.txt"})
	if err != nil {
		t.Fatal(err)
	}
	users, err := env.Admin.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adaID := ""
	for _, u := range users {
		if u.Name == "ada" {
			adaID = u.ID
		}
	}
	if f.FileKey != "files/notes.txt" || adaID == "" {
		t.Fatalf("upload for ada: %+v; ada is %q", f, adaID)
	}
	root := newBrowserless(t, env.URL)
	root.signIn("root", "a good password")
	if _, _, body := root.do("GET", "/files", nil, nil); strings.Contains(body, "files/notes.txt") {
		t.Fatalf("the admin's own files page lists ada's file:\n%s", body)
	}
	status, _, body := root.do("GET", "/files?owner=ada", nil, nil)
	link := `href="/api/v1/files/files/notes.txt?owner=` + adaID + `"`
	if status != http.StatusOK || !strings.Contains(body, link) || !strings.Contains(body, "Filarkivet för ada") || !strings.Contains(body, `data-owner="`+adaID+`"`) {
		t.Fatalf("the admin's view of ada's files (%d) lacks %s:\n%s", status, link, body)
	}
	if status, _, got := root.do("GET", "/api/v1/files/files/notes.txt?owner="+adaID, nil, nil); status != http.StatusOK || got != "ada's notes" {
		t.Fatalf("the link answered %d %q", status, got)
	}
	bob := newBrowserless(t, env.URL)
	bob.signIn("bob", "a good password")
	if status, _, body := bob.do("GET", "/files?owner=ada", nil, http.Header{"Accept": {"text/html"}}); status != http.StatusNotFound {
		t.Fatalf("a user's view of ada's files answered %d:\n%s", status, body)
	}
}

// TestFilesPageCursor: the files page pages with the API's cursor (one encoding for
// both), and a cursor that no listing gave out is a 400 page that says so, in the
// API's terms too, rather than the first page passed off as the one asked for.
func TestFilesPageCursor(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	c := env.Admin.WithFileOwner("ada")
	for _, k := range []string{"files/a.txt", "files/b.txt", "files/c.txt"} {
		if _, err := c.Upload(ctx, "x.txt", strings.NewReader(k), client.UploadOptions{Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	first, next, err := c.Files(ctx, "", "", 1)
	if err != nil || len(first) != 1 || first[0].FileKey != "files/a.txt" || next == "" {
		t.Fatalf("the API's first page: %+v, next %q, %v", first, next, err)
	}
	ada := newBrowserless(t, env.URL)
	ada.signIn("ada", "a good password")
	status, _, body := ada.do("GET", "/files?cursor="+url.QueryEscape(next), nil, nil)
	if status != http.StatusOK || strings.Contains(body, "files/a.txt") || !strings.Contains(body, "files/b.txt") || !strings.Contains(body, "files/c.txt") {
		t.Fatalf("the files page from the API's cursor (%d) is not the page after files/a.txt:\n%s", status, body)
	}
	for _, bad := range []string{"garbage", "!!!", "ZmlsZXMvLi4veA"} { // the last is files/../x
		status, _, body := ada.do("GET", "/files?cursor="+url.QueryEscape(bad), nil, http.Header{"Accept-Language": {"en"}})
		if status != http.StatusBadRequest || !strings.Contains(body, "the link&#39;s cursor is not one the server gave out") {
			t.Errorf("the files page with cursor %q answered %d:\n%s", bad, status, body)
		}
		req, _ := http.NewRequest("GET", env.URL+"/api/v1/files?cursor="+url.QueryEscape(bad), nil)
		req.Header.Set("Authorization", "Bearer "+env.AdminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"reason":"file_cursor"`) {
			t.Errorf("the API with cursor %q answered %d %s", bad, resp.StatusCode, raw)
		}
	}
}

// TestFilesPageVersions: with SKRIP_FILES_VERSIONS=1, the files page shows a file's
// earlier version with a link that downloads its bytes, for its owner and, with
// ?owner=, for an admin; a file without one shows none.
func TestFilesPageVersions(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.FilesVersions = 1
	env := apptest.Start(t, cfg)
	ctx := context.Background()
	ada, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password")
	if err != nil {
		t.Fatal(err)
	}
	c := env.Admin.WithFileOwner("ada")
	for _, text := range []string{"old notes", "new notes"} {
		if _, err := c.Upload(ctx, "notes.txt", strings.NewReader(text), client.UploadOptions{Key: "files/notes.txt"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Upload(ctx, "single.txt", strings.NewReader("one"), client.UploadOptions{Key: "files/single.txt"}); err != nil {
		t.Fatal(err)
	}
	vs, err := c.FileVersions(ctx, "files/notes.txt")
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions: %v, %v", vs, err)
	}
	b := newBrowserless(t, env.URL)
	b.signIn("ada", "a good password")
	_, _, body := b.do("GET", "/files", nil, nil)
	link := `href="/api/v1/files/files/notes.txt?version=` + vs[1].VersionID + `"`
	if !strings.Contains(body, "1 tidigare version") || !strings.Contains(body, link) || strings.Count(body, `class="versions"`) != 1 {
		t.Fatalf("the files page lacks the one earlier version and its link %s:\n%s", link, body)
	}
	if status, _, got := b.do("GET", "/api/v1/files/files/notes.txt?version="+vs[1].VersionID, nil, nil); status != http.StatusOK || got != "old notes" {
		t.Fatalf("the version's link answered %d %q", status, got)
	}
	root := newBrowserless(t, env.URL)
	if _, err := env.Admin.CreateUser(ctx, "root", "admin", "a good password"); err != nil {
		t.Fatal(err)
	}
	root.signIn("root", "a good password")
	_, _, body = root.do("GET", "/files?owner=ada", nil, nil)
	owned := `href="/api/v1/files/files/notes.txt?owner=` + ada.ID + `&amp;version=` + vs[1].VersionID + `"`
	if !strings.Contains(body, owned) {
		t.Fatalf("the admin's view lacks %s:\n%s", owned, body)
	}
}

// TestAccountPage: the account page, linked from the user's name atop every page, shows what the user
// holds by kind beside their quota, in readable sizes, with the numbers GET /api/v1/me
// gives (one service call answers both): a live file, a kept version and the bytes of a
// deleted file not yet freed, each in its row, their total and what is left.
func TestAccountPage(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.FilesVersions = 1
	cfg.FilesUserQuotaBytes = 10_000_000
	cfg.FilesMaxFileBytes = 3_000_000
	env := apptest.Start(t, cfg)
	ctx := context.Background()
	ada, err := env.Admin.CreateUser(ctx, "ada", "user", "a good password")
	if err != nil {
		t.Fatal(err)
	}
	c := env.Client(t, ada.Token)
	for _, text := range []string{"old notes", "new notes"} {
		if _, err := c.Upload(ctx, "notes.txt", strings.NewReader(text), client.UploadOptions{Key: "files/notes.txt"}); err != nil {
			t.Fatal(err)
		}
	}
	for key, n := range map[string]int{"files/report.csv": 2_345_678, "files/old.bin": 1_500_000} {
		if _, err := c.Upload(ctx, "f", strings.NewReader(strings.Repeat("x", n)), client.UploadOptions{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteFile(ctx, "files/old.bin"); err != nil {
		t.Fatal(err)
	}

	var me apiwire.Me
	if err := c.Do(ctx, http.MethodGet, "/api/v1/me", nil, &me); err != nil {
		t.Fatal(err)
	}
	want := apiwire.Usage{Files: 2_345_687, Versions: 9, Retained: 1_500_000, Total: 3_845_696, Quota: 10_000_000}
	if me.Usage != want {
		t.Fatalf("GET /api/v1/me: %+v; want %+v", me.Usage, want)
	}

	b := newBrowserless(t, env.URL)
	b.signIn("ada", "a good password")
	if _, _, body := b.do("GET", "/files", nil, nil); !strings.Contains(body, `<a class="who" href="/account" >ada<span class="visually-hidden">, Ditt konto och din lagring</span></a>`) {
		t.Fatalf("the header has no link to the account page:\n%s", body)
	}
	status, _, body := b.do("GET", "/account", nil, nil)
	if status != http.StatusOK {
		t.Fatalf("the account page answered %d:\n%s", status, body)
	}
	for _, row := range []string{
		`Du använder 3,8 MB av din kvot på 10 MB.`,
		`<th scope="row">Filer i filarkivet</th><td class="nowrap" data-bytes="2345687">2,3 MB</td>`,
		`<th scope="row">Tidigare versioner av filerna</th><td class="nowrap" data-bytes="9">9 byte</td>`,
		`<th scope="row">Uppladdningar som inte är klara</th><td class="nowrap" data-bytes="0">0 byte</td>`,
		`<th scope="row">Körningars filer, resultat och loggar</th><td class="nowrap" data-bytes="0">0 byte</td>`,
		`<th scope="row">Verktygssessioners filer</th><td class="nowrap" data-bytes="0">0 byte</td>`,
		`<th scope="row">Ersatta och borttagna filer som inte har frigjorts än</th><td class="nowrap" data-bytes="1500000">1,5 MB</td>`,
		`<th scope="row">Totalt</th><td class="nowrap" data-bytes="3845696">3,8 MB</td>`,
		`<th scope="row">Kvar av kvoten</th><td class="nowrap" data-bytes="6154304">6,2 MB</td>`,
		`<a class="who" href="/account" aria-current="page">ada<span`,
		`Frigör plats: <a href="/files">ta bort filer i filarkivet</a>`,
	} {
		if !strings.Contains(body, row) {
			t.Fatalf("the account page lacks %s:\n%s", row, body)
		}
	}
	if status, _, _ := b.do("GET", "/lang/en?back=/account", nil, nil); status != http.StatusSeeOther {
		t.Fatalf("switching to English answered %d", status)
	}
	_, _, body = b.do("GET", "/account", nil, nil)
	if !strings.Contains(body, "You use 3.8 MB of your 10 MB quota.") || !strings.Contains(body, `Files in the staging area</th><td class="nowrap" data-bytes="2345687">2.3 MB</td>`) {
		t.Fatalf("the account page in English lacks the numbers:\n%s", body)
	}
}
