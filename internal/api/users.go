package api

import (
	"net/http"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
)

// userJSON is the public view of a user.
type userJSON struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Role        string    `json:"role"`
	HasPassword bool      `json:"has_password"`
	CreatedAt   time.Time `json:"created_at"`
}

func toUserJSON(u store.User) userJSON {
	return userJSON{ID: u.ID, Name: u.Name, Role: u.Role, HasPassword: u.PasswordHash != "", CreatedAt: u.CreatedAt}
}

func (s *Server) me(w http.ResponseWriter, r *http.Request, u store.User) error {
	httpkit.WriteJSON(w, http.StatusOK, toUserJSON(u))
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, caller store.User) error {
	if err := account.RequireAdmin(caller, "creating a user"); err != nil {
		return err
	}
	var req struct {
		Name     string `json:"name"`
		Role     string `json:"role"`
		Password string `json:"password"`
	}
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	u, tok, err := s.svc.Accounts.CreateUser(r.Context(), req.Name, req.Role, req.Password)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, map[string]any{"id": u.ID, "name": u.Name, "role": u.Role, "token": tok})
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, u store.User) error {
	users, err := s.svc.Accounts.Users(r.Context(), u)
	if err != nil {
		return err
	}
	out := make([]userJSON, 0, len(users))
	for _, u := range users {
		out = append(out, toUserJSON(u))
	}
	httpkit.WriteJSON(w, http.StatusOK, map[string]any{"users": out, "count": len(out)})
	return nil
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, caller store.User) error {
	var req struct {
		Name string `json:"name"`
	}
	if r.ContentLength != 0 {
		if err := httpkit.DecodeJSON(w, r, &req); err != nil {
			return err
		}
	}
	target, err := s.svc.Accounts.Lookup(r.Context(), caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	tok, err := s.svc.Accounts.IssueToken(r.Context(), target.ID, req.Name)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, map[string]any{"token": tok, "user_id": target.ID})
	return nil
}

func (s *Server) setPassword(w http.ResponseWriter, r *http.Request, caller store.User) error {
	var req struct {
		Password string `json:"password"`
	}
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	target, err := s.svc.Accounts.Lookup(r.Context(), caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := s.svc.Accounts.SetPassword(r.Context(), target.ID, req.Password); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request, caller store.User) error {
	if err := account.RequireAdmin(caller, "changing a role"); err != nil {
		return err
	}
	var req struct {
		Role string `json:"role"`
	}
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	target, err := s.svc.Accounts.SetRole(r.Context(), caller, r.PathValue("id"), req.Role)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, toUserJSON(target))
	return nil
}
