package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	natsd "github.com/nats-io/nats-server/v2/server"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// leaky is what no error body may hold (docs/spec.md §3). apptest checks every error answer of
// every suite for the same; this test also checks its own answers directly.
var leaky = regexp.MustCompile(`(?i)natsblob|fsblob|blob:|sql:|pgx|sqlite|nats:|jetstream|_objects|\bb_[0-9A-Z]{26}\b|runtime error|goroutine|/skrip-data|no rows`)

// unsized hides a body's length, so the server streams it (chunked) instead of refusing it
// by its Content-Length.
func unsized(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b)) }

// TestErrorBodiesNameNoInternals walks the error cases a client can cause, on both blob
// stores, and checks that each answer is the JSON of docs/spec.md §3 with a message that names
// no internal object: no blob key, package prefix or driver text.
func TestErrorBodiesNameNoInternals(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesMaxFileBytes = 1 << 20
		cfg.FilesUserQuotaBytes = 3 << 19
		env := apptest.Start(t, cfg)
		alice, aliceU := env.User(t, "alice", "user")
		_, al := env.User(t, "al", "user")
		if _, err := alice.Upload(context.Background(), "one.bin", bytes.NewReader(make([]byte, 1<<20)), client.UploadOptions{Key: "files/one.bin"}); err != nil {
			t.Fatal(err)
		}
		mib := make([]byte, 1<<20)
		broken := "--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nabc"
		cases := []struct {
			name, method, path, token, ctype string
			body                             io.Reader
		}{
			{"bad key", "PUT", "/api/v1/files/files/a%20b", al.Token, "", strings.NewReader("x")},
			{"key outside files/", "PUT", "/api/v1/files/runs/x", al.Token, "", strings.NewReader("x")},
			{"dot segment", "GET", "/api/v1/files/files/a/../b", al.Token, "", nil},
			{"missing file", "GET", "/api/v1/files/files/missing", al.Token, "", nil},
			{"missing file, HEAD", "HEAD", "/api/v1/files/files/missing", al.Token, "", nil},
			{"delete missing", "DELETE", "/api/v1/files/files/missing", al.Token, "", nil},
			{"another's file", "GET", "/api/v1/files/files/one.bin", al.Token, "", nil},
			{"over the file limit, streamed", "PUT", "/api/v1/files/files/big", al.Token, "", unsized(append(mib, 'x'))},
			{"over the file limit, sized", "PUT", "/api/v1/files/files/big", al.Token, "", bytes.NewReader(append(mib, 'x'))},
			{"over the quota, streamed", "PUT", "/api/v1/files/files/more", aliceU.Token, "", unsized(mib)},
			{"multipart, no boundary", "POST", "/api/v1/files", al.Token, "multipart/form-data", strings.NewReader(broken)},
			{"not multipart", "POST", "/api/v1/files", al.Token, "text/plain", strings.NewReader("x")},
			{"bad ttl", "PUT", "/api/v1/files/files/t?ttl=soon", al.Token, "", strings.NewReader("x")},
			{"bad JSON", "POST", "/api/v1/sandboxes", al.Token, "application/json", strings.NewReader(`{"limits":`)},
			{"JSON over 1 MiB", "POST", "/api/v1/tools", al.Token, "application/json", unsized(append([]byte(`{"source":"`), mib...))},
			{"wrong method", "PATCH", "/api/v1/files", al.Token, "", nil},
			{"no route", "GET", "/api/v1/nowhere", al.Token, "", nil},
			{"no token", "GET", "/api/v1/files", "", "", nil},
			{"bad token", "GET", "/api/v1/files", "skr_nope", "", nil},
			{"not an admin", "GET", "/api/v1/users", al.Token, "", nil},
			{"unknown user", "PATCH", "/api/v1/users/u_01ARZ3NDEKTSV4RRFFQ69G5FAV", env.AdminToken, "application/json", strings.NewReader(`{"role":"author"}`)},
			{"unknown tool", "GET", "/api/v1/tools/nope", al.Token, "", nil},
			{"unknown version", "GET", "/api/v1/tool-versions/v_01ARZ3NDEKTSV4RRFFQ69G5FAV", al.Token, "", nil},
			{"unknown run", "GET", "/api/v1/runs/r_01ARZ3NDEKTSV4RRFFQ69G5FAV", al.Token, "", nil},
			{"unknown artifact", "GET", "/api/v1/runs/r_01ARZ3NDEKTSV4RRFFQ69G5FAV/artifacts/output/x", al.Token, "", nil},
			{"unknown session", "GET", "/api/v1/tools/nope/sessions/default", al.Token, "", nil},
			{"unknown sandbox", "GET", "/api/v1/sandboxes/sb_01ARZ3NDEKTSV4RRFFQ69G5FAV", al.Token, "", nil},
			{"stage from a missing sandbox", "POST", "/api/v1/sandboxes/sb_01ARZ3NDEKTSV4RRFFQ69G5FAV/stage", al.Token, "application/json", strings.NewReader(`{"file_key":"files/x","destination":"x"}`)},
			{"run of a missing tool", "POST", "/api/v1/tools/nope/runs", al.Token, "multipart/form-data; boundary=XX", strings.NewReader("--XX--\r\n")},
		}
		// Every JSON route, with a body over its 1 MiB cap.
		for _, route := range []string{"POST /api/v1/users", "PATCH /api/v1/users/admin", "POST /api/v1/users/admin/tokens",
			"PUT /api/v1/users/admin/password", "POST /api/v1/tools", "POST /api/v1/tools/nope/versions", "POST /api/v1/start_action",
			"POST /api/v1/sandboxes", "POST /api/v1/sandboxes/sb_x/exec", "POST /api/v1/sandboxes/sb_x/stage", "POST /api/v1/sandboxes/sb_x/publish"} {
			method, path, _ := strings.Cut(route, " ")
			cases = append(cases, struct {
				name, method, path, token, ctype string
				body                             io.Reader
			}{"over 1 MiB of JSON to " + route, method, path, env.AdminToken, "application/json", unsized(append(append([]byte(`{"x":"`), mib...), mib...))})
		}
		for _, c := range cases {
			a := send(t, env, c.method, c.path, c.token, c.ctype, c.body)
			ct := a.header.Get("Content-Type")
			switch {
			case a.status < 400:
				t.Errorf("%s: %s %s answered %d, want an error", c.name, c.method, c.path, a.status)
			case !strings.HasPrefix(ct, "application/json"):
				t.Errorf("%s: answer %d is %q, want JSON: %q", c.name, a.status, ct, a.raw)
			case c.method != "HEAD" && (a.errCode() == "" || a.errMessage() == ""):
				t.Errorf("%s: answer %d has no code and message: %s", c.name, a.status, a.raw)
			case leaky.MatchString(a.raw):
				t.Errorf("%s: answer %d names an internal object: %s", c.name, a.status, a.raw)
			}
		}
		// A missing asset of the web UI gets its not-found page, not net/http's text.
		if a := send(t, env, "GET", "/static/missing.css", "", "", nil); a.status != 404 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/html") {
			t.Errorf("missing static file: %d %s %q", a.status, a.header.Get("Content-Type"), a.raw)
		}
		// The web UI's admin page on a user that does not exist.
		admin := signedInAdmin(t, env)
		for _, path := range []string{"/admin/users/u_missing/role", "/admin/users/u_missing/tokens"} {
			status, body := admin.post(path, url.Values{"role": {"author"}})
			if status != 404 || leaky.MatchString(body) || !strings.Contains(body, "u_missing") {
				t.Errorf("POST %s: %d, want 404 naming the id and nothing internal:\n%s", path, status, body)
			}
		}
	})
}

// adminPages is a browser signed in as the admin.
type adminPages struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
}

var csrfValue = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func signedInAdmin(t *testing.T, env *apptest.Env) *adminPages {
	t.Helper()
	me, err := env.Admin.Me(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Admin.SetPassword(context.Background(), me.ID, "admin-password-1"); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	p := &adminPages{t: t, base: env.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	// The sign-in form's anti-forgery token, which goes with the cookie its page sets.
	resp, err := p.c.Get(env.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfValue.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field on the sign-in page:\n%s", page)
	}
	p.csrf = string(m[1])
	if status, body := p.post("/signin", url.Values{"name": {"admin"}, "password": {"admin-password-1"}, "next": {"/admin/users"}}); status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d\n%s", status, body)
	}
	resp, err = p.c.Get(env.URL + "/admin/users")
	if err != nil {
		t.Fatal(err)
	}
	page, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	m = csrfValue.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field on the users page:\n%s", page)
	}
	p.csrf = string(m[1])
	return p
}

func (p *adminPages) post(path string, form url.Values) (int, string) {
	p.t.Helper()
	if p.csrf != "" {
		form.Set("csrf", p.csrf)
	}
	resp, err := p.c.PostForm(p.base+path, form)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestNATSDownMidUpload stops the NATS server under a file upload and then serves more
// requests: every answer is JSON, and none names NATS, a bucket or an object.
func TestNATSDownMidUpload(t *testing.T) {
	ns, err := natsd.NewServer(&natsd.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	cfg := apptest.Config(t, apptest.Backend{Name: "sqlite+nats", Blob: "nats"})
	cfg.NATSURL = ns.ClientURL()
	env := apptest.Start(t, cfg)
	_, u := env.User(t, "u", "user")
	if a := send(t, env, "PUT", "/api/v1/files/files/kept", u.Token, "", strings.NewReader("kept")); a.status != 201 {
		t.Fatalf("upload before: %d %s", a.status, a.raw)
	}

	pr, pw := io.Pipe()
	done := make(chan answer, 1)
	go func() { done <- send(t, env, "PUT", "/api/v1/files/files/cut", u.Token, "", pr) }()
	pw.Write(make([]byte, 256<<10))
	ns.Shutdown()
	go func() {
		pw.Write(make([]byte, 256<<10))
		pw.Close()
	}()
	answers := map[string]answer{"upload while NATS stops": <-done}
	answers["download after"] = send(t, env, "GET", "/api/v1/files/files/kept", u.Token, "", nil)
	for name, a := range answers {
		t.Logf("%s: %d %s", name, a.status, a.raw)
		if a.status < 400 {
			continue // the client may have got its answer before NATS went
		}
		if !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") || leaky.MatchString(a.raw) {
			t.Errorf("%s: %d %q", name, a.status, a.raw)
		}
	}
}
