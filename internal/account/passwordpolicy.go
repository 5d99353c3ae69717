package account

import (
	"errors"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// ErrPasswordsOff means the user gave their right password, but passwords are for
// admins only here (SKRIP_PASSWORDS=admin): they sign on through the provider instead.
var ErrPasswordsOff = errors.New("password sign-in is for admins only")

// AdminPasswordsOnly reports whether only admins may sign in with a password.
func (s *Service) AdminPasswordsOnly() bool { return s.limits.AdminPasswordsOnly }

// passwordAllowed refuses u's password sign-in when passwords are for admins only and u
// is none. It is asked after the password was checked, so that the answer tells nobody
// without the password what role a name has.
func (s *Service) passwordAllowed(u store.User) error {
	if !s.limits.AdminPasswordsOnly || u.Role == store.RoleAdmin {
		return nil
	}
	return errs.New(ErrPasswordsOff, map[string]any{"role": u.Role},
		"only admins may sign in with a password on this server; sign in through the sign-on provider instead")
}
