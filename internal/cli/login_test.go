package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// webUser is a browser session on env's web UI: a cookie jar, no redirects followed.
type webUser struct {
	t    *testing.T
	base string
	c    *http.Client
}

var csrfInPage = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func newWebUser(t *testing.T, base string) *webUser {
	jar, _ := cookiejar.New(nil)
	return &webUser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *webUser) do(method, path string, form url.Values) (int, http.Header, string) {
	b.t.Helper()
	var body io.Reader
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
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(out)
}

// csrf is the anti-forgery token of page.
func (b *webUser) csrf(page string) string {
	b.t.Helper()
	m := csrfInPage.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no csrf field in the page:\n%s", page)
	}
	return m[1]
}

// approve opens the page link, which must send it to sign in first when it is not signed
// in and come back after, and presses the button decision (approve or deny).
func (b *webUser) decide(link, name, password, decision string) string {
	b.t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		b.t.Fatal(err)
	}
	page := u.RequestURI()
	status, h, body := b.do("GET", page, nil)
	if status == http.StatusSeeOther {
		loc := h.Get("Location")
		if want := "/signin?next=" + url.QueryEscape(page); loc != want {
			b.t.Fatalf("the login page sends a signed-out browser to %q, want %q", loc, want)
		}
		_, _, signin := b.do("GET", loc, nil)
		status, h, body = b.do("POST", "/signin", url.Values{"name": {name}, "password": {password}, "next": {page}, "csrf": {b.csrf(signin)}})
		if status != http.StatusSeeOther || h.Get("Location") != page {
			b.t.Fatalf("sign-in answered %d to %q, want a way back to %s:\n%s", status, h.Get("Location"), page, body)
		}
		status, _, body = b.do("GET", page, nil)
	}
	code := u.Query().Get("code")
	host, _ := os.Hostname()
	if status != http.StatusOK || !strings.Contains(body, code) || !strings.Contains(body, "Godkänn") || !strings.Contains(body, "Neka") || !strings.Contains(body, host) {
		b.t.Fatalf("the login page answered %d; want it to show the code %s, the machine %s and the buttons:\n%s", status, code, host, body)
	}
	status, _, body = b.do("POST", "/cli/login", url.Values{"code": {code}, "decision": {decision}, "csrf": {b.csrf(body)}})
	if status != http.StatusOK {
		b.t.Fatalf("pressing %s answered %d:\n%s", decision, status, body)
	}
	return body
}

// syncBuffer is a buffer one goroutine writes while another reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loginRun is a `skrip login` running in the background.
type loginRun struct {
	link     string
	out, err *syncBuffer
	done     chan int
}

var verificationLink = regexp.MustCompile(`http://\S+/cli/login\?code=\S+`)

// startLogin runs skrip with args (a login) and vars as its environment, and waits for it
// to print the page to open.
func startLogin(t *testing.T, vars map[string]string, args ...string) *loginRun {
	t.Helper()
	l := &loginRun{out: &syncBuffer{}, err: &syncBuffer{}, done: make(chan int, 1)}
	go func() {
		l.done <- Main(context.Background(), args, strings.NewReader(""), l.out, l.err, func(k string) string { return vars[k] })
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := verificationLink.FindString(l.err.String()); m != "" {
			l.link = m
			return l
		}
		select {
		case code := <-l.done:
			t.Fatalf("skrip login ended with %d before printing the page: %q %q", code, l.out.String(), l.err.String())
		default:
		}
	}
	t.Fatalf("skrip login printed no page to open: %q", l.err.String())
	return nil
}

func (l *loginRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-l.done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("skrip login did not end: %q %q", l.out.String(), l.err.String())
		return -1
	}
}

// runWith runs skrip in-process with vars as its environment.
func runWith(vars map[string]string, stdin string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errOut, func(k string) string { return vars[k] })
	return code, out.String(), errOut.String()
}

// TestLogin: skrip login, approved by a signed-in browser, saves a context whose token
// works; contexts are listed and chosen; the environment and --token-file override the
// context; a denied login saves nothing.
func TestLogin(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "lotta", "user", "a good password"); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	vars := map[string]string{"HOME": home}
	u, _ := url.Parse(env.URL)

	// The browser opener is $BROWSER, given the page's address.
	opened := filepath.Join(t.TempDir(), "opened")
	browser := filepath.Join(t.TempDir(), "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\necho \"$1\" > "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	vars["BROWSER"] = browser
	l := startLogin(t, vars, "login", env.URL)
	if !regexp.MustCompile(`Your one-time code: [A-Z]{4}-[A-Z]{4}\n`).MatchString(l.err.String()) {
		t.Fatalf("skrip login shows no code: %q", l.err.String())
	}
	web := newWebUser(t, env.URL)
	if page := web.decide(l.link, "lotta", "a good password", "approve"); !strings.Contains(page, "Klart!") {
		t.Fatalf("the approval page says:\n%s", page)
	}
	if code := l.wait(t); code != 0 || !strings.Contains(l.out.String(), "Logged in to "+env.URL+" as lotta") {
		t.Fatalf("skrip login: %d %q %q", code, l.out.String(), l.err.String())
	}
	if b, _ := os.ReadFile(opened); strings.TrimSpace(string(b)) != l.link {
		t.Errorf("$BROWSER was given %q, want %q", b, l.link)
	}
	delete(vars, "BROWSER")

	// The config file: 0600 in a 0700 directory, the context named after the host and
	// current, with the token.
	path := filepath.Join(home, ".config", "skrip", "config.yaml")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	di, _ := os.Stat(filepath.Dir(path))
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("config file mode %v, its directory %v; want 0600 and 0700", fi.Mode().Perm(), di.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	var cfg cliConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	saved := cfg.find(u.Host)
	if cfg.Current != u.Host || saved == nil || saved.Server != env.URL || saved.User != "lotta" || !strings.HasPrefix(saved.Token, "skr_") || saved.TokenID == "" {
		t.Fatalf("config file:\n%s", raw)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".config-*")); len(leftovers) != 0 {
		t.Fatalf("temp files left beside the config: %v", leftovers)
	}
	me, err := env.Client(t, saved.Token).Me(ctx)
	if err != nil || me.Name != "lotta" {
		t.Fatalf("the saved token: %+v %v", me, err)
	}
	host, _ := os.Hostname()
	// Its name is the machine's, in the audit too.
	events, err := env.App.Store.Audit(ctx, "", 10)
	if err != nil || len(events) == 0 || events[0].Action != "cli_login" || events[0].Actor != "lotta" || !strings.Contains(events[0].Details, "skrip CLI on "+host) {
		t.Fatalf("audit: %+v %v", events, err)
	}

	// Commands use the current context: no flag, no environment. lotta is no admin.
	if code, out, errOut := runWith(vars, "", "files", "list"); code != 0 {
		t.Fatalf("files list with the context: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runWith(vars, "", "users", "list"); code == 0 || !strings.Contains(errOut, "admin") {
		t.Fatalf("users list as lotta: %d %q", code, errOut)
	}
	// The environment beats the context: a bad SKRIP_TOKEN is refused, and SKRIP_SERVER
	// elsewhere is where the command goes (with no token: the context's is for its own
	// server only).
	withEnv := map[string]string{"HOME": home, "SKRIP_TOKEN": "skr_not-a-token"}
	if code, _, errOut := runWith(withEnv, "", "files", "list"); code == 0 || !strings.Contains(errOut, "not valid") {
		t.Fatalf("SKRIP_TOKEN over the context: %d %q", code, errOut)
	}
	withEnv = map[string]string{"HOME": home, "SKRIP_SERVER": "http://127.0.0.1:1"}
	if code, _, errOut := runWith(withEnv, "", "files", "list"); code == 0 || !strings.Contains(errOut, "cannot reach skrip at http://127.0.0.1:1") {
		t.Fatalf("SKRIP_SERVER over the context: %d %q", code, errOut)
	}
	// --token-file, from a file and from standard input, beats both: the admin's token
	// lists users.
	tokFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokFile, []byte("\n  "+env.AdminToken+"\n"), 0o600)
	for _, tc := range []struct{ file, stdin string }{{tokFile, ""}, {"-", env.AdminToken + "\n"}} {
		if code, out, errOut := runWith(map[string]string{"HOME": home, "SKRIP_TOKEN": "skr_not-a-token"}, tc.stdin, "--token-file", tc.file, "users", "list"); code != 0 || !strings.Contains(out, "lotta") {
			t.Fatalf("--token-file %s: %d %q %q", tc.file, code, out, errOut)
		}
	}
	os.WriteFile(tokFile, []byte("\n"), 0o600)
	if code, _, errOut := runWith(vars, "", "--token-file", tokFile, "files", "list"); code == 0 || !strings.Contains(errOut, "holds no token") {
		t.Fatalf("--token-file of an empty file: %d %q", code, errOut)
	}
	// --token still works, for compatibility.
	if code, out, _ := runWith(vars, "", "--token", env.AdminToken, "users", "list"); code != 0 || !strings.Contains(out, "lotta") {
		t.Fatalf("--token: %d %q", code, out)
	}

	// A second login, as another context, approved in the browser already signed in;
	// it becomes the current one. Then back to the first.
	l = startLogin(t, vars, "login", env.URL, "--context", "second", "--no-browser")
	web.decide(l.link, "", "", "approve")
	if code := l.wait(t); code != 0 {
		t.Fatalf("second login: %d %q %q", code, l.out.String(), l.err.String())
	}
	code, out, _ := runWith(vars, "", "context", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !regexp.MustCompile(`^\s+`+regexp.QuoteMeta(u.Host)+`\s+`+regexp.QuoteMeta(env.URL)+`\s+lotta\s+saved$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^\*\s+second\s+`).MatchString(lines[2]) || strings.Contains(out, "skr_") {
		t.Fatalf("context list: %d\n%s", code, out)
	}
	if code, out, _ := runWith(vars, "", "context", "use", u.Host); code != 0 || !strings.Contains(out, "now using context "+u.Host) {
		t.Fatalf("context use: %d %q", code, out)
	}
	if code, _, errOut := runWith(vars, "", "context", "use", "nope"); code == 0 || !strings.Contains(errOut, `no context "nope"`) {
		t.Fatalf("context use nope: %d %q", code, errOut)
	}
	if _, out, _ := runWith(vars, "", "context", "list"); !regexp.MustCompile(`(?m)^\*\s+` + regexp.QuoteMeta(u.Host)).MatchString(out) {
		t.Fatalf("context list after use:\n%s", out)
	}
	// --context picks another for one command.
	if code, _, errOut := runWith(vars, "", "--context", "second", "files", "list"); code != 0 {
		t.Fatalf("--context second: %d %q", code, errOut)
	}

	// A denied login saves nothing and says so.
	l = startLogin(t, vars, "login", env.URL, "--context", "third", "--no-browser")
	if page := web.decide(l.link, "", "", "deny"); !strings.Contains(page, "nekades") {
		t.Fatalf("the denial page says:\n%s", page)
	}
	if code := l.wait(t); code == 0 || !strings.Contains(l.err.String(), "denied") {
		t.Fatalf("denied login: %d %q %q", code, l.out.String(), l.err.String())
	}
	raw, _ = os.ReadFile(path)
	if strings.Contains(string(raw), "third") {
		t.Fatalf("a denied login was saved:\n%s", raw)
	}

	// skrip logout revokes the context's token on the server (DELETE
	// /api/v1/tokens/current) and removes it here.
	code, out, errOut := runWith(vars, "", "logout")
	raw, _ = os.ReadFile(path)
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(errOut, "answered 404") {
		// A server without the route keeps the token, and says so.
		if code == 0 || cfg.find(u.Host).Token != saved.Token {
			t.Fatalf("logout from a server that cannot revoke: %d %q, token kept: %v", code, errOut, cfg.find(u.Host).Token != "")
		}
		return
	}
	if code != 0 || !strings.Contains(out, "logged out") || cfg.find(u.Host).Token != "" || cfg.find("second").Token == "" {
		t.Fatalf("logout: %d %q %q\n%s", code, out, errOut, raw)
	}
	if _, err := env.Client(t, saved.Token).Me(ctx); err == nil {
		t.Fatal("the token works after skrip logout")
	}
}

// TestBrokenConfig: a config file that can't be read stops only the commands that need a
// context, and says which file.
func TestBrokenConfig(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	home := t.TempDir()
	path := filepath.Join(home, ".config", "skrip", "config.yaml")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("contexts: [this is not\n"), 0o600)
	vars := map[string]string{"HOME": home}
	if code, _, errOut := runWith(vars, "", "files", "list"); code == 0 || !strings.Contains(errOut, path+" is not a skrip config file") {
		t.Fatalf("files list with a broken config: %d %q", code, errOut)
	}
	vars["SKRIP_SERVER"] = env.URL
	if code, out, errOut := runWith(vars, env.AdminToken+"\n", "--token-file", "-", "users", "list"); code != 0 || !strings.Contains(out, "admin") {
		t.Fatalf("users list with the server and token given: %d %q %q", code, out, errOut)
	}
}
