package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/skrip-dev/skrip/internal/account"
)

// localPath returns next when it is a path on this site, else "/".
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

func (h *Handler) signInPage(w http.ResponseWriter, r *http.Request) {
	if c := h.visitor(r); c != nil {
		redirect(w, r, localPath(r.URL.Query().Get("next")))
		return
	}
	h.render(w, r, http.StatusOK, "signin", nil, map[string]any{"Title": h.langOf(r).T("lists.signin.title"), "Next": localPath(r.URL.Query().Get("next"))})
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	name, next := strings.TrimSpace(r.PostFormValue("name")), localPath(r.PostFormValue("next"))
	_, secret, err := h.accounts.SignIn(r.Context(), name, r.PostFormValue("password"))
	if err != nil {
		if !errors.Is(err, account.ErrUnauthenticated) {
			h.fail(w, r, nil, err)
			return
		}
		status, _ := h.statusOf(err)
		l := h.langOf(r)
		h.render(w, r, status, "signin", nil, map[string]any{"Title": l.T("lists.signin.title"), "Error": l.T("lists.signin.no_match"), "Name": name, "Next": next})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: account.SessionCookie, Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil, MaxAge: int(account.SessionTTL.Seconds())})
	redirect(w, r, next)
}

func (h *Handler) signOut(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := h.accounts.SignOut(r.Context(), c.secret); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: account.SessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: r.TLS != nil, MaxAge: -1})
	redirect(w, r, "/signin")
	return nil
}
