package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

var inviteLink = regexp.MustCompile(`<code class="token" data-invite>([^<]+)</code>`)

// TestUsersPageLifecycle: the admin's users page disables and enables a user (whose
// browser is signed out at once), deletes one after a confirmation page, makes an
// invitation whose link it shows once, and links the audit log, which lists it all.
func TestUsersPageLifecycle(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	if err := env.Admin.SetPassword(ctx, "admin", "admin password"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.CreateUser(ctx, "kim", "user", "kim password"); err != nil {
		t.Fatal(err)
	}
	kim, _ := env.Admin.User(ctx, "kim")
	admin := newBrowserless(t, env.URL)
	csrf := admin.signIn("admin", "admin password")
	kimBrowser := newBrowserless(t, env.URL)
	kimBrowser.signIn("kim", "kim password")

	status, _, page := admin.do("GET", "/admin/users", nil, nil)
	if status != 200 || !strings.Contains(page, `action="/admin/users/`+kim.ID+`/disable"`) || !strings.Contains(page, `href="/admin/users/`+kim.ID+`/delete"`) {
		t.Fatalf("users page: %d\n%s", status, page)
	}
	if status, _, _ := admin.do("POST", "/admin/users/"+kim.ID+"/disable", url.Values{"csrf": {"forged"}}, nil); status != http.StatusForbidden {
		t.Fatalf("disable without the page's token: %d", status)
	}
	if status, _, _ := admin.do("POST", "/admin/users/"+kim.ID+"/disable", url.Values{"csrf": {csrf}}, nil); status != http.StatusSeeOther {
		t.Fatalf("disable: %d", status)
	}
	if status, h, _ := kimBrowser.do("GET", "/files", nil, nil); status != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/signin") {
		t.Fatalf("a disabled user's browser: %d %q", status, h.Get("Location"))
	}
	_, _, page = admin.do("GET", "/admin/users", nil, nil)
	if !strings.Contains(page, "avstängd") || !strings.Contains(page, `action="/admin/users/`+kim.ID+`/enable"`) {
		t.Fatalf("a disabled user on the page:\n%s", page)
	}
	if status, _, _ := admin.do("POST", "/admin/users/"+kim.ID+"/enable", url.Values{"csrf": {csrf}}, nil); status != http.StatusSeeOther {
		t.Fatalf("enable: %d", status)
	}
	me, _ := env.Admin.Me(ctx)
	if status, _, page := admin.do("POST", "/admin/users/"+me.ID+"/disable", url.Values{"csrf": {csrf}}, nil); status != http.StatusConflict || !strings.Contains(page, "ditt eget konto") {
		t.Fatalf("disabling oneself: %d\n%s", status, page)
	}

	// Delete: a confirmation page first.
	status, _, page = admin.do("GET", "/admin/users/"+kim.ID+"/delete", nil, nil)
	if status != 200 || !strings.Contains(page, "Ta bort kim?") || !strings.Contains(page, `action="/admin/users/`+kim.ID+`/delete"`) {
		t.Fatalf("confirmation: %d\n%s", status, page)
	}
	if status, _, _ := admin.do("POST", "/admin/users/"+kim.ID+"/delete", url.Values{"csrf": {csrf}}, nil); status != http.StatusSeeOther {
		t.Fatalf("delete: %d", status)
	}
	if _, _, page := admin.do("GET", "/admin/users", nil, nil); strings.Contains(page, ">kim<") || strings.Contains(page, kim.ID) {
		t.Fatal("a deleted user is on the users page")
	}

	// An invitation: the link is shown once.
	status, _, page = admin.do("POST", "/admin/invitations", url.Values{"csrf": {csrf}, "role": {"author"}, "days": {"7"}}, nil)
	m := inviteLink.FindStringSubmatch(page)
	if status != http.StatusCreated || m == nil || !strings.HasPrefix(m[1], env.URL+"/invite/") {
		t.Fatalf("invitation: %d\n%s", status, page)
	}
	if _, _, page := admin.do("GET", "/admin/users", nil, nil); strings.Contains(page, m[1]) {
		t.Fatal("the invitation's link is shown again")
	}
	invitee := newBrowserless(t, env.URL)
	path := strings.TrimPrefix(m[1], env.URL)
	status, _, page = invitee.do("GET", path, nil, nil)
	fm := csrfField.FindStringSubmatch(page)
	if status != 200 || fm == nil {
		t.Fatalf("the invitation's page: %d\n%s", status, page)
	}
	if status, _, page := invitee.do("POST", path, url.Values{"csrf": {fm[1]}, "name": {"nya"}, "password": {"kort"}, "password2": {"kort"}}, nil); status != 400 || !strings.Contains(page, `value="nya"`) {
		t.Fatalf("a short password: %d\n%s", status, page)
	}
	if status, h, _ := invitee.do("POST", path, url.Values{"csrf": {fm[1]}, "name": {"nya"}, "password": {"nya password"}, "password2": {"nya password"}}, nil); status != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Fatalf("accepting: %d", status)
	}
	if status, _, page := invitee.do("GET", "/account", nil, nil); status != 200 || !strings.Contains(page, "nya") {
		t.Fatalf("the invitee's account page: %d", status)
	}

	// A token the admin issues someone on the users page is audited too (a review found
	// it was not).
	if status, _, _ := admin.do("POST", "/admin/users/"+me.ID+"/tokens", url.Values{"csrf": {csrf}}, nil); status != http.StatusCreated {
		t.Fatalf("issuing a token on the users page: %d", status)
	}

	// The audit page lists it all, in Swedish.
	status, _, page = admin.do("GET", "/admin/audit", nil, nil)
	for _, want := range []string{"stängde av en användare", "slog på en användare", "tog bort en användare", "skapade en inbjudan", "använde en inbjudan", "loggade in", "skapade en token"} {
		if !strings.Contains(page, want) {
			t.Errorf("the audit page has no %q", want)
		}
	}
	if status != 200 {
		t.Fatalf("audit page: %d", status)
	}
	if status, _, _ := invitee.do("GET", "/admin/audit", nil, nil); status != http.StatusForbidden {
		t.Fatalf("the audit page for a non-admin: %d", status)
	}
}
