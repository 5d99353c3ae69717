package web

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/store"
)

func (h *Handler) usersPage(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.showUsers(w, r, c, http.StatusOK, map[string]any{})
}

// showUsers renders the users page with extra (a new token, an error, the form as typed).
func (h *Handler) showUsers(w http.ResponseWriter, r *http.Request, c *call, status int, extra map[string]any) error {
	users, err := h.accounts.Users(r.Context(), c.User)
	if err != nil {
		return err
	}
	extra["Title"], extra["Users"], extra["Roles"] = h.langOf(r).T("lists.users.title"), users, []string{store.RoleUser, store.RoleAuthor, store.RoleReviewer, store.RoleAdmin}
	h.render(w, r, status, "users", c, extra)
	return nil
}

func (h *Handler) createUser(w http.ResponseWriter, r *http.Request, c *call) error {
	// A caller who may not create users gets the error page, not the users page they
	// may not see; CreateUser checks the same rule.
	if err := account.MayCreateUsers(c.User); err != nil {
		return err
	}
	name, role := r.PostFormValue("name"), r.PostFormValue("role")
	u, tok, err := h.accounts.CreateUser(r.Context(), h.actor(r, c), name, role, r.PostFormValue("password"))
	if err != nil {
		status, _ := h.statusOf(w, err)
		if status >= 500 {
			return err
		}
		return h.showUsers(w, r, c, status, map[string]any{"Error": h.message(r, err), "Name": name, "Role": role})
	}
	return h.showUsers(w, r, c, http.StatusCreated, map[string]any{"Token": tok, "TokenFor": u.Name})
}

func (h *Handler) setRole(w http.ResponseWriter, r *http.Request, c *call) error {
	u, err := h.accounts.SetRole(r.Context(), c.User, r.PathValue("id"), r.PostFormValue("role"))
	if err != nil {
		return err
	}
	h.accounts.Audit(r.Context(), h.actor(r, c), account.AuditRoleChanged, u.Name, map[string]any{"role": u.Role})
	redirect(w, r, "/admin/users")
	return nil
}

// issueToken issues a token of scope all, with the server's default expiry, for the user
// {id}: account.CreateToken decides whether the caller may, as it does for the API. A
// caller who is no admin can have made only their own, which their account page shows
// (the users page is not theirs to see).
func (h *Handler) issueToken(w http.ResponseWriter, r *http.Request, c *call) error {
	t, secret, err := h.accounts.CreateToken(r.Context(), h.actor(r, c), r.PathValue("id"),
		account.TokenSpec{Name: "issued in the web UI by " + c.User.Name})
	if err != nil {
		return err
	}
	if !c.IsAdmin() {
		return h.showAccount(w, r, c, http.StatusCreated, map[string]any{"NewToken": secret, "NewTokenName": t.Name})
	}
	return h.showUsers(w, r, c, http.StatusCreated, map[string]any{"Token": secret, "TokenFor": t.UserName})
}
