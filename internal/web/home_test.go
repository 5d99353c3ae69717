package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestHomeForms, without a browser: the editor's categories field saves the tool's
// categories and refuses a bad one beside the field with nothing saved; a form without
// the field keeps them; the star is a plain form that needs the page's token and comes
// back only to a path of this site; a missing category is 404 and the admins' page is
// theirs alone.
func TestHomeForms(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	for name, role := range map[string]string{"bo": "author", "ulla": "user"} {
		if _, err := env.Admin.CreateUser(ctx, name, role, "a good password"); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowserless(t, env.URL)
	csrf := b.signIn("bo", "a good password")
	if status, _, page := b.do("POST", "/editor", url.Values{"csrf": {csrf}, "slug": {"hej"}, "title": {"Hej"}, "source": {echoSource}}, nil); status != http.StatusSeeOther {
		t.Fatalf("creating a tool answered %d:\n%s", status, page)
	}
	categories := func() string {
		tool, err := env.App.Store.Tool(ctx, "hej")
		if err != nil {
			t.Fatal(err)
		}
		cats, err := env.App.Catalog.CategoriesOf(ctx, tool.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cats {
			out = append(out, c.Title)
		}
		return strings.Join(out, ", ")
	}
	status, _, page := b.do("POST", "/editor/hej/info", url.Values{"csrf": {csrf}, "info.title": {"Hej"}, "info.categories": {"Svenska, , Bedömning, svenska"}}, nil)
	if status != http.StatusSeeOther || categories() != "Bedömning, Svenska" {
		t.Fatalf("saving the categories answered %d; the tool has %q:\n%s", status, categories(), page)
	}
	status, _, page = b.do("POST", "/editor/hej/info", url.Values{"csrf": {csrf}, "info.title": {"Hej igen"}, "info.categories": {"Svenska, " + strings.Repeat("x", 61)}}, nil)
	if msg := fieldError(t, page, "info-categories"); status != http.StatusBadRequest || !strings.Contains(msg, "Kategorin går inte att använda: namnet är längre än 60 byte") {
		t.Fatalf("a long category answered %d with %q beside the field", status, msg)
	}
	if tool, _ := env.App.Store.Tool(ctx, "hej"); tool.Title != "Hej" || categories() != "Bedömning, Svenska" {
		t.Fatalf("a refused category saved the title %q or the categories %q", tool.Title, categories())
	}
	if status, _, _ = b.do("POST", "/editor/hej/info", url.Values{"csrf": {csrf}, "info.title": {"Hej"}}, nil); status != http.StatusSeeOther || categories() != "Bedömning, Svenska" {
		t.Fatalf("a form without the field answered %d and left the categories %q", status, categories())
	}
	tool, _ := env.App.Store.Tool(ctx, "hej")
	vs, err := env.App.Store.Versions(ctx, tool.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.Publish(ctx, vs[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := env.Admin.Do(ctx, "PATCH", "/api/v1/categories/svenska", map[string]bool{"approved": true}, nil); err != nil {
		t.Fatal(err)
	}

	u := newBrowserless(t, env.URL)
	ucsrf := u.signIn("ulla", "a good password")
	for _, tc := range []struct {
		form   url.Values
		status int
		to     string
	}{
		{url.Values{"on": {"1"}, "back": {"/"}, "anchor": {"star-c-svenska-hej"}}, http.StatusForbidden, ""},
		{url.Values{"csrf": {ucsrf}, "on": {"1"}, "back": {"//evil.example/x"}, "anchor": {"star-q-hej"}}, http.StatusSeeOther, "/#star-q-hej"},
		{url.Values{"csrf": {ucsrf}, "on": {"1"}, "back": {"/?q=hej#x"}, "anchor": {`"><script>`}}, http.StatusSeeOther, "/?q=hej"},
		{url.Values{"csrf": {ucsrf}, "on": {"0"}}, http.StatusSeeOther, "/tools/hej"},
	} {
		status, h, page := u.do("POST", "/tools/hej/favourite", tc.form, nil)
		if status != tc.status || (tc.to != "" && h.Get("Location") != tc.to) {
			t.Errorf("starring with %v answered %d to %q; want %d to %q\n%s", tc.form, status, h.Get("Location"), tc.status, tc.to, page)
		}
	}
	if status, _, _ := u.do("POST", "/tools/nope/favourite", url.Values{"csrf": {ucsrf}, "on": {"1"}}, nil); status != http.StatusNotFound {
		t.Errorf("starring a missing tool answered %d", status)
	}
	_, _, page = u.do("GET", "/", nil, nil)
	if !strings.Contains(page, `aria-pressed="false"`) || strings.Contains(page, "data-recent") {
		t.Errorf("after starring and un-starring, the home page:\n%s", page)
	}
	if status, _, _ := u.do("GET", "/categories/bedomning", nil, nil); status != http.StatusNotFound {
		t.Errorf("a user opening a proposal's page: %d", status)
	}
	if status, _, page := u.do("GET", "/categories/svenska", nil, nil); status != http.StatusOK || !strings.Contains(page, `href="/tools/hej"`) {
		t.Errorf("a user opening an approved category's page: %d\n%s", status, page)
	}
	if status, _, page := u.do("GET", "/admin/categories", nil, nil); status != http.StatusForbidden || !strings.Contains(page, "Det är bara administratörer som får göra detta.") {
		t.Errorf("a user opening the categories page: %d\n%s", status, page)
	}
	if status, _, _ := u.do("POST", "/admin/categories", url.Values{"csrf": {ucsrf}, "title": {"Fysik"}}, nil); status != http.StatusForbidden {
		t.Errorf("a user adding a category: %d", status)
	}
}
