package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

func userFrom(ctx context.Context) (store.User, bool) {
	u, ok := ctx.Value(keyUser).(*store.User)
	if !ok {
		return store.User{}, false
	}
	return *u, true
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request, u store.User) error

// authed wraps h so that it runs only with a valid bearer token, and writes h's error
// through the error table. The user is set on the request context before h runs, so the
// request log names them.
func (s *Server) authed(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.authenticate(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		*r = *r.WithContext(context.WithValue(r.Context(), keyUser, &u))
		if err := h(w, r, u); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// adminOnly wraps h so that only admins reach it; anyone else gets 403.
func adminOnly(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, u store.User) error {
		if u.Role != store.RoleAdmin {
			return errs.New(errForbidden, map[string]any{"role": u.Role, "needs": store.RoleAdmin},
				"this needs the admin role; you are %s", u.Role)
		}
		return h(w, r, u)
	}
}

// CSRFHeader carries the anti-forgery token on requests a signed-in browser page makes.
const CSRFHeader = "X-CSRF-Token"

// authenticate resolves the bearer token or, for the web UI's own scripts, the browser
// session cookie. A request authenticated by the cookie that changes anything must carry
// the session's anti-forgery token in X-CSRF-Token.
func (s *Server) authenticate(r *http.Request) (store.User, error) {
	h := r.Header.Get("Authorization")
	if c, err := r.Cookie(account.SessionCookie); h == "" && err == nil && c.Value != "" {
		u, err := s.accounts.SessionUser(r.Context(), c.Value)
		if err != nil {
			return u, err
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !auth.CheckCSRF(c.Value, r.Header.Get(CSRFHeader)) {
			return store.User{}, errs.New(errForbidden, nil, "this request lacks the page's anti-forgery token; reload the page and try again")
		}
		return u, nil
	}
	if h == "" {
		return store.User{}, errs.New(errUnauthorized, nil, "this needs an API token: send the header Authorization: Bearer <token>")
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return store.User{}, errs.New(errUnauthorized, nil, "the Authorization header must be \"Bearer <token>\"")
	}
	return s.accounts.Authenticate(r.Context(), strings.TrimSpace(token))
}
