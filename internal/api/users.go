package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
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
	writeJSON(w, http.StatusOK, toUserJSON(u))
	return nil
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, _ store.User) error {
	var req struct {
		Name     string `json:"name"`
		Role     string `json:"role"`
		Password string `json:"password"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	u, tok, err := s.accounts.CreateUser(r.Context(), req.Name, req.Role, req.Password)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": u.ID, "name": u.Name, "role": u.Role, "token": tok})
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, _ store.User) error {
	users, err := s.store.Users(r.Context())
	if err != nil {
		return err
	}
	out := make([]userJSON, 0, len(users))
	for _, u := range users {
		out = append(out, toUserJSON(u))
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": out, "count": len(out)})
	return nil
}

// targetUser resolves the {id} of a users route, by id or by name. A caller who is not an
// admin may only name themselves; anyone else is answered as if missing.
func (s *Server) targetUser(r *http.Request, caller store.User) (store.User, error) {
	ref := r.PathValue("id")
	if ref == caller.ID || ref == caller.Name {
		return caller, nil
	}
	notFound := errs.New(errNotFound, map[string]any{"user": ref}, "no user %q", ref)
	if caller.Role != store.RoleAdmin {
		return store.User{}, notFound
	}
	u, err := s.store.User(r.Context(), ref)
	if errors.Is(err, store.ErrNotFound) {
		u, err = s.store.UserByName(r.Context(), ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, notFound
	}
	return u, err
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, caller store.User) error {
	var req struct {
		Name string `json:"name"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
	}
	target, err := s.targetUser(r, caller)
	if err != nil {
		return err
	}
	tok, err := s.accounts.IssueToken(r.Context(), target.ID, req.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"token": tok, "user_id": target.ID})
	return nil
}

func (s *Server) setPassword(w http.ResponseWriter, r *http.Request, caller store.User) error {
	var req struct {
		Password string `json:"password"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	target, err := s.targetUser(r, caller)
	if err != nil {
		return err
	}
	if err := s.accounts.SetPassword(r.Context(), target.ID, req.Password); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request, caller store.User) error {
	var req struct {
		Role string `json:"role"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	target, err := s.targetUser(r, caller)
	if err != nil {
		return err
	}
	if !store.ValidRole(req.Role) {
		return errs.New(errInvalidRequest, map[string]any{"field": "role", "value": req.Role}, "role %q is not one of admin, author, user", req.Role)
	}
	if err := s.store.SetRole(r.Context(), target.ID, req.Role); err != nil {
		return err
	}
	target.Role = req.Role
	writeJSON(w, http.StatusOK, toUserJSON(target))
	return nil
}
