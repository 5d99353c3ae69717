package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestUserAndTokenRulesMatchTheAPI (issue 31): creating a user and issuing a token give
// the same answer through the API and through the web UI's forms, for the same caller
// and target, because both ask account with the caller. They once differed: the admin
// page refused a non-admin with 403 where the API answers 404, and issued its tokens
// outside CreateToken.
func TestUserAndTokenRulesMatchTheAPI(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	const pw = "a good password"
	users := map[string]client.CreatedUser{}
	for _, u := range [][2]string{{"root", "admin"}, {"ada", "author"}, {"ulf", "user"}, {"full", "user"}} {
		cu, err := env.Admin.CreateUser(ctx, u[0], u[1], pw)
		if err != nil {
			t.Fatal(err)
		}
		users[u[0]] = cu
	}
	// full holds as many tokens as one user may: its first one and these.
	for i := 1; i < account.MaxTokensPerUser; i++ {
		if _, err := env.Admin.CreateToken(ctx, "full", fmt.Sprintf("t%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	browsers := map[string]*browserless{}
	csrf := map[string]string{}
	for _, name := range []string{"root", "ulf"} {
		browsers[name] = newBrowserless(t, env.URL)
		csrf[name] = browsers[name].signIn(name, pw)
	}
	api := func(caller, method, path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, env.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+users[caller].Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	web := func(caller, path string, form url.Values) int {
		t.Helper()
		form.Set("csrf", csrf[caller])
		status, _, _ := browsers[caller].do("POST", path, form, nil)
		return status
	}

	for _, tc := range []struct {
		caller, name string
		want         int
	}{
		{"ulf", "by-ulf", http.StatusForbidden},
		{"root", "by-root", http.StatusCreated},
	} {
		a := api(tc.caller, "POST", "/api/v1/users", `{"name":"`+tc.name+`-api","role":"admin"}`)
		w := web(tc.caller, "/admin/users", url.Values{"name": {tc.name + "-web"}, "role": {"admin"}})
		if a != tc.want || w != tc.want {
			t.Errorf("%s creating an admin: the API answered %d, the web %d; want %d from both", tc.caller, a, w, tc.want)
		}
	}

	for _, tc := range []struct {
		caller, target string
		want           int
	}{
		{"root", "ulf", http.StatusCreated},            // an admin, for another
		{"ulf", "ulf", http.StatusCreated},             // anyone, for themselves
		{"ulf", "ada", http.StatusNotFound},            // anyone else's is as if missing
		{"root", "full", http.StatusConflict},          // the cap binds an admin too
		{"root", "nobody", http.StatusNotFound},        // no such user
		{"ulf", users["root"].ID, http.StatusNotFound}, // by id, too
		{"root", users["ada"].ID, http.StatusCreated},  // an admin names anyone by id
		{"ulf", users["ulf"].ID, http.StatusCreated},   // and anyone themselves
	} {
		a := api(tc.caller, "POST", "/api/v1/users/"+tc.target+"/tokens", `{"name":"api"}`)
		w := web(tc.caller, "/admin/users/"+tc.target+"/tokens", url.Values{})
		if a != tc.want || w != tc.want {
			t.Errorf("%s issuing a token for %s: the API answered %d, the web %d; want %d from both", tc.caller, tc.target, a, w, tc.want)
		}
	}
}
