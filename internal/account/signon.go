package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// ErrAccountClosed means a sign-on identity belongs to a user who is disabled or deleted:
// the provider vouched for them, but this server no longer lets them in.
var ErrAccountClosed = errors.New("account closed")

// Identity is a person an OpenID provider vouched for, as the signon package read it
// from the ID token and the userinfo.
type Identity struct {
	// Issuer and Subject bind the user; nothing else does.
	Issuer, Subject string
	// PreferredName is preferred_username, Email the e-mail: the new user's name is made
	// from the first that is set.
	PreferredName, Email string
	// Role is the role the claims map to, or "" for none mapped. ManagedRole says that
	// roles come from the claims (a role claim is configured): an existing user's role is
	// then set to Role (or DefaultRole) on every sign-on, so that leaving the provider's
	// admins group takes effect.
	Role        string
	ManagedRole bool
	// DefaultRole is the role of a new user when Role is "".
	DefaultRole string
}

// maxNameTries is how many numbered names (anna-2, anna-3, …) a new user tries before
// one with a random suffix.
const maxNameTries = 20

// SignOn signs in the person id names, for actor (whose address is recorded): the user
// bound to (issuer, subject), made on first sign-on, with a role from the claims. It
// returns the user and a new browser session's secret. A disabled or deleted user gets
// ErrAccountClosed.
func (s *Service) SignOn(ctx context.Context, actor Actor, id Identity) (store.User, string, error) {
	if id.Issuer == "" || id.Subject == "" {
		return store.User{}, "", fmt.Errorf("sign-on identity without issuer or subject")
	}
	role := id.Role
	if role == "" {
		role = id.DefaultRole
	}
	if role == "" {
		role = store.RoleUser
	}
	u, err := s.st.UserByOIDC(ctx, id.Issuer, id.Subject)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if u, err = s.createSignOnUser(ctx, actor, id, role); err != nil {
			return store.User{}, "", err
		}
	case err != nil:
		return store.User{}, "", err
	}
	if !u.Active() {
		s.Audit(ctx, Actor{User: u, Address: actor.Address}, AuditSignInFailed, u.Name, map[string]any{"method": "oidc", "state": u.State})
		return store.User{}, "", errs.New(ErrAccountClosed, map[string]any{"state": u.State},
			"your account on this server is %s; ask an administrator if that is a mistake", u.State)
	}
	if id.ManagedRole && u.Role != role {
		switch err := s.st.SetRole(ctx, u.ID, role); {
		case errors.Is(err, store.ErrLastAdmin):
			// The provider no longer makes them admin, but no one else is: they stay
			// admin, so that the server keeps someone who can administer it.
			slog.Warn("sign-on would take the admin role from the last active admin; kept", "user", u.Name, "claimed_role", role)
		case err != nil:
			return store.User{}, "", err
		default:
			s.Audit(ctx, Actor{Address: actor.Address}, AuditRoleChanged, u.Name, map[string]any{"from": u.Role, "to": role, "method": "oidc"})
			u.Role = role
		}
	}
	secret, err := s.StartSession(ctx, u, Client{Address: actor.Address, UserAgent: actor.UserAgent})
	if err != nil {
		return store.User{}, "", err
	}
	s.Audit(ctx, Actor{User: u, Address: actor.Address}, AuditSignIn, u.Name, map[string]any{"method": "oidc"})
	return u, secret, nil
}

// createSignOnUser makes the user of id on their first sign-on, under a free name made
// from their preferred name or e-mail. Two first sign-ons of one identity at once make
// one user: the second finds the first's.
func (s *Service) createSignOnUser(ctx context.Context, actor Actor, id Identity, role string) (store.User, error) {
	if !store.ValidRole(role) {
		return store.User{}, fmt.Errorf("sign-on role %q is not a role", role)
	}
	base := SignOnName(id.PreferredName, id.Email)
	for i := 1; ; i++ {
		name := base
		switch {
		case i > maxNameTries:
			// The ULID's last characters are its random part.
			r := ids.New("")
			name = numbered(base, strings.ToLower(r[len(r)-6:]))
		case i > 1:
			name = numbered(base, fmt.Sprint(i))
		case reservedName(name):
			continue
		}
		u := store.User{ID: ids.New("u"), Name: name, Role: role, CreatedAt: s.now(), State: store.StateActive,
			OIDCIssuer: id.Issuer, OIDCSubject: id.Subject}
		err := s.st.CreateUser(ctx, u)
		if err == nil {
			s.Audit(ctx, Actor{Address: actor.Address}, AuditUserCreated, u.Name, map[string]any{"method": "oidc", "role": role, "issuer": id.Issuer})
			return u, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return store.User{}, err
		}
		// The name is taken, or the identity got its user meanwhile.
		if found, ferr := s.st.UserByOIDC(ctx, id.Issuer, id.Subject); ferr == nil {
			return found, nil
		}
		if i > maxNameTries+3 {
			return store.User{}, fmt.Errorf("no free user name for %q: %w", base, err)
		}
	}
}

// numbered is base with the suffix -n, shortened so that it stays a valid name.
func numbered(base, n string) string {
	if max := 64 - 1 - len(n); len(base) > max {
		base = strings.TrimRight(base[:max], "._@-")
	}
	return base + "-" + n
}

// SignOnName makes a user name that the name pattern accepts from preferred (the
// provider's preferred_username) or else email: the part before any @, letters without
// their accents (åsa → asa), any other character a hyphen; "user" when nothing is left.
func SignOnName(preferred, email string) string {
	src := strings.TrimSpace(preferred)
	if src == "" {
		src = strings.TrimSpace(email)
	}
	if at := strings.IndexByte(src, '@'); at >= 0 {
		src = src[:at]
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(src) {
		switch {
		case unicode.Is(unicode.Mn, r):
			// An accent, dropped from the letter it followed.
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-'):
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), "._-")
	for strings.Contains(name, "--") {
		name = strings.ReplaceAll(name, "--", "-")
	}
	if len(name) > 56 {
		name = name[:56]
	}
	name = strings.TrimRight(name, "._-")
	if name == "" || !namePattern.MatchString(name) {
		return "user"
	}
	return name
}
