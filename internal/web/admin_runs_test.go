package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

var (
	auditRow  = regexp.MustCompile(`<tr data-run="([^"]+)">\s*<td[^>]*>.*?</td>\s*<td [^>]*data-user>([^<]*)</td>`)
	auditStat = regexp.MustCompile(`data-status="([^"]+)"`)
	olderLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">Äldre körningar</a>`)
)

// auditPage is what one answer of /admin/runs lists: the runs' ids, their users and
// statuses in order, and the "Older runs" link.
type auditPage struct {
	status         int
	body           string
	ids, users, st []string
	next           string
}

func getAudit(t *testing.T, b *browserless, path string) auditPage {
	t.Helper()
	status, _, body := b.do("GET", path, nil, nil)
	p := auditPage{status: status, body: html.UnescapeString(body)}
	for _, m := range auditRow.FindAllStringSubmatch(body, -1) {
		p.ids, p.users = append(p.ids, m[1]), append(p.users, m[2])
	}
	for _, m := range auditStat.FindAllStringSubmatch(body, -1) {
		p.st = append(p.st, m[1])
	}
	if m := olderLink.FindStringSubmatch(body); m != nil {
		p.next = html.UnescapeString(m[1])
	}
	return p
}

// TestAdminRunsPage: an admin lists every user's runs with who, which tool and version,
// the status and the input manifest; the user, tool and status filters narrow the list
// and survive paging; a filter the services refuse shows on the page with the error
// table's status; anyone else gets 403.
func TestAdminRunsPage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, be apptest.Backend) {
		env := apptest.New(t, be)
		ctx := context.Background()
		users := map[string]client.CreatedUser{}
		for _, u := range [][2]string{{"root", "admin"}, {"ada", "user"}, {"bob", "user"}} {
			cu, err := env.Admin.CreateUser(ctx, u[0], u[1], "a good password")
			if err != nil {
				t.Fatal(err)
			}
			users[u[0]] = cu
		}
		tools := map[string]client.Tool{}
		for _, slug := range []string{"probe", "other"} {
			if _, _, err := env.Admin.CreateTool(ctx, slug, strings.ToUpper(slug[:1])+slug[1:], "", "def run_tool(i, o):\n    return 'hej'\n", true); err != nil {
				t.Fatal(err)
			}
			tl, err := env.Admin.ToolOf(ctx, slug)
			if err != nil {
				t.Fatal(err)
			}
			tools[slug] = tl.Tool
		}
		// The records go straight into the store: paging needs more runs than a page
		// holds, and one damaged record, which no run would leave.
		now := time.Now()
		add := func(user, tool, status, manifest string) string {
			t.Helper()
			id := ids.New("r")
			err := env.App.Store.CreateRun(ctx, store.Run{ID: id, ToolID: tools[tool].ID, VersionID: *tools[tool].PublishedVersionID,
				UserID: users[user].ID, Context: "default", Kind: "initial", Status: status, Inputs: "{}", Outputs: "[]",
				NextActions: "[]", Artifacts: "[]", InputManifest: manifest, CreatedAt: now})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		var adaDone []string
		for i := range 55 {
			adaDone = append(adaDone, add("ada", "probe", store.StatusSucceeded, fmt.Sprintf(`{"files":[{"name":"elever-%d.csv","bytes":%d}]}`, i, 1000+i)))
		}
		adaFailed := add("ada", "probe", store.StatusFailed, `{"files":[]}`)
		bobOther := add("bob", "other", store.StatusSucceeded, `{"files":[{"name":"betyg.xlsx","bytes":20480},{"name":"anteckningar.txt","bytes":12}]}`)
		bobCorrupt := add("bob", "probe", store.StatusFailed, `{"files": not json`)
		newestFirst := func(ids ...string) []string {
			out := slices.Clone(ids)
			slices.Sort(out)
			slices.Reverse(out)
			return out
		}

		root := newBrowserless(t, env.URL)
		root.signIn("root", "a good password")

		// Everyone's runs, newest first, a page at a time.
		all := getAudit(t, root, "/admin/runs")
		if all.status != http.StatusOK || len(all.ids) != 50 || all.next == "" {
			t.Fatalf("the unfiltered list answered %d with %d runs and older link %q:\n%s", all.status, len(all.ids), all.next, all.body)
		}
		if want := newestFirst(append(adaDone, adaFailed, bobOther, bobCorrupt)...)[:50]; !slices.Equal(all.ids, want) {
			t.Fatalf("the first page lists %v; want %v", all.ids, want)
		}
		if !strings.Contains(all.body, `<a href="/admin/runs" aria-current="page">Alla körningar</a>`) {
			t.Fatalf("the admin navigation does not mark the page:\n%s", all.body)
		}
		// Bob's run of other: his name, the tool, its version, the status and each file
		// of the manifest with its size.
		row := rowOf(t, all.body, bobOther)
		for _, want := range []string{"data-user>bob</td>", "Other", "(other)", "<code data-version>" + *tools["other"].PublishedVersionID + "</code>",
			`data-status="succeeded"`, "Klar", `<span data-file>betyg.xlsx</span>`, `data-bytes="20480">20,5 kB`,
			`<span data-file>anteckningar.txt</span>`, `data-bytes="12">12 byte`, `href="/runs/` + bobOther + `"`} {
			if !strings.Contains(row, want) {
				t.Fatalf("bob's run of other lacks %q:\n%s", want, row)
			}
		}
		// A damaged manifest says so in its row, and the others still show.
		if row := rowOf(t, all.body, bobCorrupt); !strings.Contains(row, "gick inte att läsa") || !strings.Contains(row, "data-user>bob</td>") {
			t.Fatalf("the run with a damaged manifest reads:\n%s", row)
		}
		if row := rowOf(t, all.body, adaFailed); !strings.Contains(row, "inga filer") {
			t.Fatalf("a run without files reads:\n%s", row)
		}

		// The filters narrow the list, and the older link keeps them.
		cases := []struct {
			name, query string
			want        []string
			user        string // the user field as the form shows it afterwards
		}{
			{"by user, by name", "user=bob", newestFirst(bobOther, bobCorrupt), "bob"},
			{"by user, by id", "user=" + users["bob"].ID, newestFirst(bobOther, bobCorrupt), "bob"},
			{"by tool", "tool=other", []string{bobOther}, ""},
			{"by tool, by id", "tool=" + tools["other"].ID, []string{bobOther}, ""},
			{"by status", "status=failed", newestFirst(adaFailed, bobCorrupt), ""},
			{"by user and status", "user=ada&status=failed", []string{adaFailed}, "ada"},
			{"by user, tool and status", "user=bob&tool=probe&status=failed", []string{bobCorrupt}, "bob"},
			{"nothing matches", "user=bob&status=cancelled", nil, "bob"},
		}
		for _, c := range cases {
			p := getAudit(t, root, "/admin/runs?"+c.query)
			if p.status != http.StatusOK || !slices.Equal(p.ids, c.want) || p.next != "" {
				t.Fatalf("%s: answered %d with %v (older %q); want %v:\n%s", c.name, p.status, p.ids, p.next, c.want, p.body)
			}
			if !strings.Contains(p.body, `name="user" list="f-users" value="`+c.user+`"`) {
				t.Fatalf("%s: the user field does not read %q:\n%s", c.name, c.user, p.body)
			}
		}
		if p := getAudit(t, root, "/admin/runs?user=bob&status=cancelled"); !strings.Contains(p.body, "Ingen körning matchar filtret") {
			t.Fatalf("an empty filtered list reads:\n%s", p.body)
		}

		p := getAudit(t, root, "/admin/runs?user=ada&status=succeeded")
		if len(p.ids) != 50 || !slices.Equal(p.ids, newestFirst(adaDone...)[:50]) {
			t.Fatalf("ada's succeeded runs, page 1: %v", p.ids)
		}
		if !strings.HasPrefix(p.next, "/admin/runs?before=") || !strings.HasSuffix(p.next, "&status=succeeded&user=ada") {
			t.Fatalf("the older link %q does not keep the filter", p.next)
		}
		p2 := getAudit(t, root, p.next)
		if p2.status != http.StatusOK || !slices.Equal(p2.ids, newestFirst(adaDone...)[50:]) || p2.next != "" {
			t.Fatalf("ada's succeeded runs, page 2, answered %d with %v (older %q)", p2.status, p2.ids, p2.next)
		}
		for _, u := range p2.users {
			if u != "ada" {
				t.Fatalf("page 2 of ada's runs lists a run of %s", u)
			}
		}
		for _, s := range p2.st {
			if s != store.StatusSucceeded {
				t.Fatalf("page 2 of ada's succeeded runs lists one %s", s)
			}
		}

		// A filter the services refuse: the page, its form as sent, and the refusal,
		// with the table's status.
		refusals := []struct {
			query  string
			status int
			msg    string
		}{
			// In the page's language (Swedish), from the refusal's reason and details.
			{"status=bogus&user=ada", http.StatusBadRequest, "Det finns ingen status ”bogus”. Välj en status i listan."},
			{"before=!!!", http.StatusBadRequest, "länken kommer inte från servern"},
			{"user=nobody", http.StatusNotFound, "Det finns ingen användare ”nobody”."},
			{"tool=nothing", http.StatusNotFound, "Det finns inget sådant verktyg (”nothing”)."},
		}
		for _, c := range refusals {
			p := getAudit(t, root, "/admin/runs?"+c.query)
			if p.status != c.status || !strings.Contains(p.body, `role="alert" data-filter-error>`) || !strings.Contains(p.body, c.msg) ||
				!strings.Contains(p.body, `id="f-status"`) || len(p.ids) != 0 {
				t.Fatalf("%s answered %d; want %d and the page with %q:\n%s", c.query, p.status, c.status, c.msg, p.body)
			}
		}
		if p := getAudit(t, root, "/admin/runs?status=bogus&user=ada"); !strings.Contains(p.body, `value="ada"`) {
			t.Fatalf("the refused form does not keep the user typed:\n%s", p.body)
		}

		// Anyone else: the error page, 403, and no link to it.
		ada := newBrowserless(t, env.URL)
		ada.signIn("ada", "a good password")
		for _, path := range []string{"/admin/runs", "/admin/runs?user=ada", "/admin/runs?status=bogus"} {
			status, _, body := ada.do("GET", path, nil, nil)
			if status != http.StatusForbidden || !strings.Contains(html.UnescapeString(body), "Det här kräver rollen admin.") || strings.Contains(body, "data-run=") {
				t.Fatalf("a user opening %s got %d:\n%s", path, status, body)
			}
		}
		if _, _, body := ada.do("GET", "/runs", nil, nil); strings.Contains(body, `href="/admin/runs"`) {
			t.Fatalf("a user's navigation links to /admin/runs:\n%s", body)
		}
	})
}

// rowOf is the table row of run id in page.
func rowOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<tr data-run="`+id+`">`)
	if i < 0 {
		t.Fatalf("no row for run %s:\n%s", id, page)
	}
	j := strings.Index(page[i:], "</tr>")
	return page[i : i+j]
}
