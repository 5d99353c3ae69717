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
	extra["Title"], extra["Users"], extra["Roles"] = h.langOf(r).T("lists.users.title"), users, []string{store.RoleUser, store.RoleAuthor, store.RoleAdmin}
	h.render(w, r, status, "users", c, extra)
	return nil
}

func (h *Handler) createUser(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := account.RequireAdmin(c.User, "managing users"); err != nil {
		return err
	}
	name, role := r.PostFormValue("name"), r.PostFormValue("role")
	u, tok, err := h.accounts.CreateUser(r.Context(), name, role, r.PostFormValue("password"))
	if err != nil {
		status, _ := h.statusOf(w, err)
		if status >= 500 {
			return err
		}
		return h.showUsers(w, r, c, status, map[string]any{"Error": h.message(r, err), "Name": name, "Role": role})
	}
	h.accounts.Audit(r.Context(), h.actor(r, c), account.AuditUserCreated, u.Name, map[string]any{"role": u.Role})
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

func (h *Handler) issueToken(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := account.RequireAdmin(c.User, "managing users"); err != nil {
		return err
	}
	u, err := h.accounts.Lookup(r.Context(), c.User, r.PathValue("id"))
	if err != nil {
		return err
	}
	name := "issued in the web UI by " + c.User.Name
	tok, err := h.accounts.IssueToken(r.Context(), u.ID, name)
	if err != nil {
		return err
	}
	h.accounts.Audit(r.Context(), h.actor(r, c), account.AuditTokenCreated, u.Name, map[string]any{"name": name, "scope": account.ScopeAll})
	return h.showUsers(w, r, c, http.StatusCreated, map[string]any{"Token": tok, "TokenFor": u.Name})
}
