package cli

import "testing"

// TestPageOnServer (from a review): the CLI hands a browser opener only an http(s) page
// on the server's own host, never whatever the server sent.
func TestPageOnServer(t *testing.T) {
	for _, tc := range []struct {
		server, page string
		want         bool
	}{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/cli/login?code=BCDF-GHJK", true},
		{"https://skrip.skola.se", "https://SKRIP.skola.se/cli/login?code=X", true},
		{"https://skrip.skola.se", "https://evil.example/cli/login", false},
		{"https://skrip.skola.se", "file:///etc/passwd", false},
		{"https://skrip.skola.se", "javascript:alert(1)", false},
		{"https://skrip.skola.se", "calc.exe", false},
		{"https://skrip.skola.se", "", false},
	} {
		if got := pageOnServer(tc.server, tc.page); got != tc.want {
			t.Errorf("pageOnServer(%q, %q) = %v, want %v", tc.server, tc.page, got, tc.want)
		}
	}
}
