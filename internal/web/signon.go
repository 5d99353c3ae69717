package web

import (
	"context"
	"errors"
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/signon"
)

// signOnOff is the answer of the sign-on routes on a server without sign-on.
func signOnOff() error {
	return errs.New(signon.ErrOff, nil, "sign-on is not set up on this server; sign in with your name and password")
}

// signOnStart sends the browser to the provider, with the flow cookie the callback
// checks (state, nonce and PKCE verifier: nothing is kept on the server).
func (h *Handler) signOnStart(w http.ResponseWriter, r *http.Request) {
	next := signon.LocalPath(r.URL.Query().Get("next"))
	if h.signOn == nil {
		h.signOnFailed(w, r, signOnOff())
		return
	}
	if c := h.visitor(r); c != nil {
		redirect(w, r, next)
		return
	}
	to, cookie, err := h.signOn.Start(r.Context(), h.front.Origin(r), next)
	if err != nil {
		h.signOnFailed(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: signon.FlowCookie, Value: cookie, Path: "/auth/oidc", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: h.front.Secure(r), MaxAge: 600})
	http.Redirect(w, r, to, http.StatusFound)
}

// signOnCallback finishes a sign-on: the provider sent the browser back with a code (or
// an error). The flow cookie is spent either way.
func (h *Handler) signOnCallback(w http.ResponseWriter, r *http.Request) {
	if h.signOn == nil {
		h.signOnFailed(w, r, signOnOff())
		return
	}
	cookie := ""
	if c, err := r.Cookie(signon.FlowCookie); err == nil {
		cookie = c.Value
	}
	http.SetCookie(w, &http.Cookie{Name: signon.FlowCookie, Value: "", Path: "/auth/oidc", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: h.front.Secure(r), MaxAge: -1})
	_, secret, next, err := h.signOn.Finish(r.Context(), account.Actor{Address: h.front.ClientAddr(r), UserAgent: r.UserAgent()}, h.front.Origin(r), r.URL.Query(), cookie)
	if err != nil {
		h.signOnFailed(w, r, err)
		return
	}
	h.setSessionCookie(w, r, secret)
	redirect(w, r, next)
}

// signOnFailed shows why a sign-on failed, in the page's language, with its stable
// reason and the ways on: sign on again, or the password form.
func (h *Handler) signOnFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	status, _ := h.statusOf(w, err)
	_, _, _, details := httpkit.Describe(err)
	reason, _ := details["reason"].(string)
	l := h.langOf(r)
	h.render(w, r, status, "signon_error", nil, map[string]any{"Title": l.T("signon.failed"), "Message": h.message(r, err),
		"Reason": reason, "SignOn": h.signOn != nil})
}

// setSessionCookie gives the browser the cookie of the session secret, after a password
// sign-in or a sign-on alike.
func (h *Handler) setSessionCookie(w http.ResponseWriter, r *http.Request, secret string) {
	http.SetCookie(w, &http.Cookie{Name: account.SessionCookie, Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: h.front.Secure(r), MaxAge: int(h.accounts.SessionMax().Seconds())})
}
