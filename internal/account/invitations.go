package account

import (
	"context"
	"errors"
	"time"

	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// ErrInvitationGone means an invitation link was used already or has expired.
var ErrInvitationGone = errors.New("invitation used or expired")

// Invitation lifetimes: the default and the longest an admin may ask for.
const (
	DefaultInvitationTTL = 7 * 24 * time.Hour
	MaxInvitationTTL     = 30 * 24 * time.Hour
)

// InvitePath is where an invitation's page lives: InvitePath + the secret.
const InvitePath = "/invite/"

// Invite makes an invitation to become a user of role, valid for ttl (0: the default),
// and returns its secret (which goes in the link; only its hash is kept) and when it
// expires. Only an admin may invite.
func (s *Service) Invite(ctx context.Context, actor Actor, role string, ttl time.Duration) (string, time.Time, error) {
	if err := RequireAdmin(actor.User, "inviting someone"); err != nil {
		return "", time.Time{}, err
	}
	if role == "" {
		role = store.RoleUser
	}
	if !store.ValidRole(role) {
		return "", time.Time{}, errs.New(ErrInvalid, map[string]any{"field": "role", "value": role}, "role %q is not one of admin, reviewer, author, user", role)
	}
	if ttl == 0 {
		ttl = DefaultInvitationTTL
	}
	if ttl < time.Minute || ttl > MaxInvitationTTL {
		return "", time.Time{}, errs.New(ErrInvalid, map[string]any{"field": "expires_in", "value": ttl.String(), "max": "30d"},
			"an invitation lasts from 1 minute to 30 days, not %s", ttl)
	}
	secret := auth.NewToken()
	now := s.now()
	inv := store.Invitation{ID: ids.New("inv"), Hash: auth.HashToken(secret), Role: role, CreatedBy: actor.User.ID, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := s.st.CreateInvitation(ctx, inv); err != nil {
		return "", time.Time{}, err
	}
	s.Audit(ctx, actor, AuditInvited, inv.ID, map[string]any{"role": role, "expires_at": inv.ExpiresAt})
	return secret, inv.ExpiresAt, nil
}

// Invitation returns the open invitation of secret, or ErrInvitationGone when there is
// none: used, expired and unknown secrets are answered alike.
func (s *Service) Invitation(ctx context.Context, secret string) (store.Invitation, error) {
	inv, err := s.st.InvitationByHash(ctx, auth.HashToken(secret))
	if errors.Is(err, store.ErrNotFound) || (err == nil && (inv.UsedAt != nil || !inv.ExpiresAt.After(s.now()))) {
		return store.Invitation{}, gone()
	}
	return inv, err
}

func gone() error {
	return errs.New(ErrInvitationGone, nil, "this invitation has been used or has expired; ask for a new one")
}

// AcceptInvitation makes the user name with password and the invitation's role, marks
// the invitation used (once only: of two that accept at once, one makes a user) and
// signs the new user in on the browser at client. It returns the user and the
// browser session's secret.
func (s *Service) AcceptInvitation(ctx context.Context, client Client, secret, name, password string) (store.User, string, error) {
	inv, err := s.Invitation(ctx, secret)
	if err != nil {
		return store.User{}, "", err
	}
	if err := validName(name); err != nil {
		return store.User{}, "", err
	}
	if err := validPassword(password); err != nil {
		return store.User{}, "", err
	}
	// A name that is taken is said before the password is hashed: hashing is the
	// expensive part, and the page may be sent again and again.
	if _, err := s.st.UserByName(ctx, name); err == nil {
		return store.User{}, "", errs.New(ErrExists, map[string]any{"name": name}, "a user named %q already exists", name)
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.User{}, "", err
	}
	u := store.User{ID: ids.New("u"), Name: name, Role: inv.Role, CreatedAt: s.now()}
	if err := s.hashes.do(ctx, nil, func() { u.PasswordHash = auth.HashPassword(password) }); err != nil {
		return store.User{}, "", err
	}
	switch err := s.st.AcceptInvitation(ctx, inv.ID, u, s.now()); {
	case errors.Is(err, store.ErrGone):
		return store.User{}, "", gone()
	case errors.Is(err, store.ErrConflict):
		return store.User{}, "", errs.New(ErrExists, map[string]any{"name": name}, "a user named %q already exists", name)
	case err != nil:
		return store.User{}, "", err
	}
	s.Audit(ctx, Actor{User: u, Address: client.Address}, AuditInviteUsed, u.Name, map[string]any{"invitation": inv.ID, "role": u.Role})
	sess, err := s.StartSession(ctx, u, client)
	if err != nil {
		return store.User{}, "", err
	}
	return u, sess, nil
}

// ExpireInvitations removes invitations that expired more than a day ago.
func (s *Service) ExpireInvitations(ctx context.Context) (int64, error) {
	return s.st.DeleteStaleInvitations(ctx, s.now().Add(-24*time.Hour))
}
