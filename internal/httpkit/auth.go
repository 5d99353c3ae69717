package httpkit

import (
	"context"
	"net/http"
	"strings"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// CSRFHeader carries the anti-forgery token on requests a signed-in browser page makes.
const CSRFHeader = "X-CSRF-Token"

// WithUser returns a copy of r whose context names u as the user it is made by; the
// caller passes that copy on and leaves r as it was. The request log (Observe), which
// holds the request from before anyone knew the user, learns u through the slot it put
// on the context.
func WithUser(r *http.Request, u store.User) *http.Request {
	if s, ok := r.Context().Value(keyLogSlot).(*logSlot); ok {
		s.user = &u
	}
	return r.WithContext(context.WithValue(r.Context(), keyUser, &u))
}

// UserFrom returns the user a request under ctx is made by, once known.
func UserFrom(ctx context.Context) (store.User, bool) {
	u, ok := ctx.Value(keyUser).(*store.User)
	if !ok {
		return store.User{}, false
	}
	return *u, true
}

// SessionSecret is the browser session cookie's value in r, or "".
func SessionSecret(r *http.Request) string {
	c, err := r.Cookie(account.SessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// Changes reports whether r's method changes something (anything but GET and HEAD), so
// a request by cookie needs its anti-forgery token.
func Changes(r *http.Request) bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// Authenticate resolves who makes r: the bearer token or, for the web UI's own scripts,
// the browser session cookie, whose requests that change anything must carry the
// session's anti-forgery token in X-CSRF-Token (account.Service.BrowserUser checks it).
// Credential says what the credential allows too.
func Authenticate(r *http.Request, accounts *account.Service) (store.User, error) {
	c, err := Credential(r, accounts)
	return c.User, err
}

// Credential is Authenticate with the credential's scope and which token or browser
// sign-in it is. A browser's sign-in has the scope "all".
func Credential(r *http.Request, accounts *account.Service) (account.Credential, error) {
	h := r.Header.Get("Authorization")
	if secret := SessionSecret(r); h == "" && secret != "" {
		ws, u, err := accounts.BrowserSession(r.Context(), secret, r.Header.Get(CSRFHeader), Changes(r))
		if err != nil {
			return account.Credential{}, err
		}
		return account.Credential{User: u, Scope: account.ScopeAll, SessionID: ws.ID}, nil
	}
	if h == "" {
		// The error table's row says what to send.
		return account.Credential{}, ErrUnauthorized
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return account.Credential{}, errs.New(ErrUnauthorized, nil, "the Authorization header must be \"Bearer <token>\"")
	}
	return accounts.AuthenticateToken(r.Context(), strings.TrimSpace(token))
}

// WithCredential returns r with c as the credential it is made with (and c.User as its
// user, for the request log).
func WithCredential(r *http.Request, c account.Credential) *http.Request {
	r = WithUser(r, c.User)
	return r.WithContext(context.WithValue(r.Context(), keyCredential, &c))
}

// CredentialFrom returns the credential a request under ctx is made with, once known.
func CredentialFrom(ctx context.Context) (account.Credential, bool) {
	c, ok := ctx.Value(keyCredential).(*account.Credential)
	if !ok {
		return account.Credential{}, false
	}
	return *c, true
}
