package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestBrowserLanguage: the UI follows the browser's language, and the switch at the foot
// of every page changes it for every later page, at a laptop's and a phone's width.
func TestBrowserLanguage(t *testing.T) {
	s := startSite(t)
	defer s.close()
	type page struct{ Lang, Nav, Skip, Path string }
	read := func(t *testing.T, ctx context.Context) page {
		t.Helper()
		var p page
		run(t, ctx, chromedp.WaitVisible("footer.foot", chromedp.ByQuery), chromedp.Evaluate(`({
			Lang: document.documentElement.lang,
			Nav: document.querySelector("nav[aria-label] a").textContent,
			Skip: document.querySelector("a.skip").textContent,
			Path: location.pathname + location.search})`, &p))
		return p
	}
	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			ctx := s.as(t, "teacher")
			run(t, ctx, chromedp.EmulateViewport(vp.width, vp.height))
			s.useLang(t, ctx, "sv")
			run(t, ctx, chromedp.Navigate(s.base+"/runs"))
			if p := read(t, ctx); p.Lang != "sv" || p.Nav != "Verktyg" || p.Skip != "Hoppa till innehållet" {
				t.Fatalf("in Swedish the page reads %+v", p)
			}
			run(t, ctx, chromedp.Click(`footer.foot a[hreflang="en"]`, chromedp.ByQuery))
			waitLang(t, ctx, "en")
			if p := read(t, ctx); p.Lang != "en" || p.Nav != "Tools" || p.Skip != "Skip to content" || p.Path != "/runs" {
				t.Fatalf("after picking English the page reads %+v", p)
			}
			// A new tab of the same browser keeps the pick.
			tab := s.tab(t, ctx)
			run(t, tab, chromedp.Navigate(s.base+"/"))
			if p := read(t, tab); p.Lang != "en" {
				t.Fatalf("a new tab reads %+v", p)
			}
			run(t, ctx, chromedp.Click(`footer.foot a[hreflang="sv"]`, chromedp.ByQuery))
			waitLang(t, ctx, "sv")
			if p := read(t, ctx); p.Nav != "Verktyg" || p.Path != "/runs" {
				t.Fatalf("after picking Swedish again the page reads %+v", p)
			}
		})
	}
}

// waitLang waits until the tab shows a page in tag.
func waitLang(t *testing.T, ctx context.Context, tag string) {
	t.Helper()
	run(t, ctx, chromedp.WaitVisible("html[lang="+tag+"] footer.foot", chromedp.ByQuery))
}

// TestLanguageChoice: a page is in the browser's language, Swedish when it asks for
// neither, and the switch sets a cookie that wins and goes back only to a page of this
// site.
func TestLanguageChoice(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	b := newBrowserless(t, env.URL)
	for accept, want := range map[string]string{"": `<html lang="sv">`, "en-US,en;q=0.9": `<html lang="en">`,
		"sv-SE": `<html lang="sv">`, "de-DE": `<html lang="sv">`} {
		if status, _, body := b.do("GET", "/signin", nil, http.Header{"Accept-Language": {accept}}); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("Accept-Language %q: %d, want %s in:\n%.300s", accept, status, want, body)
		}
	}
	for back, want := range map[string]string{"/runs?status=failed": "/runs?status=failed", "//evil.example/x": "/",
		"/\\evil.example": "/", "https://evil.example": "/", "": "/"} {
		status, h, _ := b.do("GET", "/lang/en?back="+url.QueryEscape(back), nil, nil)
		if status != http.StatusSeeOther || h.Get("Location") != want {
			t.Errorf("back=%q: %d to %q; want 303 to %q", back, status, h.Get("Location"), want)
		}
		if c := h.Get("Set-Cookie"); !strings.Contains(c, "skrip_lang=en") || !strings.Contains(c, "HttpOnly") {
			t.Errorf("back=%q: cookie %q", back, c)
		}
	}
	// The picked English wins over a Swedish browser.
	if _, _, body := b.do("GET", "/signin", nil, http.Header{"Accept-Language": {"sv-SE"}}); !strings.Contains(body, `<html lang="en">`) {
		t.Errorf("after picking English a Swedish browser gets:\n%.300s", body)
	}
	if status, _, _ := b.do("GET", "/lang/fr", nil, nil); status != http.StatusNotFound {
		t.Errorf("/lang/fr answered %d; want 404", status)
	}
}
