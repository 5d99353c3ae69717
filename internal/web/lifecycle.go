package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/errs"
)

// registerLifecycle adds the admin's lifecycle forms and pages (disable, enable,
// delete, invitations, the audit log) and the invitee's page.
func (h *Handler) registerLifecycle(mux *http.ServeMux) {
	mux.Handle("POST /admin/users/{id}/disable", h.page(h.setUserState(false)))
	mux.Handle("POST /admin/users/{id}/enable", h.page(h.setUserState(true)))
	mux.Handle("GET /admin/users/{id}/delete", h.page(h.confirmDelete))
	mux.Handle("POST /admin/users/{id}/delete", h.page(h.deleteUser))
	mux.Handle("POST /admin/invitations", h.page(h.invite))
	mux.Handle("GET /admin/audit", h.page(h.auditLogPage))
	mux.Handle("GET "+account.InvitePath+"{secret}", h.secure(http.HandlerFunc(h.invitePage)))
	mux.Handle("POST "+account.InvitePath+"{secret}", h.secure(http.HandlerFunc(h.acceptInvite)))
}

func (h *Handler) actor(r *http.Request, c *call) account.Actor {
	return account.Actor{User: c.User, Address: h.front.ClientAddr(r)}
}

// usersError shows the users page with err's message, or fails the request when err is
// the server's fault.
func (h *Handler) usersError(w http.ResponseWriter, r *http.Request, c *call, err error) error {
	status, _ := h.statusOf(w, err)
	if status >= 500 || status == http.StatusForbidden {
		return err
	}
	return h.showUsers(w, r, c, status, map[string]any{"ListError": h.message(r, err)})
}

func (h *Handler) setUserState(enable bool) func(http.ResponseWriter, *http.Request, *call) error {
	return func(w http.ResponseWriter, r *http.Request, c *call) error {
		f := h.life.Disable
		if enable {
			f = h.life.Enable
		}
		if _, err := f(r.Context(), h.actor(r, c), r.PathValue("id")); err != nil {
			return h.usersError(w, r, c, err)
		}
		redirect(w, r, "/admin/users")
		return nil
	}
}

// confirmDelete is the step before deleting: it names the user and what goes.
func (h *Handler) confirmDelete(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := account.RequireAdmin(c.User, "deleting a user"); err != nil {
		return err
	}
	u, err := h.accounts.Lookup(r.Context(), c.User, r.PathValue("id"))
	if err != nil {
		return err
	}
	l := h.langOf(r)
	h.render(w, r, http.StatusOK, "user_delete", c, map[string]any{"Title": l.T("life.delete.title", "Name", u.Name), "Target": u})
	return nil
}

func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := h.life.Delete(r.Context(), h.actor(r, c), r.PathValue("id")); err != nil {
		return h.usersError(w, r, c, err)
	}
	redirect(w, r, "/admin/users")
	return nil
}

func (h *Handler) invite(w http.ResponseWriter, r *http.Request, c *call) error {
	days := map[string]time.Duration{"1": 24 * time.Hour, "7": 7 * 24 * time.Hour, "30": 30 * 24 * time.Hour}[r.PostFormValue("days")]
	secret, exp, err := h.accounts.Invite(r.Context(), h.actor(r, c), r.PostFormValue("role"), days)
	if err != nil {
		return h.usersError(w, r, c, err)
	}
	return h.showUsers(w, r, c, http.StatusCreated, map[string]any{"InviteURL": h.front.URL(r, account.InvitePath+secret), "InviteExpires": exp})
}

// auditPageSize is how many events one page of /admin/audit shows.
const auditPageSize = 100

func (h *Handler) auditLogPage(w http.ResponseWriter, r *http.Request, c *call) error {
	events, err := h.accounts.AuditLog(r.Context(), c.User, r.URL.Query().Get("cursor"), auditPageSize)
	if err != nil {
		return err
	}
	next := ""
	if len(events) == auditPageSize {
		next = events[len(events)-1].ID
	}
	l := h.langOf(r)
	h.render(w, r, http.StatusOK, "audit", c, map[string]any{"Title": l.T("life.audit.title"), "Events": events, "Next": next})
	return nil
}

// inviteCookie holds the secret the invitation form's anti-forgery token is made from,
// as signInCookie does for the sign-in form: there is no session yet to make it from.
const inviteCookie = "skrip_invite"

func (h *Handler) invitePage(w http.ResponseWriter, r *http.Request) {
	if _, err := h.accounts.Invitation(r.Context(), r.PathValue("secret")); err != nil {
		h.inviteGone(w, r, err)
		return
	}
	h.inviteForm(w, r, http.StatusOK, "", "")
}

// inviteGone answers an invitation that cannot be used.
func (h *Handler) inviteGone(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, account.ErrInvitationGone) {
		h.fail(w, r, nil, err)
		return
	}
	l := h.langOf(r)
	h.render(w, r, http.StatusGone, "invite_gone", nil, map[string]any{"Title": l.T("life.invite.gone_title")})
}

func (h *Handler) inviteForm(w http.ResponseWriter, r *http.Request, status int, msg, name string) {
	secret := ""
	if c, err := r.Cookie(inviteCookie); err == nil && strings.HasPrefix(c.Value, auth.TokenPrefix) {
		secret = c.Value
	} else {
		secret = auth.NewToken()
		http.SetCookie(w, &http.Cookie{Name: inviteCookie, Value: secret, Path: account.InvitePath, HttpOnly: true,
			SameSite: http.SameSiteLaxMode, Secure: h.front.Secure(r), MaxAge: int((12 * time.Hour).Seconds())})
	}
	l := h.langOf(r)
	h.render(w, r, status, "invite", nil, map[string]any{"Title": l.T("life.invite.title"), "Error": msg, "Name": name,
		"FormCSRF": auth.CSRFToken(secret), "Action": account.InvitePath + r.PathValue("secret"), "MinLen": account.MinPasswordLen})
}

func (h *Handler) acceptInvite(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	c, err := r.Cookie(inviteCookie)
	if (err != nil || !auth.CheckCSRF(c.Value, r.PostFormValue("csrf"))) && !h.front.SameOrigin(r) {
		err := errs.New(account.ErrForgery, nil, "This form is out of date or came from another site. Reload the page and try again.")
		status, _ := h.statusOf(w, err)
		h.inviteForm(w, r, status, h.message(r, err), name)
		return
	}
	if r.PostFormValue("password") != r.PostFormValue("password2") {
		h.inviteForm(w, r, http.StatusBadRequest, h.langOf(r).T("life.invite.mismatch"), name)
		return
	}
	_, secret, err := h.accounts.AcceptInvitation(r.Context(), account.Client{Address: h.front.ClientAddr(r), UserAgent: r.UserAgent()}, r.PathValue("secret"), name, r.PostFormValue("password"))
	if errors.Is(err, account.ErrInvitationGone) {
		h.inviteGone(w, r, err)
		return
	}
	if err != nil {
		status, _ := h.statusOf(w, err)
		if status >= 500 {
			h.fail(w, r, nil, err)
			return
		}
		h.inviteForm(w, r, status, h.message(r, err), name)
		return
	}
	h.setSessionCookie(w, r, secret)
	redirect(w, r, "/")
}
