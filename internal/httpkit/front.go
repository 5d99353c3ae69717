package httpkit

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Front is what stands between the server and its clients: the proxies whose
// X-Forwarded-For, X-Forwarded-Proto and X-Forwarded-Host are believed
// (SKRIP_TRUSTED_PROXIES), and the address users reach the server at (SKRIP_PUBLIC_URL).
// A header from any other peer is ignored: anyone can send one, so believing it would let
// a client choose the address it is throttled under, or the host a share link points to.
// The zero Front trusts no proxy and has no public URL.
type Front struct {
	trusted []netip.Prefix
	public  string
}

// NewFront returns the Front of these settings. publicURL is empty or an absolute http(s)
// URL without a trailing slash (config checks it).
func NewFront(publicURL string, trusted []netip.Prefix) Front {
	return Front{trusted: trusted, public: strings.TrimSuffix(publicURL, "/")}
}

// trusts reports whether a is one of the trusted proxies.
func (f Front) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range f.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peer is the address of r's direct peer, invalid when RemoteAddr is not an IP address
// (a test's recorder).
func peer(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}

// viaProxy reports whether r came through a trusted proxy, whose X-Forwarded-* headers
// are then believed.
func (f Front) viaProxy(r *http.Request) bool {
	a := peer(r)
	return a.IsValid() && f.trusts(a)
}

// ClientAddr is the address of the client that made r: its peer, or, when the peer is a
// trusted proxy, the nearest address in X-Forwarded-For that is not one (read from the
// right, as each proxy appends the address it saw; the entries left of an untrusted one
// are the client's to invent). It is "" only when even the peer's address is unknown.
func (f Front) ClientAddr(r *http.Request) string {
	a := peer(r)
	if !a.IsValid() {
		return r.RemoteAddr
	}
	if !f.trusts(a) {
		return a.String()
	}
	hops := forwardedFor(r)
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.Trim(hops[i], "[]"))
		if err != nil {
			break // a malformed hop: trust nothing left of it
		}
		a = h.Unmap()
		if !f.trusts(a) {
			break
		}
	}
	return a.String()
}

func forwardedFor(r *http.Request) []string {
	var out []string
	for _, line := range r.Header.Values("X-Forwarded-For") {
		for _, h := range strings.Split(line, ",") {
			if h = strings.TrimSpace(h); h != "" {
				out = append(out, h)
			}
		}
	}
	return out
}

// Secure reports whether the client reached the server over TLS: directly, or to a
// trusted proxy that says so in X-Forwarded-Proto. Cookies are then Secure.
func (f Front) Secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return f.viaProxy(r) && firstValue(r.Header.Get("X-Forwarded-Proto")) == "https"
}

// Origin is the scheme and host users reach the server at, as a browser's Origin header
// names it: SKRIP_PUBLIC_URL's when set, else r's own, with what a trusted proxy says in
// X-Forwarded-Proto and X-Forwarded-Host.
func (f Front) Origin(r *http.Request) string {
	if f.public != "" {
		scheme, rest, _ := strings.Cut(f.public, "://")
		host, _, _ := strings.Cut(rest, "/")
		return scheme + "://" + host
	}
	scheme := "http"
	if f.Secure(r) {
		scheme = "https"
	}
	host := r.Host
	if f.viaProxy(r) {
		if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" {
			host = h
		}
	}
	return scheme + "://" + host
}

// URL is the absolute address of path (which starts with a slash) for the client of r:
// under SKRIP_PUBLIC_URL when set (a path there included), else under Origin.
func (f Front) URL(r *http.Request, path string) string {
	if f.public != "" {
		return f.public + path
	}
	return f.Origin(r) + path
}

// SameOrigin reports whether r carries an Origin header naming this server (Origin).
// A browser sends one with every POST; a missing one does not count as the same.
func (f Front) SameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o != "" && o != "null" && strings.EqualFold(o, f.Origin(r))
}

func firstValue(h string) string {
	v, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(v)
}
