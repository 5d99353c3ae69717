package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// userOf is the public view of a user: never its password hash, only whether it has one.
func userOf(u store.User) wire.User {
	return wire.User{ID: u.ID, Name: u.Name, Role: u.Role, HasPassword: u.PasswordHash != "", CreatedAt: u.CreatedAt, State: u.State}
}

func (s *Server) me(w http.ResponseWriter, r *http.Request, u store.User) error {
	use, err := s.svc.Staging.Usage(r.Context(), u.ID)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, wire.Me{User: userOf(u), Usage: usageOf(use, s.svc.Staging.Limits().UserQuotaBytes)})
	return nil
}

// usageOf is u in the API's words, beside the quota.
func usageOf(u store.Usage, quota int64) wire.Usage {
	return wire.Usage{Files: u.Files, Versions: u.Versions, Uploads: u.Uploads, Runs: u.Runs, SessionFiles: u.SessionFiles,
		Retained: u.Retained, Total: u.Total(), Quota: quota}
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, caller store.User) error {
	// Refused before the body is read; CreateUser checks the same rule.
	if err := account.MayCreateUsers(caller); err != nil {
		return err
	}
	var req wire.NewUser
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	u, tok, err := s.svc.Accounts.CreateUser(r.Context(), s.actor(r, caller), req.Name, req.Role, req.Password)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, wire.CreatedUser{ID: u.ID, Name: u.Name, Role: u.Role, Token: tok})
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, u store.User) error {
	users, err := s.svc.Accounts.Users(r.Context(), u)
	if err != nil {
		return err
	}
	out := wire.UserList{Users: make([]wire.User, 0, len(users))}
	for _, u := range users {
		out.Users = append(out.Users, userOf(u))
	}
	out.Count = len(out.Users)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) setPassword(w http.ResponseWriter, r *http.Request, caller store.User) error {
	var req wire.NewPassword
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
	s.svc.Accounts.Audit(r.Context(), s.actor(r, caller), account.AuditPasswordSet, target.Name, nil)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request, caller store.User) error {
	if err := account.RequireAdmin(caller, "changing a role"); err != nil {
		return err
	}
	var req wire.RoleChange
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	target, err := s.svc.Accounts.SetRole(r.Context(), caller, r.PathValue("id"), req.Role)
	if err != nil {
		return err
	}
	s.svc.Accounts.Audit(r.Context(), s.actor(r, caller), account.AuditRoleChanged, target.Name, map[string]any{"role": target.Role})
	httpkit.WriteJSON(w, http.StatusOK, userOf(target))
	return nil
}
