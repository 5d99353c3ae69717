package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/signon"
)

// signInCookie holds the secret that the sign-in form's anti-forgery token is made from,
// before there is a session to make it from. Another site can neither read it nor
// compute the token, so it cannot sign a browser in to an account of its choosing (login
// CSRF). It goes only to /signin.
const signInCookie = "skrip_signin"

// localPath returns next when it is a path on this site, else "/".
func localPath(next string) string { return signon.LocalPath(next) }

func (h *Handler) signInPage(w http.ResponseWriter, r *http.Request) {
	if c := h.visitor(r); c != nil {
		redirect(w, r, localPath(r.URL.Query().Get("next")))
		return
	}
	h.signInForm(w, r, http.StatusOK, "", "", localPath(r.URL.Query().Get("next")))
}

// signInForm renders the sign-in page with status, the error message (if any), the name
// typed and the page to go to next. Its form carries the anti-forgery token of the
// browser's sign-in cookie, which it sets when the browser has none.
func (h *Handler) signInForm(w http.ResponseWriter, r *http.Request, status int, msg, name, next string) {
	secret := ""
	if c, err := r.Cookie(signInCookie); err == nil && strings.HasPrefix(c.Value, auth.TokenPrefix) {
		secret = c.Value
	} else {
		secret = auth.NewToken()
		http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: secret, Path: "/signin", HttpOnly: true,
			SameSite: http.SameSiteLaxMode, Secure: h.front.Secure(r), MaxAge: int((12 * time.Hour).Seconds())})
	}
	l := h.langOf(r)
	data := map[string]any{"Title": l.T("lists.signin.title"), "Error": msg, "Name": name, "Next": next,
		"SignInCSRF": auth.CSRFToken(secret), "AdminPasswordsOnly": h.accounts.AdminPasswordsOnly()}
	if h.signOn != nil {
		data["SignOnName"] = h.signOn.Name()
		data["SignOnURL"] = signon.LoginPath + "?next=" + url.QueryEscape(next)
	}
	h.render(w, r, status, "signin", nil, data)
}

// checkSignInForm refuses a sign-in that another site's page may have sent: it must carry
// the anti-forgery token of the browser's sign-in cookie, or come with an Origin header
// naming this server (browsers send one with every POST).
func (h *Handler) checkSignInForm(r *http.Request) error {
	if c, err := r.Cookie(signInCookie); err == nil && auth.CheckCSRF(c.Value, r.PostFormValue("csrf")) {
		return nil
	}
	if h.front.SameOrigin(r) {
		return nil
	}
	return errs.New(account.ErrForgery, nil,
		"This sign-in form is out of date or came from another site: it lacks the page's anti-forgery token. Reload the page and try again.")
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	name, next := strings.TrimSpace(r.PostFormValue("name")), localPath(r.PostFormValue("next"))
	l := h.langOf(r)
	if err := h.checkSignInForm(r); err != nil {
		status, _ := h.statusOf(w, err)
		h.signInForm(w, r, status, l.T("lists.signin.forged"), name, next)
		return
	}
	u, secret, err := h.accounts.SignInFrom(r.Context(), account.Client{Address: h.front.ClientAddr(r), UserAgent: r.UserAgent()}, name, r.PostFormValue("password"))
	if err != nil {
		var msg string
		switch {
		case errors.Is(err, account.ErrUnauthenticated):
			// The name as typed, cut to what a name may be long: whoever fails a sign-in
			// must not be able to store much.
			h.accounts.Audit(r.Context(), account.Actor{Address: h.front.ClientAddr(r)}, account.AuditSignInFailed, cut(name, 64), nil)
			msg = l.T("lists.signin.no_match")
		case errors.Is(err, account.ErrThrottled):
			msg = l.T("lists.signin.throttled", "Count", httpkit.RetryAfter(err))
		case errors.Is(err, account.ErrBusy):
			msg = l.T("lists.signin.busy", "Count", httpkit.RetryAfter(err))
		case errors.Is(err, account.ErrPasswordsOff):
			msg = l.T("signon.password_refused")
		default:
			h.fail(w, r, nil, err)
			return
		}
		status, _ := h.statusOf(w, err)
		h.signInForm(w, r, status, msg, name, next)
		return
	}
	h.accounts.Audit(r.Context(), account.Actor{User: u, Address: h.front.ClientAddr(r)}, account.AuditSignIn, u.Name, nil)
	h.setSessionCookie(w, r, secret)
	redirect(w, r, next)
}

func (h *Handler) signOut(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := h.accounts.SignOut(r.Context(), c.secret); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: account.SessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: h.front.Secure(r), MaxAge: -1})
	redirect(w, r, "/signin")
	return nil
}

// cut returns s shortened to at most n runes.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
