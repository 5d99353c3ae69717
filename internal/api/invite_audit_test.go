package api_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/store"
)

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// TestInvitationOnceUnderRace: an invitation's page makes one user of two who post it
// at once, signs that one in, and then answers 410 in Swedish.
func TestInvitationOnceUnderRace(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "plain", "user")
		if a := send(t, env, "POST", "/api/v1/invitations", u.Token, "application/json", strings.NewReader(`{"role": "author"}`)); a.status != 403 {
			t.Fatalf("a user inviting: %d", a.status)
		}
		if a := send(t, env, "POST", "/api/v1/invitations", env.AdminToken, "application/json", strings.NewReader(`{"role": "author", "expires_in": "31d"}`)); a.status != 400 {
			t.Fatalf("an invitation of 31 days: %d %s", a.status, a.raw)
		}
		a := send(t, env, "POST", "/api/v1/invitations", env.AdminToken, "application/json", strings.NewReader(`{"role": "author", "expires_in": "2d"}`))
		if a.status != 201 {
			t.Fatalf("invite: %d %s", a.status, a.raw)
		}
		link, _ := a.body["url"].(string)
		if !strings.HasPrefix(link, env.URL+"/invite/") {
			t.Fatalf("url %q", link)
		}
		exp, _ := time.Parse(time.RFC3339, a.body["expires_at"].(string))
		if d := time.Until(exp); d < 47*time.Hour || d > 49*time.Hour {
			t.Fatalf("expires_at %v", exp)
		}
		// The secret is not stored.
		secret := strings.TrimPrefix(link, env.URL+"/invite/")
		if rows := dbDump(t, env); strings.Contains(rows, secret) {
			t.Fatal("the invitation's secret is stored")
		}

		// The form: its anti-forgery token comes with a cookie.
		resp, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := csrfField.FindStringSubmatch(string(page))
		if resp.StatusCode != 200 || m == nil {
			t.Fatalf("invite page: %d", resp.StatusCode)
		}
		var cookie *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "skrip_invite" {
				cookie = c
			}
		}
		post := func(name string, withToken bool) *http.Response {
			form := url.Values{"name": {name}, "password": {"long-enough-pw"}, "password2": {"long-enough-pw"}}
			if withToken {
				form.Set("csrf", m[1])
			}
			req, _ := http.NewRequest("POST", link, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if withToken {
				req.AddCookie(cookie)
			}
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return nil
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp
		}
		if r := post("forger", false); r.StatusCode != 403 {
			t.Fatalf("a post without the anti-forgery token: %d", r.StatusCode)
		}
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		var session string
		var mu sync.Mutex
		for i, name := range []string{"first", "second"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r := post(name, true); r != nil {
					statuses[i] = r.StatusCode
					for _, c := range r.Cookies() {
						if c.Name == account.SessionCookie {
							mu.Lock()
							session = c.Value
							mu.Unlock()
						}
					}
				}
			}()
		}
		wg.Wait()
		ok, gone := 0, 0
		for _, s := range statuses {
			switch s {
			case http.StatusSeeOther:
				ok++
			case http.StatusGone:
				gone++
			}
		}
		if ok != 1 || gone != 1 {
			t.Fatalf("two posts of one invitation: %v", statuses)
		}
		users, _ := env.Admin.Users(context.Background())
		made := 0
		for _, u := range users {
			if u.Name == "first" || u.Name == "second" {
				made++
				if u.Role != "author" || !u.HasPassword {
					t.Fatalf("invited user: %+v", u)
				}
			}
		}
		if made != 1 {
			t.Fatalf("%d users made", made)
		}
		if st, _ := withCookie(t, env, "/account", session); st != 200 {
			t.Fatalf("the invitee is not signed in: %d", st)
		}
		resp, err = http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		page, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 410 || !strings.Contains(string(page), "redan använts eller har gått ut") {
			t.Fatalf("a used invitation: %d %s", resp.StatusCode, page)
		}
		if r := post("third", true); r.StatusCode != 410 {
			t.Fatalf("posting a used invitation: %d", r.StatusCode)
		}
	})
}

// dbDump is every audit event and invitation row as text, to look for secrets in.
func dbDump(t *testing.T, env *apptest.Env) string {
	t.Helper()
	ev, err := env.App.Store.Audit(context.Background(), "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ev {
		b.WriteString(e.Details + e.Target + "\n")
	}
	return b.String()
}

// TestAuditLogAndRetention: admin actions and sign-ins are listed newest first in
// pages; the janitor removes events past SKRIP_AUDIT_RETENTION.
func TestAuditLogAndRetention(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.AuditRetention = 30 * 24 * time.Hour
	env := apptest.Start(t, cfg)
	ctx := context.Background()
	if _, err := env.Admin.CreateUser(ctx, "eva", "user", "eva-password"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.SetRole(ctx, "eva", "author"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.DisableUser(ctx, "eva"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.EnableUser(ctx, "eva"); err != nil {
		t.Fatal(err)
	}
	// A sign-in through the web page, and a failed one.
	for _, pw := range []string{"wrong-password", "eva-password"} {
		form := url.Values{"name": {"eva"}, "password": {pw}}
		req, _ := http.NewRequest("POST", env.URL+"/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", env.URL)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var actions []string
	cursor := ""
	for range 10 {
		page, err := env.Admin.Audit(ctx, 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			actions = append(actions, e.Action+":"+e.Target)
		}
		if cursor = page.Cursor; cursor == "" {
			break
		}
	}
	want := []string{"signin:eva", "signin_failed:eva", "user_enabled:eva", "user_disabled:eva", "role_changed:eva", "user_created:eva"}
	if strings.Join(actions, " ") != strings.Join(want, " ") {
		t.Fatalf("audit, newest first:\n%v\nwant\n%v", actions, want)
	}
	if page, _ := env.Admin.Audit(ctx, 1, ""); page.Events[0].Address != "127.0.0.1" || page.Events[0].Actor != "eva" {
		t.Fatalf("the sign-in's event: %+v", page.Events[0])
	}
	_, u := env.User(t, "nosy", "user")
	if a := send(t, env, "GET", "/api/v1/audit", u.Token, "", nil); a.status != 403 {
		t.Fatalf("a user reading the audit log: %d", a.status)
	}
	if a := send(t, env, "GET", "/api/v1/audit?limit=0", env.AdminToken, "", nil); a.status != 400 {
		t.Fatalf("limit=0: %d", a.status)
	}

	// Retention.
	old := store.AuditEvent{ID: "ev_old", At: time.Now().Add(-31 * 24 * time.Hour), Actor: "admin", Action: "user_created", Target: "ghost"}
	if err := env.App.Store.AddAudit(ctx, old); err != nil {
		t.Fatal(err)
	}
	r, err := env.App.Janitor.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.AuditEvents != 1 {
		t.Fatalf("the janitor removed %d audit events", r.AuditEvents)
	}
	all, _ := env.Admin.Audit(ctx, 1000, "")
	for _, e := range all.Events {
		if e.Target == "ghost" {
			t.Fatal("an event past retention is still listed")
		}
	}
	if len(all.Events) < len(want) {
		t.Fatalf("recent events went too: %d left", len(all.Events))
	}
}

// TestExportBrokenMidway: when a blob cannot be read halfway through an export, the
// client gets an error and no zip that reads as whole.
func TestExportBrokenMidway(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	_, u := env.User(t, "zed", "user")
	for _, k := range []string{"files/a.txt", "files/b.txt"} {
		if a := upload(t, env, u.Token, [][2]string{{"key", k}}, "x.txt", bytes.Repeat([]byte("z"), 100000)); a.status != 201 {
			t.Fatalf("upload: %d %s", a.status, a.raw)
		}
	}
	f, err := env.App.Store.FileOf(ctx, u.ID, "files/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.App.Blobs.Delete(ctx, f.BlobKey); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, err = env.Client(t, u.Token).ExportUser(ctx, "zed", &buf)
	if err == nil {
		t.Fatal("an export broken midway reads as whole")
	}
	if _, zerr := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len())); zerr == nil {
		t.Fatal("what was sent reads as a whole zip")
	}
	// Another user's export is not theirs to ask for.
	_, other := env.User(t, "other", "user")
	if a := send(t, env, "GET", "/api/v1/users/zed/export", other.Token, "", nil); a.status != 404 {
		t.Fatalf("another user's export: %d", a.status)
	}
}
