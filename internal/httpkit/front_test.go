package httpkit

import (
	"crypto/tls"
	"net/http/httptest"
	"net/netip"
	"testing"
)

// TestFront: X-Forwarded-For, -Proto and -Host are believed only from a trusted proxy;
// the client address is the nearest untrusted hop; SKRIP_PUBLIC_URL wins for links.
func TestFront(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct {
		name       string
		front      Front
		remote     string
		tls        bool
		hdr        map[string]string
		client     string
		secure     bool
		url        string
		sameOrigin string // an Origin header that counts as this server's
	}{
		{name: "no proxy trusted", front: NewFront("", nil), remote: "10.1.2.3:5000",
			hdr:    map[string]string{"X-Forwarded-For": "198.51.100.9", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"},
			client: "10.1.2.3", url: "http://skrip.test/s/x", sameOrigin: "http://skrip.test"},
		{name: "an untrusted peer's headers", front: NewFront("", proxies), remote: "198.51.100.1:5000",
			hdr:    map[string]string{"X-Forwarded-For": "10.9.9.9", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"},
			client: "198.51.100.1", url: "http://skrip.test/s/x"},
		{name: "a trusted proxy", front: NewFront("", proxies), remote: "10.0.0.2:5000",
			hdr:    map[string]string{"X-Forwarded-For": "203.0.113.5", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "skrip.example.org"},
			client: "203.0.113.5", secure: true, url: "https://skrip.example.org/s/x", sameOrigin: "https://skrip.example.org"},
		{name: "a chain: the client's own entries are not believed", front: NewFront("", proxies), remote: "10.0.0.2:5000",
			hdr:    map[string]string{"X-Forwarded-For": "6.6.6.6, 203.0.113.5, 10.0.0.7"},
			client: "203.0.113.5", url: "http://skrip.test/s/x"},
		{name: "a malformed hop", front: NewFront("", proxies), remote: "10.0.0.2:5000",
			hdr:    map[string]string{"X-Forwarded-For": "203.0.113.5, bogus"},
			client: "10.0.0.2", url: "http://skrip.test/s/x"},
		{name: "IPv6 proxy, IPv4-mapped client", front: NewFront("", proxies), remote: "[::1]:5000",
			hdr:    map[string]string{"X-Forwarded-For": "::ffff:203.0.113.5"},
			client: "203.0.113.5", url: "http://skrip.test/s/x"},
		{name: "TLS direct", front: NewFront("", nil), remote: "198.51.100.1:5000", tls: true,
			client: "198.51.100.1", secure: true, url: "https://skrip.test/s/x"},
		{name: "the public URL wins", front: NewFront("https://public.example/skrip", proxies), remote: "10.0.0.2:5000",
			hdr:    map[string]string{"X-Forwarded-Host": "skrip.example.org"},
			client: "10.0.0.2", url: "https://public.example/skrip/s/x", sameOrigin: "https://public.example"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "http://skrip.test/signin", nil)
			r.RemoteAddr = tc.remote
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, v := range tc.hdr {
				r.Header.Set(k, v)
			}
			if got := tc.front.ClientAddr(r); got != tc.client {
				t.Errorf("ClientAddr = %q, want %q", got, tc.client)
			}
			if got := tc.front.Secure(r); got != tc.secure {
				t.Errorf("Secure = %v, want %v", got, tc.secure)
			}
			if got := tc.front.URL(r, "/s/x"); got != tc.url {
				t.Errorf("URL = %q, want %q", got, tc.url)
			}
			for _, o := range []string{"", "null", "https://evil.example", tc.sameOrigin} {
				r.Header.Set("Origin", o)
				if got, want := tc.front.SameOrigin(r), o != "" && o == tc.sameOrigin; got != want {
					t.Errorf("SameOrigin with Origin %q = %v, want %v", o, got, want)
				}
			}
		})
	}
}
