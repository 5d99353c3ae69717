package account

import (
	"context"
	"errors"
	"time"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinels of the lifecycle rules.
var (
	// ErrOwnAccount means an admin tried to disable or delete their own account.
	ErrOwnAccount = errors.New("own account")
	// ErrLastAdmin means the change would leave no active admin.
	ErrLastAdmin = errors.New("last active admin")
)

// validName checks the name a person picks for themselves (an invitation).
func validName(name string) error {
	if !namePattern.MatchString(name) {
		return errs.New(ErrInvalid, map[string]any{"field": "name", "value": name},
			"user name %q must be 1 to 64 letters, digits or ._@- and start with a letter or digit", name)
	}
	if reservedName(name) {
		return errs.New(ErrInvalid, map[string]any{"field": "name", "value": name},
			"the user name %q is kept for the server's own administrator; pick another", name)
	}
	return nil
}

// reservedName reports whether name is one no one may pick for themselves, through an
// invitation or a sign-on: "admin" is the bootstrap admin's (Bootstrap gives the user of
// that name the admin role and the bootstrap token), so a person who took it after the
// admin was deleted would become admin at the next start.
func reservedName(name string) bool { return name == "admin" }

// CheckRemovable refuses what disabling or deleting target (what: "disabling",
// "deleting") may not do: an admin's own account, and the last active admin.
func (s *Service) CheckRemovable(ctx context.Context, actor Actor, target store.User, what string) error {
	if target.ID == actor.User.ID {
		return errs.New(ErrOwnAccount, map[string]any{"user": target.Name},
			"%s your own account is not allowed; another admin must do it", what)
	}
	last, err := s.st.LastActiveAdmin(ctx, target.ID)
	if err != nil {
		return err
	}
	if last {
		return lastAdmin(target, what)
	}
	return nil
}

func lastAdmin(target store.User, what string) error {
	return errs.New(ErrLastAdmin, map[string]any{"user": target.Name},
		"%s %s would leave no active admin; make another user admin first", what, target.Name)
}

// SetState disables (state disabled) or enables (active) the user target for actor, an
// admin, and records it. Disabling ends the user's browser sign-ins at once; their
// tokens are refused while they are disabled.
func (s *Service) SetState(ctx context.Context, actor Actor, target store.User, state string) (store.User, error) {
	what, action := "disabling", AuditUserDisabled
	if state == store.StateActive {
		what, action = "enabling", AuditUserEnabled
	}
	if err := RequireAdmin(actor.User, what+" a user"); err != nil {
		return store.User{}, err
	}
	if state == store.StateDisabled {
		if err := s.CheckRemovable(ctx, actor, target, what); err != nil {
			return store.User{}, err
		}
	}
	u, err := s.st.SetUserState(ctx, target.ID, state)
	switch {
	case errors.Is(err, store.ErrLastAdmin):
		return store.User{}, lastAdmin(target, what)
	case errors.Is(err, store.ErrNotFound):
		return store.User{}, errs.New(ErrNotFound, map[string]any{"user": target.Name}, "no user %q", target.Name)
	case err != nil:
		return store.User{}, err
	}
	s.Audit(ctx, actor, action, u.Name, nil)
	return u, nil
}

// ExpireAudit removes audit events older than retention (0 keeps them for good) and
// says how many.
func (s *Service) ExpireAudit(ctx context.Context, retention time.Duration) (int64, error) {
	if retention <= 0 {
		return 0, nil
	}
	return s.st.DeleteAuditBefore(ctx, s.now().Add(-retention))
}

// AuditLog lists up to limit audit events for an admin, newest first, older than the
// event cursor ("" starts at the newest).
func (s *Service) AuditLog(ctx context.Context, caller store.User, cursor string, limit int) ([]store.AuditEvent, error) {
	if err := RequireAdmin(caller, "reading the audit log"); err != nil {
		return nil, err
	}
	return s.st.Audit(ctx, cursor, limit)
}
