package web_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/client"
)

const noopTool = "def run_tool(input_dir, output_dir):\n    return {\"outputs\": [{\"kind\": \"notice\", \"level\": \"info\", \"message\": \"Klart\"}]}\n"

// homeView is what TestBrowserHome reads from the home page in one evaluation.
type homeView struct {
	Favourites []string            `json:"favourites"`
	Recent     []string            `json:"recent"`
	Sections   map[string][]string `json:"sections"` // data-category ("" for Other) -> card titles
	Headings   []string            `json:"headings"`
	Nav        []string            `json:"nav"`
	Pressed    map[string]string   `json:"pressed"` // slug -> the first star's aria-pressed
	Scroll     int64               `json:"scroll"`
	Width      int64               `json:"width"`
	Cards      []string            `json:"cards"`
}

const readHome = `(() => {
  const all = (s, r) => [...(r || document).querySelectorAll(s)];
  const titles = r => r ? all(".card h2 a, .card h3 a", r).map(a => a.textContent) : [];
  const sections = {};
  all("section[data-category]").forEach(s => sections[s.dataset.category] = titles(s));
  const pressed = {};
  all(".card[data-tool]").forEach(c => { if (!(c.dataset.tool in pressed)) pressed[c.dataset.tool] = c.querySelector("button.star").getAttribute("aria-pressed"); });
  return {
    favourites: titles(document.querySelector("[data-favourites]")),
    recent: titles(document.querySelector("[data-recent]")),
    sections: sections,
    headings: all("main section[data-category] > h2").map(h => h.textContent),
    nav: all("[data-category-nav] a").map(a => a.getAttribute("href")),
    pressed: pressed,
    scroll: document.documentElement.scrollWidth, width: window.innerWidth,
    cards: titles(document.querySelector("main")),
  };
})()`

func readHomeView(t *testing.T, ctx context.Context) homeView {
	t.Helper()
	var v homeView
	run(t, ctx, chromedp.Evaluate(readHome, &v))
	return v
}

// TestBrowserHome, at 1280 and 390 px, in Swedish: an author proposes a category in the
// editor and an admin approves it on the categories page; a teacher's home page lists
// the catalogue by category in Swedish order (Apa, Zebra, Ärlig) with the demo tools
// under "Övrigt", stars a tool (a form, aria-pressed) and finds it among the favourites,
// un-stars it there, stars and un-stars a tool on its own page, sees the tool they ran
// under "Senast använda", browses a category's page, and finds tools by their category's
// title in the search; nothing scrolls sideways.
func TestBrowserHome(t *testing.T) {
	s := startSite(t)
	defer s.close()
	ctx := context.Background()
	if _, err := s.admin.CreateUser(ctx, "skolchef", "admin", password); err != nil {
		t.Fatal(err)
	}
	if err := s.admin.Do(ctx, "POST", "/api/v1/categories", map[string]string{"title": "Svenska"}, nil); err != nil {
		t.Fatal(err)
	}
	authorAPI := s.userClient(t, "author")
	for _, tool := range [][2]string{{"arlig", "Ärlig"}, {"zebra", "Zebra"}, {"apa", "Apa"}} {
		if _, _, err := authorAPI.AddTool(ctx, client.NewTool{Slug: tool[0], Title: tool[1], Source: noopTool, Publish: true, Categories: []string{"Svenska"}}); err != nil {
			t.Fatal(err)
		}
	}

	// The author proposes Bedömning for Ärlig in the editor; the admin approves it.
	author := s.as(t, "author")
	s.useLang(t, author, "sv")
	run(t, author, chromedp.Navigate(s.base+"/editor/arlig"), chromedp.WaitVisible("#info-categories", chromedp.ByQuery))
	if v := text(t, author, "#info-categories-hint, [id^=info-categories] + .hint, form[action='/editor/arlig/info']"); !strings.Contains(v, "Kategorier som finns: Svenska") {
		t.Errorf("the editor's info form says %q; want the categories there are", v)
	}
	run(t, author, chromedp.SetValue("#info-categories", "Svenska, Bedömning", chromedp.ByQuery),
		chromedp.Click("form[action='/editor/arlig/info'] button[type=submit]", chromedp.ByQuery))
	waitPath(t, author, "/editor/arlig?info=saved")
	var kept string
	run(t, author, chromedp.WaitVisible("#info-categories", chromedp.ByQuery), chromedp.Value("#info-categories", &kept, chromedp.ByQuery))
	if kept != "Bedömning, Svenska" {
		t.Errorf("after saving, the editor shows the categories %q", kept)
	}
	admin := s.as(t, "skolchef")
	s.useLang(t, admin, "sv")
	run(t, admin, chromedp.Navigate(s.base+"/"), chromedp.Click("a[href='/admin/categories']", chromedp.ByQuery),
		chromedp.WaitVisible("[data-proposed] li[data-category=bedomning]", chromedp.ByQuery))
	run(t, admin, chromedp.Click("[data-proposed] li[data-category=bedomning] button[type=submit]", chromedp.ByQuery),
		chromedp.WaitVisible("[data-approved] li[data-category=bedomning]", chromedp.ByQuery))

	s.useLang(t, s.as(t, "teacher"), "sv")
	for i, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			// Fresh tabs for each width (the language is the browser's): a tab lives 90 s.
			teacher, admin := s.as(t, "teacher"), s.as(t, "skolchef")
			home := func(t *testing.T) homeView {
				t.Helper()
				run(t, teacher, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("[data-favourites]", chromedp.ByQuery))
				return readHomeView(t, teacher)
			}
			run(t, teacher, chromedp.EmulateViewport(vp.width, vp.height))
			v := home(t)
			if i == 0 {
				// Nothing run yet: no recently used tools. A run makes Zebra one.
				if len(v.Recent) != 0 {
					t.Errorf("before any run, the recently used tools are %q", v.Recent)
				}
				run(t, teacher, chromedp.Navigate(s.base+"/tools/zebra"), chromedp.WaitVisible("form[action='/tools/zebra/runs'] button[type=submit]", chromedp.ByQuery),
					chromedp.Click("form[action='/tools/zebra/runs'] button[type=submit]", chromedp.ByQuery))
				waitPath(t, teacher, "/runs/")
				v = home(t)
			}
			if !slices.Equal(v.Recent, []string{"Zebra"}) {
				t.Errorf("after running Zebra, the recently used tools are %q", v.Recent)
			}
			if want := []string{"Apa", "Zebra", "Ärlig"}; !slices.Equal(v.Sections["svenska"], want) {
				t.Errorf("the section Svenska lists %q; want %q (Swedish order)", v.Sections["svenska"], want)
			}
			if !slices.Equal(v.Sections["bedomning"], []string{"Ärlig"}) || !slices.Contains(v.Sections[""], "HTML till PDF") {
				t.Errorf("sections %v; want Ärlig under Bedömning, the demo tools under Övrigt", v.Sections)
			}
			if want := []string{"Bedömning", "Svenska", "Övrigt"}; !slices.Equal(v.Headings, want) {
				t.Errorf("the sections are %q; want %q", v.Headings, want)
			}
			if !slices.Equal(v.Nav, []string{"/categories/bedomning", "/categories/svenska"}) {
				t.Errorf("the category links are %q", v.Nav)
			}
			if len(v.Favourites) != 0 || v.Pressed["zebra"] != "false" {
				t.Errorf("before starring: favourites %q, Zebra's star pressed %q", v.Favourites, v.Pressed["zebra"])
			}
			if v.Scroll > v.Width {
				t.Errorf("the home page is %d px wide at %d px", v.Scroll, v.Width)
			}

			// Star Zebra: it is among the favourites, pressed; un-star it there.
			run(t, teacher, chromedp.Click("[data-category=svenska] [data-tool=zebra] button.star", chromedp.ByQuery),
				chromedp.WaitVisible("[data-favourites] [data-tool=zebra]", chromedp.ByQuery))
			v = readHomeView(t, teacher)
			if !slices.Equal(v.Favourites, []string{"Zebra"}) || v.Pressed["zebra"] != "true" {
				t.Errorf("after starring: favourites %q, Zebra's star pressed %q", v.Favourites, v.Pressed["zebra"])
			}
			shoot(t, teacher, "home-sv-"+vp.name)
			run(t, teacher, chromedp.Click("[data-favourites] [data-tool=zebra] button.star", chromedp.ByQuery),
				chromedp.WaitNotPresent("[data-favourites] [data-tool=zebra]", chromedp.ByQuery))
			if v = readHomeView(t, teacher); len(v.Favourites) != 0 || v.Pressed["zebra"] != "false" {
				t.Errorf("after un-starring: favourites %q, Zebra's star pressed %q", v.Favourites, v.Pressed["zebra"])
			}

			// The star on a tool's page.
			run(t, teacher, chromedp.Navigate(s.base+"/tools/apa"), chromedp.WaitVisible("main form.star button[aria-pressed=false]", chromedp.ByQuery),
				chromedp.Click("main form.star button", chromedp.ByQuery), chromedp.WaitVisible("main form.star button[aria-pressed=true]", chromedp.ByQuery))
			if u := location(t, teacher); !strings.Contains(u, "/tools/apa") {
				t.Errorf("starring on the tool page went to %s", u)
			}
			if v = home(t); !slices.Equal(v.Favourites, []string{"Apa"}) {
				t.Errorf("after starring Apa on its page, the favourites are %q", v.Favourites)
			}
			run(t, teacher, chromedp.Navigate(s.base+"/tools/apa"), chromedp.WaitVisible("main form.star button[aria-pressed=true]", chromedp.ByQuery),
				chromedp.Click("main form.star button", chromedp.ByQuery), chromedp.WaitVisible("main form.star button[aria-pressed=false]", chromedp.ByQuery))

			// Browse a category from the home page.
			home(t)
			run(t, teacher, chromedp.Click("[data-category-nav] a[href='/categories/svenska']", chromedp.ByQuery),
				chromedp.WaitVisible("ul[data-category=svenska]", chromedp.ByQuery))
			v = readHomeView(t, teacher)
			if h1 := text(t, teacher, "main h1"); h1 != "Svenska" || !slices.Equal(v.Cards, []string{"Apa", "Zebra", "Ärlig"}) {
				t.Errorf("the category page %q lists %q", h1, v.Cards)
			}
			if v.Scroll > v.Width {
				t.Errorf("the category page is %d px wide at %d px", v.Scroll, v.Width)
			}

			// The checks of TestAccessibility on the pages this test makes: the home page
			// with categories, a category's page and the admins' categories page.
			run(t, admin, chromedp.EmulateViewport(vp.width, vp.height))
			for _, p := range []struct {
				tab  context.Context
				path string
			}{{teacher, "/"}, {teacher, "/categories/svenska"}, {admin, "/admin/categories"}} {
				for _, f := range audit(t, p.tab, s.base+p.path, "sv", true) {
					t.Errorf("%s [%s px] %s", p.path, vp.name, f)
				}
			}
			shoot(t, admin, "categories-sv-"+vp.name)

			// Search finds the category's title.
			run(t, teacher, chromedp.Navigate(s.base+"/?q=SVENSKA"), chromedp.WaitVisible("main .cards", chromedp.ByQuery))
			v = readHomeView(t, teacher)
			var mine []string
			for _, c := range v.Cards {
				if c == "Apa" || c == "Zebra" || c == "Ärlig" {
					mine = append(mine, c)
				}
			}
			if !slices.Equal(mine, []string{"Apa", "Zebra", "Ärlig"}) {
				t.Errorf("searching SVENSKA lists %q", v.Cards)
			}
		})
	}
}
