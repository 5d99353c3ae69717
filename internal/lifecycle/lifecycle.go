// Package lifecycle owns what happens to a user over their life beyond their
// credentials: disabling and enabling them, deleting them down to a tombstone, and
// exporting everything held about them. It drives the services that hold a user's
// things (staging, run, session, sandbox) the same way their owner's own deletes do.
package lifecycle

import (
	"context"
	"errors"
	"log/slog"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
)

// Deps are the services a Service drives.
type Deps struct {
	Store     *store.Store
	Blobs     blob.Store
	Accounts  *account.Service
	Files     *staging.Service
	Runs      *run.Service
	Sessions  *session.Service
	Sandboxes *sandbox.Service
	Log       *slog.Logger
}

// Service disables, enables, deletes and exports users.
type Service struct{ d Deps }

// New returns a Service over d.
func New(d Deps) *Service { return &Service{d: d} }

// Disable makes the user ref (an id or a name) unable to sign in, for actor (an admin
// other than the user, and never the last active admin): their browser sign-ins end and
// their tokens are refused at once, their queued and running runs are cancelled and
// their sandboxes removed.
func (s *Service) Disable(ctx context.Context, actor account.Actor, ref string) (store.User, error) {
	target, err := s.target(ctx, actor, ref, "disabling a user")
	if err != nil {
		return store.User{}, err
	}
	u, err := s.d.Accounts.SetState(ctx, actor, target, store.StateDisabled)
	if err != nil {
		return store.User{}, err
	}
	if err := s.stop(ctx, u); err != nil {
		return store.User{}, err
	}
	return u, nil
}

// Enable lets a disabled user ref sign in again (their tokens work again).
func (s *Service) Enable(ctx context.Context, actor account.Actor, ref string) (store.User, error) {
	target, err := s.target(ctx, actor, ref, "enabling a user")
	if err != nil {
		return store.User{}, err
	}
	return s.d.Accounts.SetState(ctx, actor, target, store.StateActive)
}

// Delete removes the user ref for actor (as Disable may): their staged files, uploads,
// links, runs with their artifacts, sessions and session files, sandboxes, tokens, web
// sessions, settings, invitations and CLI logins go, and the user stays only as a
// tombstone named store.DeletedName, so that the tools they authored stay in the
// catalogue. Their name is free again.
func (s *Service) Delete(ctx context.Context, actor account.Actor, ref string) error {
	target, err := s.target(ctx, actor, ref, "deleting a user")
	if err != nil {
		return err
	}
	if err := s.d.Accounts.CheckRemovable(ctx, actor, target, "deleting"); err != nil {
		return err
	}
	// Disabled first, so that nothing new starts while their things go.
	if target.State == store.StateActive {
		if target, err = s.d.Accounts.SetState(ctx, actor, target, store.StateDisabled); err != nil {
			return err
		}
	}
	if err := s.removeSandboxes(ctx, target); err != nil {
		return err
	}
	if _, err := s.d.Runs.PurgeUser(ctx, target.ID); err != nil {
		return err
	}
	if _, err := s.d.Sessions.PurgeUser(ctx, target.ID); err != nil {
		return err
	}
	if err := s.d.Files.PurgeOwner(ctx, target.ID); err != nil {
		return err
	}
	if err := s.d.Store.PurgeUser(ctx, target.ID); err != nil {
		return err
	}
	s.d.Accounts.Audit(ctx, actor, account.AuditUserDeleted, target.Name, map[string]any{"id": target.ID})
	return nil
}

// target resolves ref for actor, who must be an admin.
func (s *Service) target(ctx context.Context, actor account.Actor, ref, what string) (store.User, error) {
	if err := account.RequireAdmin(actor.User, what); err != nil {
		return store.User{}, err
	}
	return s.d.Accounts.Lookup(ctx, actor.User, ref)
}

// stop cancels u's unfinished runs and removes their sandboxes.
func (s *Service) stop(ctx context.Context, u store.User) error {
	if _, err := s.d.Runs.CancelUser(ctx, u.ID); err != nil {
		return err
	}
	return s.removeSandboxes(ctx, u)
}

// removeSandboxes destroys u's sandboxes the way their own DELETE does. One held by
// another server (without a cluster) is left to it and logged.
func (s *Service) removeSandboxes(ctx context.Context, u store.User) error {
	boxes, err := s.d.Store.Sandboxes(ctx, u.ID)
	if err != nil {
		return err
	}
	for _, b := range boxes {
		err := s.d.Sandboxes.Delete(ctx, u, b.ID)
		switch {
		case err == nil, errors.Is(err, sandbox.ErrNotFound):
		case errors.Is(err, sandbox.ErrElsewhere):
			s.d.Log.Warn("a disabled or deleted user's sandbox is held by another server; it expires there", "sandbox", b.ID, "user", u.Name)
		default:
			return err
		}
	}
	return nil
}
