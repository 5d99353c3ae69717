package signon

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// FlowCookie is the name of the cookie that carries one sign-on from its start to its
// callback: nothing is kept on the server, so no client can fill it with sign-ons it
// never finishes.
const FlowCookie = "skrip_oidc"

// maxNext is the longest path a sign-on returns to; a longer one returns to "/".
const maxNext = 1024

// flow is what the callback must match: the state sent to the provider, the nonce its ID
// token must carry, the PKCE verifier of the code challenge, the page to return to and
// when the sign-on expires.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"r"`
	Expires  int64  `json:"e"` // Unix seconds
}

func newFlow(next string, expires time.Time) flow {
	if len(next) > maxNext {
		next = "/"
	}
	return flow{State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Next: LocalPath(next), Expires: expires.Unix()}
}

func random() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// seal is f as a cookie value: its JSON and an HMAC of it under key, so that a browser
// cannot make one the server did not start (nor lengthen one's life).
func (f flow) seal(key []byte) string {
	b, _ := json.Marshal(f)
	body := base64.RawURLEncoding.EncodeToString(b)
	return body + "." + sign(key, body)
}

// openFlow is the flow of a cookie value that key signed and that has not expired at now.
func openFlow(key []byte, v string, now time.Time) (flow, bool) {
	body, mac, ok := strings.Cut(v, ".")
	if !ok || len(v) > 4096 || !hmac.Equal([]byte(mac), []byte(sign(key, body))) {
		return flow{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return flow{}, false
	}
	var f flow
	if json.Unmarshal(b, &f) != nil || f.State == "" || f.Verifier == "" || now.Unix() > f.Expires {
		return flow{}, false
	}
	f.Next = LocalPath(f.Next)
	return f, true
}

func (f flow) stateIs(s string) bool {
	return subtle.ConstantTimeCompare([]byte(f.State), []byte(s)) == 1
}
func (f flow) nonceIs(s string) bool {
	return subtle.ConstantTimeCompare([]byte(f.Nonce), []byte(s)) == 1
}

func sign(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// cookieKey is the key flow cookies are signed with: derived from the client secret,
// which every node of a cluster shares (a sign-on may return to another node than it
// started on), or random for a public client without one (one node).
func cookieKey(secret string) []byte {
	if secret == "" {
		b := make([]byte, 32)
		rand.Read(b)
		return b
	}
	sum := sha256.Sum256([]byte("skrip sign-on flow cookie\x00" + secret))
	return sum[:]
}

// LocalPath returns next when it is a path on this site, else "/": never "//host" or
// "/\host", which browsers take for another site, nor anything with a scheme.
func LocalPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	for _, c := range next {
		if c < 0x20 || c == 0x7f {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}
