package signon

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzFlowCookie: whatever a browser sends as the flow cookie, openFlow never panics,
// and opens only what the key sealed.
func FuzzFlowCookie(f *testing.F) {
	key := cookieKey("secret")
	good := newFlow("/runs", time.Unix(2e9, 0)).seal(key)
	f.Add(good)
	f.Add("")
	f.Add(".")
	f.Add("e30.x")
	f.Fuzz(func(t *testing.T, v string) {
		fl, ok := openFlow(key, v, time.Unix(1e9, 0))
		if !ok {
			return
		}
		if v != good && fl.seal(key) != v {
			t.Fatalf("opened a cookie the key did not seal: %q", v)
		}
		if LocalPath(fl.Next) != fl.Next {
			t.Fatalf("opened a flow whose next %q is not local", fl.Next)
		}
	})
}

// FuzzLocalPath: the path a sign-on returns to is always one on this site.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/runs", "//evil.example", "/\\evil", "https://evil.example", "/a\r\nb", "", "/\t/evil.example", "/%2F/evil.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := LocalPath(s)
		if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.Contains(p, "\\") || strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("LocalPath(%q) = %q, not a path on this site", s, p)
		}
		// What a browser does with it: drop tabs and newlines, then resolve it against
		// this site. It must stay on this site.
		if u, err := url.Parse("https://skrip.example" + p); err != nil || u.Host != "skrip.example" {
			t.Fatalf("LocalPath(%q) = %q leads to %v (%v)", s, p, u, err)
		}
	})
}
