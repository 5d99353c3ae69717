package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

const noopSource = `def run_tool(input_dir, output_dir):\n    return {}`

// categoryTitles are the titles of an answer's categories (a tool's or the list's), with
// " (proposed)" after one not approved yet, and the tool count when the list has one.
func categoryTitles(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		c := x.(map[string]any)
		s := c["title"].(string)
		if n, ok := c["tools"]; ok {
			s += fmt.Sprintf(" %v", n)
		}
		if c["approved"] != true {
			s += " (proposed)"
		}
		out = append(out, s)
	}
	return out
}

// TestCategoriesAPI: admins manage the categories, an author proposes one through a
// tool's categories (create and PATCH), GET /api/v1/categories counts the tools the caller
// sees, sorted by title in Swedish order, and everyone else is refused.
func TestCategoriesAPI(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, author := env.User(t, "ann", "author")
		_, user := env.User(t, "ulf", "user")
		for _, title := range []string{"Svenska", "Matematik", "Ämnesövergripande"} {
			if a := call(t, env, "POST", "/api/v1/categories", env.AdminToken, strings.NewReader(`{"title":"`+title+`"}`)); a.status != 201 || a.body["slug"] == "" || a.body["approved"] != true {
				t.Fatalf("creating %s: %d %s", title, a.status, a.raw)
			}
		}
		for _, tc := range []struct {
			who, method, path, body string
			status                  int
			reason                  string
		}{
			{author.Token, "POST", "/api/v1/categories", `{"title":"Fysik"}`, 403, "admin_only"},
			{user.Token, "PATCH", "/api/v1/categories/svenska", `{"title":"Svensk"}`, 403, "admin_only"},
			{user.Token, "DELETE", "/api/v1/categories/svenska", "", 403, "admin_only"},
			{env.AdminToken, "POST", "/api/v1/categories", `{"title":"svenska"}`, 409, "category_exists"},
			{env.AdminToken, "POST", "/api/v1/categories", `{"title":"  "}`, 400, "invalid_category"},
			{env.AdminToken, "PATCH", "/api/v1/categories/nope", `{"title":"X"}`, 404, "category_not_found"},
			{env.AdminToken, "DELETE", "/api/v1/categories/nope", "", 404, "category_not_found"},
			{author.Token, "POST", "/api/v1/tools", `{"slug":"bad","title":"B","source":"` + noopSource + `","categories":["` + strings.Repeat("x", 61) + `"]}`, 400, "invalid_category"},
		} {
			a := call(t, env, tc.method, tc.path, tc.who, strings.NewReader(tc.body))
			reason, _ := a.body["error"].(map[string]any)["details"].(map[string]any)["reason"].(string)
			if a.status != tc.status || reason != tc.reason {
				t.Errorf("%s %s %s: %d %s; want %d %s", tc.method, tc.path, tc.body, a.status, a.raw, tc.status, tc.reason)
			}
		}
		if a := call(t, env, "GET", "/api/v1/tools/bad", env.AdminToken, nil); a.status != 404 {
			t.Fatalf("a tool refused for its categories was stored: %d", a.status)
		}

		// An author's tools: one in Svenska and a proposal, one in a draft (not counted
		// for others), one changed by PATCH.
		a := call(t, env, "POST", "/api/v1/tools", author.Token, strings.NewReader(`{"slug":"ordlista","title":"Ordlista","source":"`+noopSource+`","publish":true,"categories":["svenska","Bedömning"]}`))
		if a.status != 201 {
			t.Fatalf("creating ordlista: %d %s", a.status, a.raw)
		}
		if got := strings.Join(categoryTitles(a.body["tool"].(map[string]any)["categories"]), ", "); got != "Bedömning (proposed), Svenska" {
			t.Fatalf("ordlista's categories %q", got)
		}
		call(t, env, "POST", "/api/v1/tools", author.Token, strings.NewReader(`{"slug":"utkast","title":"Utkast","source":"`+noopSource+`","categories":["Svenska"]}`))
		a = call(t, env, "POST", "/api/v1/tools", author.Token, strings.NewReader(`{"slug":"rakna","title":"Räkna","source":"`+noopSource+`","publish":true}`))
		if got := a.body["tool"].(map[string]any)["categories"]; a.status != 201 || got == nil || len(got.([]any)) != 0 {
			t.Fatalf("a tool without categories: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "PATCH", "/api/v1/tools/rakna", user.Token, strings.NewReader(`{"categories":["Matematik"]}`)); a.status != 403 {
			t.Fatalf("a user changing an author's categories: %d %s", a.status, a.raw)
		}
		a = call(t, env, "PATCH", "/api/v1/tools/rakna", author.Token, strings.NewReader(`{"categories":["Matematik"]}`))
		if got := strings.Join(categoryTitles(a.body["categories"]), ", "); a.status != 200 || got != "Matematik" || a.body["title"] != "Räkna" {
			t.Fatalf("PATCH rakna's categories: %d %s", a.status, a.raw)
		}
		a = call(t, env, "GET", "/api/v1/tools/ordlista", user.Token, nil)
		if got := strings.Join(categoryTitles(a.body["categories"]), ", "); got != "Bedömning (proposed), Svenska" {
			t.Fatalf("GET ordlista's categories %q", got)
		}
		a = call(t, env, "GET", "/api/v1/tools", user.Token, nil)
		if !strings.Contains(a.raw, `"categories":[{"slug":"matematik"`) {
			t.Fatalf("the tool list lacks categories: %s", a.raw)
		}

		list := func(token string) string {
			a := call(t, env, "GET", "/api/v1/categories", token, nil)
			if a.status != 200 {
				t.Fatalf("GET /api/v1/categories: %d %s", a.status, a.raw)
			}
			return strings.Join(categoryTitles(a.body["categories"]), ", ")
		}
		if got, want := list(user.Token), "Matematik 1, Svenska 1, Ämnesövergripande 0"; got != want {
			t.Fatalf("a user's categories %q, want %q", got, want)
		}
		if got, want := list(env.AdminToken), "Bedömning 1 (proposed), Matematik 1, Svenska 2, Ämnesövergripande 0"; got != want {
			t.Fatalf("an admin's categories %q, want %q", got, want)
		}

		// The admin approves and renames the proposal, and deletes one.
		if a := call(t, env, "PATCH", "/api/v1/categories/bedomning", env.AdminToken, strings.NewReader(`{"approved":true,"title":"Bedömning och betyg"}`)); a.status != 200 || a.body["approved"] != true {
			t.Fatalf("approving: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "DELETE", "/api/v1/categories/matematik", env.AdminToken, nil); a.status != 204 {
			t.Fatalf("deleting: %d %s", a.status, a.raw)
		}
		if got, want := list(user.Token), "Bedömning och betyg 1, Svenska 1, Ämnesövergripande 0"; got != want {
			t.Fatalf("after approving and deleting: %q, want %q", got, want)
		}
	})
}

// TestFavouritesAPI: PUT and DELETE are idempotent and answer 204, only for the caller
// and only for a tool they see; 404 for any other.
func TestFavouritesAPI(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, author := env.User(t, "ann", "author")
		_, user := env.User(t, "ulf", "user")
		call(t, env, "POST", "/api/v1/tools", author.Token, strings.NewReader(`{"slug":"ordlista","title":"Ordlista","source":"`+noopSource+`","publish":true}`))
		call(t, env, "POST", "/api/v1/tools", author.Token, strings.NewReader(`{"slug":"utkast","title":"Utkast","source":"`+noopSource+`"}`))
		for _, tc := range []struct {
			method, path, token string
			status              int
		}{
			{"PUT", "/api/v1/tools/ordlista/favourite", user.Token, 204},
			{"PUT", "/api/v1/tools/ordlista/favourite", user.Token, 204},
			{"DELETE", "/api/v1/tools/ordlista/favourite", author.Token, 204}, // the author's own: none to remove
			{"PUT", "/api/v1/tools/nope/favourite", user.Token, 404},
			{"PUT", "/api/v1/tools/utkast/favourite", user.Token, 404}, // a draft the user does not see
			{"PUT", "/api/v1/tools/utkast/favourite", author.Token, 204},
			{"PUT", "/api/v1/tools/ordlista/favourite", "", 401},
		} {
			if a := call(t, env, tc.method, tc.path, tc.token, nil); a.status != tc.status {
				t.Errorf("%s %s: %d %s; want %d", tc.method, tc.path, a.status, a.raw, tc.status)
			}
		}
		favs := func(id string) int {
			n, err := env.App.Store.CountUserRows(t.Context(), "favourites", "user_id", id)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if favs(user.ID) != 1 || favs(author.ID) != 1 {
			t.Fatalf("favourites: the user %d, the author %d; want one each", favs(user.ID), favs(author.ID))
		}
		for range 2 {
			if a := call(t, env, "DELETE", "/api/v1/tools/ordlista/favourite", user.Token, nil); a.status != 204 {
				t.Fatalf("DELETE favourite: %d %s", a.status, a.raw)
			}
		}
		if favs(user.ID) != 0 || favs(author.ID) != 1 {
			t.Fatalf("after the user's DELETE: the user %d, the author %d", favs(user.ID), favs(author.ID))
		}
	})
}
