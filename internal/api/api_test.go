package api_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (a answer) errCode() string {
	e, _ := a.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func (a answer) errMessage() string {
	e, _ := a.body["error"].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

func call(t *testing.T, env *apptest.Env, method, path, token string, body io.Reader) answer {
	t.Helper()
	req, err := http.NewRequest(method, env.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	if len(b) > 0 && method != http.MethodHead {
		if err := json.Unmarshal(b, &a.body); err != nil {
			t.Fatalf("%s %s: body is not JSON: %q", method, path, b)
		}
	}
	return a
}

func TestAuthStatusRules(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, alice := env.User(t, "alice", "user")
		_, bob := env.User(t, "bob", "author")
		tests := []struct {
			name, method, path, token, body string
			status                          int
			code                            string
		}{
			{"no token", "GET", "/api/v1/me", "", "", 401, "unauthorized"},
			{"wrong token", "GET", "/api/v1/me", "skr_wrong", "", 401, "unauthorized"},
			{"not bearer", "GET", "/api/v1/me", "", "", 401, "unauthorized"},
			{"me", "GET", "/api/v1/me", alice.Token, "", 200, ""},
			{"user on admin route", "POST", "/api/v1/users", alice.Token, `{"name":"x"}`, 403, "forbidden"},
			{"author on admin list", "GET", "/api/v1/users", bob.Token, "", 403, "forbidden"},
			{"token for self by id", "POST", "/api/v1/users/" + alice.ID + "/tokens", alice.Token, "", 201, ""},
			{"token for self by name", "POST", "/api/v1/users/alice/tokens", alice.Token, "", 201, ""},
			{"token for someone else", "POST", "/api/v1/users/" + bob.ID + "/tokens", alice.Token, "", 404, "not_found"},
			{"token for a missing user", "POST", "/api/v1/users/u_nobody/tokens", alice.Token, "", 404, "not_found"},
			{"admin issues for bob", "POST", "/api/v1/users/bob/tokens", env.AdminToken, "", 201, ""},
			{"admin on missing user", "POST", "/api/v1/users/u_nobody/tokens", env.AdminToken, "", 404, "not_found"},
			{"admin creates user", "POST", "/api/v1/users", env.AdminToken, `{"name":"carol","role":"author","password":"long enough"}`, 201, ""},
			{"duplicate name", "POST", "/api/v1/users", env.AdminToken, `{"name":"carol"}`, 409, "conflict"},
			{"bad role", "POST", "/api/v1/users", env.AdminToken, `{"name":"dave","role":"root"}`, 400, "invalid_request"},
			{"bad name", "POST", "/api/v1/users", env.AdminToken, `{"name":"a b"}`, 400, "invalid_request"},
			{"short password", "POST", "/api/v1/users", env.AdminToken, `{"name":"erin","password":"short"}`, 400, "invalid_request"},
			{"user changes a role", "PATCH", "/api/v1/users/alice", alice.Token, `{"role":"admin"}`, 403, "forbidden"},
			{"admin changes a role", "PATCH", "/api/v1/users/alice", env.AdminToken, `{"role":"author"}`, 200, ""},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				req, _ := http.NewRequest(tc.method, env.URL+tc.path, body)
				switch {
				case tc.name == "not bearer":
					req.Header.Set("Authorization", "Basic YWRtaW46YWRtaW4=")
				case tc.token != "":
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var got map[string]any
				json.NewDecoder(resp.Body).Decode(&got)
				if resp.StatusCode != tc.status {
					t.Fatalf("status = %d, want %d; body %v", resp.StatusCode, tc.status, got)
				}
				if tc.code != "" {
					e, _ := got["error"].(map[string]any)
					if e["code"] != tc.code || e["message"] == "" {
						t.Fatalf("error = %v, want code %q and a message", e, tc.code)
					}
				}
				if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
					t.Fatal("401 without WWW-Authenticate")
				}
			})
		}
		// The token issued by POST /users works, and names its user.
		c := env.Client(t, alice.Token)
		me, err := c.Me(context.Background())
		if err != nil || me.Name != "alice" || me.Role != "author" {
			t.Fatalf("Me = %+v, %v; want alice, now an author", me, err)
		}
	})
}

func TestCreatedUserAnswerAndTokens(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	a := call(t, env, "POST", "/api/v1/users", env.AdminToken, strings.NewReader(`{"name":"zoe","role":"user"}`))
	if a.status != 201 {
		t.Fatalf("status %d: %s", a.status, a.raw)
	}
	for _, k := range []string{"id", "name", "role", "token"} {
		if _, ok := a.body[k]; !ok {
			t.Fatalf("answer %v lacks %q", a.body, k)
		}
	}
	tok := a.body["token"].(string)
	if !strings.HasPrefix(tok, "skr_") {
		t.Fatalf("token %q lacks the skr_ prefix", tok)
	}
	// A second token works too, and both keep working.
	b := call(t, env, "POST", "/api/v1/users/zoe/tokens", tok, strings.NewReader(`{"name":"laptop"}`))
	second, _ := b.body["token"].(string)
	if b.status != 201 || second == "" || second == tok {
		t.Fatalf("second token: %d %s", b.status, b.raw)
	}
	for _, tk := range []string{tok, second} {
		if got := call(t, env, "GET", "/api/v1/me", tk, nil); got.status != 200 || got.body["name"] != "zoe" {
			t.Fatalf("me with %q: %d %s", tk, got.status, got.raw)
		}
	}
}

func TestJSONErrors(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	big := `{"name":"` + strings.Repeat("a", 1<<20) + `"}`
	tests := []struct {
		name, method, path, body string
		status                   int
		code, msg                string
	}{
		{"malformed", "POST", "/api/v1/users", `{"name": }`, 400, "invalid_request", "not valid JSON"},
		{"truncated", "POST", "/api/v1/users", `{"name": "x"`, 400, "invalid_request", "ends in the middle"},
		{"empty", "POST", "/api/v1/users", ``, 400, "invalid_request", "empty"},
		{"wrong type", "POST", "/api/v1/users", `{"name": 7}`, 400, "invalid_request", `field "name" must be a string`},
		{"unknown field", "POST", "/api/v1/users", `{"name":"x","state":{}}`, 400, "invalid_request", `unknown field "state"`},
		{"trailing data", "POST", "/api/v1/users", `{"name":"x"} {}`, 400, "invalid_request", "nothing after it"},
		{"not an object", "POST", "/api/v1/users", `[1]`, 400, "invalid_request", "must be a JSON object"},
		{"over 1 MiB", "POST", "/api/v1/users", big, 413, "too_large", "1 MiB"},
		{"unknown route", "GET", "/api/v1/nothing-here", "", 404, "not_found", "no route GET /api/v1/nothing-here"},
		{"unknown top-level route", "GET", "/nope", "", 404, "not_found", "no route"},
		{"wrong method", "DELETE", "/api/v1/users", "", 405, "invalid_request", "use GET or HEAD or POST"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := call(t, env, tc.method, tc.path, env.AdminToken, strings.NewReader(tc.body))
			if a.status != tc.status || a.errCode() != tc.code || !strings.Contains(a.errMessage(), tc.msg) {
				t.Fatalf("got %d %s, want %d %s containing %q", a.status, a.raw, tc.status, tc.code, tc.msg)
			}
			if !strings.HasPrefix(a.header.Get("Content-Type"), "application/json") {
				t.Fatalf("Content-Type = %q", a.header.Get("Content-Type"))
			}
		})
	}
	// Nothing was created by the rejected bodies.
	users, err := env.Admin.Users(context.Background())
	if err != nil || len(users) != 1 {
		t.Fatalf("users = %v, %v; want only admin", users, err)
	}
}

func TestInternalErrorHidesDetails(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	// Break the database under the server: every query now fails inside the driver.
	env.App.Store.Close()
	a := call(t, env, "GET", "/api/v1/users", "skr_anything-at-all", nil)
	if a.status != 500 || a.errCode() != "internal" {
		t.Fatalf("got %d %s, want a 500", a.status, a.raw)
	}
	rid := a.header.Get("X-Request-Id")
	details, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
	if rid == "" || details["request_id"] != rid || !strings.Contains(a.errMessage(), rid) {
		t.Fatalf("500 body %s must carry the request id %q", a.raw, rid)
	}
	for _, leak := range []string{"sql", "database", "closed", "sqlite"} {
		if strings.Contains(strings.ToLower(a.raw), leak) {
			t.Fatalf("500 body leaks %q: %s", leak, a.raw)
		}
	}
	if r := call(t, env, "GET", "/readyz", "", nil); r.status != 503 || strings.Contains(r.raw, "closed") {
		t.Fatalf("readyz with a closed database: %d %s", r.status, r.raw)
	}
}

func TestRequestIDEcho(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	req, _ := http.NewRequest("GET", env.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "trace-42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "trace-42" {
		t.Fatalf("X-Request-Id = %q, want the client's", got)
	}
	req.Header.Set("X-Request-Id", "bad id with spaces")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Fatalf("X-Request-Id = %q, want a fresh id", got)
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		if a := call(t, env, "GET", "/healthz", "", nil); a.status != 200 || a.body["status"] != "ok" {
			t.Fatalf("healthz: %d %s", a.status, a.raw)
		}
		a := call(t, env, "GET", "/readyz", "", nil)
		checks, _ := a.body["checks"].(map[string]any)
		if a.status != 200 || checks["database"] != "ok" || checks["blob"] != "ok" || checks["runner"] != "ok" {
			t.Fatalf("readyz: %d %s", a.status, a.raw)
		}
		call(t, env, "GET", "/api/v1/me", "", nil)
		resp, err := http.Get(env.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range []string{
			`skrip_http_requests_total{code="401",route="GET /api/v1/me"} 1`,
			`skrip_http_requests_total{code="200",route="GET /readyz"} 1`,
			"skrip_http_request_duration_seconds_bucket",
			"skrip_bytes_uploaded_total",
			"go_goroutines",
		} {
			if !strings.Contains(string(body), want) {
				t.Fatalf("/metrics lacks %q", want)
			}
		}
	})
}

// TestRawTokensNeverStored greps the database itself: the SQLite file (and its WAL) on
// disk, and every column of every PostgreSQL table.
func TestRawTokensNeverStored(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "tess", "user")
		extra, err := env.Admin.CreateToken(context.Background(), "tess", "ci")
		if err != nil {
			t.Fatal(err)
		}
		secrets := []string{u.Token, extra, env.AdminToken}
		// A share link's token too (docs/api.md "Share links").
		if a := upload(t, env, u.Token, [][2]string{{"key", "files/shared.txt"}}, "shared.txt", []byte("shared")); a.status != 201 {
			t.Fatal(a.raw)
		}
		link := makeLink(t, env, u.Token, "files/shared.txt", `{"ttl": "1h"}`)
		linkURL, _ := link.body["url"].(string)
		_, linkToken, ok := strings.Cut(linkURL, "/s/")
		if !ok {
			t.Fatalf("a link: %s", link.raw)
		}
		secrets = append(secrets, linkToken)
		if !b.Postgres {
			for _, name := range []string{"skrip.db", "skrip.db-wal"} {
				data, err := os.ReadFile(filepath.Join(env.Config.DataDir, name))
				if err != nil && name == "skrip.db" {
					t.Fatal(err)
				}
				for _, s := range secrets {
					for _, part := range []string{s, strings.TrimPrefix(strings.TrimPrefix(s, "skr_"), "skl_")} {
						if bytes.Contains(data, []byte(part)) {
							t.Fatalf("%s holds a raw token", name)
						}
					}
				}
			}
			return
		}
		db, err := sql.Open("pgx", env.Config.DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, table := range []string{"tokens", "users", "file_links"} {
			rows, err := db.Query("SELECT CAST(t.* AS TEXT) FROM " + table + " t")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var row string
				rows.Scan(&row)
				n++
				for _, s := range secrets {
					if strings.Contains(row, strings.TrimPrefix(strings.TrimPrefix(s, "skr_"), "skl_")) {
						t.Fatalf("table %s holds a raw token: %s", table, row)
					}
				}
			}
			rows.Close()
			if n == 0 {
				t.Fatalf("table %s is empty; the test looked at nothing", table)
			}
		}
	})
}

func TestClientReportsAPIErrors(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	c := env.Client(t, "")
	_, err := c.Me(context.Background())
	if !client.IsCode(err, "unauthorized") || !strings.Contains(err.Error(), "SKRIP_TOKEN") {
		t.Fatalf("err = %v, want unauthorized naming SKRIP_TOKEN", err)
	}
}

func json_unmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("body is not JSON: %q", b)
	}
}
