package api_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/store"
)

// blobKeys lists every key in the blob store.
func blobKeys(t *testing.T, env *apptest.Env) []string {
	t.Helper()
	infos, err := env.App.Blobs.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, i := range infos {
		keys = append(keys, i.Key)
	}
	return keys
}

// userRows counts, table by table, the rows that hold userID.
func userRows(t *testing.T, env *apptest.Env, userID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tc := range store.UserTables() {
		n, err := env.App.Store.CountUserRows(context.Background(), tc[0], tc[1], userID)
		if err != nil {
			t.Fatal(err)
		}
		out[tc[0]+"."+tc[1]] = n
	}
	return out
}

// webSession signs name in with password as a browser would and returns the cookie's
// secret.
func webSession(t *testing.T, env *apptest.Env, name, password string) string {
	t.Helper()
	_, secret, err := env.App.Accounts.SignIn(context.Background(), "127.0.0.1", name, password)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// withCookie sends a GET of path with the browser session secret and no redirects.
func withCookie(t *testing.T, env *apptest.Env, path, secret string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", env.URL+path, nil)
	req.AddCookie(&http.Cookie{Name: account.SessionCookie, Value: secret})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestUserLifecycle walks a user through disable, enable, export and delete, checking
// after each step what is left of them, row by row in the database and key by key in
// the blob store; and a deleted author's tool runs on, shown by "borttagen användare".
func TestUserLifecycle(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesVersions = 2
		env := apptest.Start(t, cfg)
		ctx := context.Background()
		_, bob := env.User(t, "bob", "author")
		bobc := env.Client(t, bob.Token)
		tool, _, err := bobc.CreateTool(ctx, "echo", "Eko", "", echoTool, true)
		if err != nil {
			t.Fatal(err)
		}
		publish(t, env, "sleep", sleepTool)
		before := blobKeys(t, env)

		// Alice holds one of everything.
		if _, err := env.Admin.CreateUser(ctx, "alice", "user", "alice-password"); err != nil {
			t.Fatal(err)
		}
		aliceTok, err := env.Admin.CreateToken(ctx, "alice", "laptop")
		if err != nil {
			t.Fatal(err)
		}
		alice, err := env.Admin.User(ctx, "alice")
		if err != nil || alice.State != "active" {
			t.Fatalf("alice: %+v %v", alice, err)
		}
		for i, body := range []string{"first", "second"} {
			if a := upload(t, env, aliceTok, [][2]string{{"key", "files/notes.txt"}}, "notes.txt", []byte(body)); a.status != 201 {
				t.Fatalf("upload %d: %d %s", i, a.status, a.raw)
			}
		}
		if a := makeLink(t, env, aliceTok, "files/notes.txt", `{"ttl": "1h"}`); a.status != 201 {
			t.Fatalf("link: %d %s", a.status, a.raw)
		}
		up, a := createUpload(t, env, aliceTok, 10, tusMeta("filename", "half.bin"))
		if up == "" {
			t.Fatalf("tus create: %d %s", a.status, a.raw)
		}
		if a := patchUpload(t, env, aliceTok, up, 0, []byte("12345")); a.status != 204 {
			t.Fatalf("tus patch: %d %s", a.status, a.raw)
		}
		run := runUpload(t, env, aliceTok, "echo", []string{"a.csv"}, []string{"x,y\n"}, `{"n": 1}`, "")
		if run.status != 201 {
			t.Fatalf("run: %d %s", run.status, run.raw)
		}
		runID := run.body["run_id"].(string)
		if err := env.App.Store.PutSettings(ctx, store.ToolSettings{UserID: alice.ID, ToolID: tool.ID, Values: []byte(`{"lang": "sv"}`), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if a := send(t, env, "PUT", "/api/v1/tools/echo/favourite", aliceTok, "", nil); a.status != 204 {
			t.Fatalf("favourite: %d %s", a.status, a.raw)
		}
		k := store.SessionKey{ToolID: tool.ID, UserID: alice.ID, Context: "default"}
		if _, err := env.App.Sessions.Start(ctx, k, []byte(`{"step": 1}`), runID); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "data.csv"), []byte("session bytes"), 0o644)
		if err := env.App.Sessions.Replace(ctx, k, dir, []string{"data.csv"}); err != nil {
			t.Fatal(err)
		}
		box := newSandbox(t, env, aliceTok, `{"idle_timeout": "30m"}`)
		slow := runUpload(t, env, aliceTok, "sleep", nil, nil, `{"s": 60}`, "?wait=0s")
		if slow.status != 202 {
			t.Fatalf("slow run: %d %s", slow.status, slow.raw)
		}
		if a := call(t, env, "POST", "/api/v1/runs/"+runID+"/report", aliceTok, strings.NewReader(`{"message": "alices report"}`)); a.status != 201 {
			t.Fatalf("report: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "POST", "/api/v1/files/files/inbox/svar.txt/upload-links", aliceTok, strings.NewReader(`{"ttl": "1h"}`)); a.status != 201 {
			t.Fatalf("upload link: %d %s", a.status, a.raw)
		}
		browser := webSession(t, env, "alice", "alice-password")
		if st, _ := withCookie(t, env, "/account", browser); st != 200 {
			t.Fatalf("alice's browser before: %d", st)
		}
		rows := userRows(t, env, alice.ID)
		for _, tbl := range []string{"tokens.user_id", "web_sessions.user_id", "tool_settings.user_id", "favourites.user_id", "session_files.user_id", "tool_sessions.user_id",
			"problem_reports.user_id", "runs.user_id", "file_links.owner_id", "upload_links.owner_id", "upload_links.created_by", "file_versions.owner_id", "files.owner_id", "uploads.owner_id", "sandboxes.owner_id"} {
			if rows[tbl] == 0 {
				t.Fatalf("alice has no %s rows to begin with: %v", tbl, rows)
			}
		}

		// An admin may not disable themselves.
		admin, _ := env.Admin.Me(ctx)
		if a := send(t, env, "POST", "/api/v1/users/"+admin.ID+"/disable", env.AdminToken, "", nil); a.status != 409 || a.body["error"].(map[string]any)["details"].(map[string]any)["reason"] != "own_account" {
			t.Fatalf("disabling oneself: %d %s", a.status, a.raw)
		}

		// Disabled: the token and the browser are refused at once, the slow run is
		// cancelled and the sandbox is gone.
		if a := send(t, env, "POST", "/api/v1/users/alice/disable", env.AdminToken, "", nil); a.status != 200 || a.body["state"] != "disabled" {
			t.Fatalf("disable: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/me", aliceTok, "", nil); a.status != 401 {
			t.Fatalf("a disabled user's token: %d %s", a.status, a.raw)
		}
		if st, _ := withCookie(t, env, "/account", browser); st == 200 {
			t.Fatal("a disabled user's browser is still signed in")
		}
		if _, _, err := env.App.Accounts.SignIn(ctx, "127.0.0.1", "alice", "alice-password"); err == nil {
			t.Fatal("a disabled user signed in")
		}
		rows = userRows(t, env, alice.ID)
		if rows["web_sessions.user_id"] != 0 || rows["sandboxes.owner_id"] != 0 {
			t.Fatalf("after disabling: %v", rows)
		}
		if _, err := env.App.Sandboxes.Get(ctx, store.User{ID: alice.ID, Role: "user"}, box); err == nil {
			t.Fatal("the disabled user's sandbox is still there")
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := env.App.Store.GetRun(ctx, slow.body["run_id"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if r.Status == store.StatusCancelled {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the disabled user's run is %s", r.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}

		// Enabled: the token works again.
		if a := send(t, env, "POST", "/api/v1/users/alice/enable", env.AdminToken, "", nil); a.status != 200 || a.body["state"] != "active" {
			t.Fatalf("enable: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/me", aliceTok, "", nil); a.status != 200 {
			t.Fatalf("an enabled user's token: %d %s", a.status, a.raw)
		}

		// The export, by alice herself.
		checkExport(t, env, aliceTok, runID)

		// Deleted: nothing of hers is left, row by row and blob by blob.
		if a := send(t, env, "DELETE", "/api/v1/users/alice", aliceTok, "", nil); a.status != 403 && a.status != 404 {
			t.Fatalf("a user deleting themselves: %d", a.status)
		}
		if a := send(t, env, "DELETE", "/api/v1/users/alice", env.AdminToken, "", nil); a.status != 204 {
			t.Fatalf("delete: %d %s", a.status, a.raw)
		}
		for tbl, n := range userRows(t, env, alice.ID) {
			if n != 0 {
				t.Errorf("after deleting: %d rows in %s", n, tbl)
			}
		}
		if after := blobKeys(t, env); !slices.Equal(after, before) {
			t.Errorf("blobs after deleting alice:\n%v\nbefore she came:\n%v", after, before)
		}
		if a := send(t, env, "GET", "/api/v1/users/alice", env.AdminToken, "", nil); a.status != 404 {
			t.Fatalf("GET a deleted user by name: %d", a.status)
		}
		if a := send(t, env, "GET", "/api/v1/users/"+alice.ID, env.AdminToken, "", nil); a.status != 404 {
			t.Fatalf("GET a deleted user by id: %d", a.status)
		}
		if a := send(t, env, "GET", "/api/v1/users", env.AdminToken, "", nil); strings.Contains(a.raw, alice.ID) {
			t.Fatalf("the users list shows a deleted user: %s", a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/me", aliceTok, "", nil); a.status != 401 {
			t.Fatalf("a deleted user's token: %d", a.status)
		}
		if _, err := env.Admin.CreateUser(ctx, "alice", "user", ""); err != nil {
			t.Fatalf("the name of a deleted user is not free again: %v", err)
		}

		// A deleted author's tool stays, runs, and is shown as by "borttagen användare".
		if err := env.Admin.DeleteUser(ctx, "bob"); err != nil {
			t.Fatal(err)
		}
		carlc, carl := env.User(t, "carl", "user")
		got, err := carlc.ToolOf(ctx, "echo")
		if err != nil || got.Author != store.DeletedUserName {
			t.Fatalf("the tool of a deleted author: %+v %v", got, err)
		}
		if a := runUpload(t, env, carl.Token, "echo", nil, nil, `{"n": 1}`, ""); a.status != 201 || a.body["status"] != "succeeded" {
			t.Fatalf("running a deleted author's tool: %d %s", a.status, a.raw)
		}
		env.Admin.SetPassword(ctx, "carl", "carl-password")
		for _, p := range []string{"/", "/tools/echo"} {
			st, page := withCookie(t, env, p, webSession(t, env, "carl", "carl-password"))
			if st != 200 || !strings.Contains(page, "borttagen användare") {
				t.Fatalf("%s: %d, the deleted author is not shown as such", p, st)
			}
		}

		// An admin cannot delete themselves.
		if a := send(t, env, "DELETE", "/api/v1/users/"+admin.ID, env.AdminToken, "", nil); a.status != 409 {
			t.Fatalf("deleting oneself: %d %s", a.status, a.raw)
		}
	})
}

// checkExport reads alice's export and checks its entries.
func checkExport(t *testing.T, env *apptest.Env, token, runID string) {
	t.Helper()
	req, _ := http.NewRequest("GET", env.URL+"/api/v1/users/alice/export", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("export: %d %v", resp.StatusCode, err)
	}
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, `filename="skrip-alice-`) {
		t.Fatalf("Content-Disposition %q", cd)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		got[f.Name] = string(b)
	}
	want := map[string]string{
		"files/notes.txt":                        "second",
		"runs/" + runID + "/artifacts/names.txt": "a.csv",
	}
	for name, content := range want {
		if got[name] != content {
			t.Errorf("export %s = %q, want %q", name, got[name], content)
		}
	}
	for _, name := range []string{"user.json", "settings.json", "files.json", "sessions.json", "reports.json", "runs/" + runID + "/run.json"} {
		if _, ok := got[name]; !ok {
			t.Errorf("the export has no %s; it has %v", name, keysOf(got))
		}
	}
	if !strings.Contains(got["user.json"], `"laptop"`) || strings.Contains(got["user.json"], "hash") || !strings.Contains(got["user.json"], `"web_sessions"`) {
		t.Errorf("user.json: %s", got["user.json"])
	}
	if !strings.Contains(got["settings.json"], `"lang": "sv"`) {
		t.Errorf("settings.json: %s", got["settings.json"])
	}
	if !strings.Contains(got["runs/"+runID+"/run.json"], `"n": 1`) || !strings.Contains(got["runs/"+runID+"/run.json"], "got 1 files") ||
		!strings.Contains(got["runs/"+runID+"/run.json"], `"error_source": null`) {
		t.Errorf("run.json: %s", got["runs/"+runID+"/run.json"])
	}
	if !strings.Contains(got["reports.json"], `"alices report"`) || !strings.Contains(got["reports.json"], runID) {
		t.Errorf("reports.json: %s", got["reports.json"])
	}
	sessionFile := false
	for name, content := range got {
		if strings.HasPrefix(name, "session-files/") && strings.HasSuffix(name, "/default/data.csv") && content == "session bytes" {
			sessionFile = true
		}
	}
	if !sessionFile || !strings.Contains(got["sessions.json"], `"step": 1`) {
		t.Errorf("the session and its file are not in the export: %v %s", keysOf(got), got["sessions.json"])
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDisableInACluster: in a cluster, disabling a user cancels their run on a worker and
// removes their sandbox there.
func TestDisableInACluster(t *testing.T) {
	env := apptest.New(t, apptest.ClusterBackend)
	ctx := context.Background()
	publish(t, env, "sleep", sleepTool)
	_, u := env.User(t, "nils", "user")
	box := newSandbox(t, env, u.Token, `{"idle_timeout": "30m"}`)
	slow := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 60}`, "?wait=0s")
	if slow.status != 202 {
		t.Fatalf("slow run: %d %s", slow.status, slow.raw)
	}
	id := slow.body["run_id"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, _ := env.App.Store.GetRun(ctx, id)
		if r.Status == store.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not start: %s", r.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := env.Admin.DisableUser(ctx, "nils"); err != nil {
		t.Fatal(err)
	}
	for {
		r, _ := env.App.Store.GetRun(ctx, id)
		if r.Status == store.StatusCancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the disabled user's run on a worker is %s", r.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if a := send(t, env, "GET", "/api/v1/sandboxes/"+box, env.AdminToken, "", nil); a.status != 404 {
		t.Fatalf("the disabled user's sandbox: %d %s", a.status, a.raw)
	}
	if n, _ := env.App.Store.CountUserRows(ctx, "sandboxes", "owner_id", u.ID); n != 0 {
		t.Fatalf("%d sandbox rows left", n)
	}
}
