package account

import (
	"context"
	"errors"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// RequireAdmin refuses a caller who is not an admin, naming what they tried (what).
func RequireAdmin(caller store.User, what string) error {
	if caller.Role != store.RoleAdmin {
		return errs.New(ErrForbidden, map[string]any{"role": caller.Role, "needs": store.RoleAdmin},
			"%s needs the admin role; you are %s", what, caller.Role)
	}
	return nil
}

// MayCreateUsers refuses a caller who may not create users: anyone but an admin, who
// may create a user of any role. CreateUser checks it; a handler may check it before it
// reads a request's body, to refuse early.
func MayCreateUsers(caller store.User) error {
	return RequireAdmin(caller, "creating a user")
}

// Users lists every user, for an admin.
func (s *Service) Users(ctx context.Context, caller store.User) ([]store.User, error) {
	if err := RequireAdmin(caller, "listing users"); err != nil {
		return nil, err
	}
	return s.st.Users(ctx)
}

// Lookup resolves ref, a user's id or name, for caller: anyone may name themselves, an
// admin anyone. Anyone else is answered as if missing, so names never leak.
func (s *Service) Lookup(ctx context.Context, caller store.User, ref string) (store.User, error) {
	if ref == caller.ID || ref == caller.Name {
		return caller, nil
	}
	notFound := errs.New(ErrNotFound, map[string]any{"user": ref}, "no user %q", ref)
	if caller.Role != store.RoleAdmin {
		return store.User{}, notFound
	}
	u, err := s.st.User(ctx, ref)
	if errors.Is(err, store.ErrNotFound) {
		u, err = s.st.UserByName(ctx, ref)
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.State == store.StateDeleted) {
		return store.User{}, notFound
	}
	return u, err
}

// SetRole gives the user ref (an id or a name) role; only an admin may.
func (s *Service) SetRole(ctx context.Context, caller store.User, ref, role string) (store.User, error) {
	if err := RequireAdmin(caller, "changing a role"); err != nil {
		return store.User{}, err
	}
	u, err := s.Lookup(ctx, caller, ref)
	if err != nil {
		return store.User{}, err
	}
	if !store.ValidRole(role) {
		return store.User{}, errs.New(ErrInvalid, map[string]any{"field": "role", "value": role}, "role %q is not one of admin, reviewer, author, user", role)
	}
	if err := s.st.SetRole(ctx, u.ID, role); err != nil {
		if errors.Is(err, store.ErrLastAdmin) {
			return store.User{}, lastAdmin(u, "taking the admin role from")
		}
		return store.User{}, err
	}
	u.Role = role
	return u, nil
}
