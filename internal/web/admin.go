package web

import (
	"errors"
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

func needAdmin(c *call) error {
	if !c.IsAdmin() {
		return errs.New(account.ErrForbidden, map[string]any{"role": c.User.Role}, "managing users needs the admin role; you are %s", c.User.Role)
	}
	return nil
}

func (h *Handler) usersPage(w http.ResponseWriter, r *http.Request, c *call) error {
	return h.showUsers(w, r, c, http.StatusOK, map[string]any{})
}

// showUsers renders the users page with extra (a new token, an error, the form as typed).
func (h *Handler) showUsers(w http.ResponseWriter, r *http.Request, c *call, status int, extra map[string]any) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	users, err := h.Store.Users(r.Context())
	if err != nil {
		return err
	}
	extra["Title"], extra["Users"], extra["Roles"] = "Users", users, []string{store.RoleUser, store.RoleAuthor, store.RoleAdmin}
	h.render(w, r, status, "users", c, extra)
	return nil
}

func (h *Handler) createUser(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	name, role := r.PostFormValue("name"), r.PostFormValue("role")
	u, tok, err := h.Accounts.CreateUser(r.Context(), name, role, r.PostFormValue("password"))
	if err != nil {
		status, _ := h.statusOf(err)
		if status >= 500 {
			return err
		}
		return h.showUsers(w, r, c, status, map[string]any{"Error": h.message(err), "Name": name, "Role": role})
	}
	return h.showUsers(w, r, c, http.StatusCreated, map[string]any{"Token": tok, "TokenFor": u.Name})
}

func (h *Handler) targetUser(r *http.Request) (store.User, error) {
	id := r.PathValue("id")
	u, err := h.Store.User(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return u, errs.New(store.ErrNotFound, map[string]any{"id": id}, "there is no user with id %q", id)
	}
	return u, err
}

func (h *Handler) setRole(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	u, err := h.targetUser(r)
	if err != nil {
		return err
	}
	role := r.PostFormValue("role")
	if !store.ValidRole(role) {
		return errs.New(account.ErrInvalid, map[string]any{"role": role}, "role %q is not one of admin, author, user", role)
	}
	if err := h.Store.SetRole(r.Context(), u.ID, role); err != nil {
		return err
	}
	redirect(w, r, "/admin/users")
	return nil
}

func (h *Handler) issueToken(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := needAdmin(c); err != nil {
		return err
	}
	u, err := h.targetUser(r)
	if err != nil {
		return err
	}
	tok, err := h.Accounts.IssueToken(r.Context(), u.ID, "issued in the web UI by "+c.User.Name)
	if err != nil {
		return err
	}
	return h.showUsers(w, r, c, http.StatusCreated, map[string]any{"Token": tok, "TokenFor": u.Name})
}
