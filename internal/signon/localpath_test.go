package signon

import "testing"

// TestLocalPathNoOtherSite: a return path is kept only when no browser can read it as another site
// (the tab case came from a review: "/\t/evil.com" was sent on, and browsers drop the tab).
func TestLocalPathNoOtherSite(t *testing.T) {
	for in, want := range map[string]string{
		"/":                         "/",
		"/tools/x?tab=2#top":        "/tools/x?tab=2#top",
		"/cli/login?code=BCDF-GHJK": "/cli/login?code=BCDF-GHJK",
		"":                          "/",
		"tools":                     "/",
		"//evil.com":                "/",
		"/\\evil.com":               "/",
		"/x\\y":                     "/",
		"/\t/evil.com":              "/",
		"/\n/evil.com":              "/",
		"/\r/evil.com":              "/",
		"/\x00x":                    "/",
		"/\x7f/evil.com":            "/",
		"https://evil.com":          "/",
		"/%2F/evil.com":             "/", // decodes to //evil.com: refused, to be safe
	} {
		if got := LocalPath(in); got != want {
			t.Errorf("LocalPath(%q) = %q, want %q", in, got, want)
		}
	}
}
