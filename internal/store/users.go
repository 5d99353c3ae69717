package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Roles a user may have.
const (
	RoleAdmin = "admin"
	// RoleReviewer is an author who also reviews other authors' versions before they
	// are published, when review is on (SKRIP_REVIEW).
	RoleReviewer = "reviewer"
	RoleAuthor   = "author"
	RoleUser     = "user"
)

// Roles are the roles, highest first.
var Roles = []string{RoleAdmin, RoleReviewer, RoleAuthor, RoleUser}

// ValidRole reports whether r is one of the roles.
func ValidRole(r string) bool {
	return r == RoleAdmin || r == RoleReviewer || r == RoleAuthor || r == RoleUser
}

// States a user may be in. A disabled user signs in nowhere; a deleted user is a
// tombstone that only keeps the tools they authored attributed.
const (
	StateActive   = "active"
	StateDisabled = "disabled"
	StateDeleted  = "deleted"
)

// DeletedUserName is how a deleted user is shown, for example as a tool's author.
const DeletedUserName = "borttagen användare"

// User is a person or program that signs in.
type User struct {
	ID           string
	Name         string
	Role         string
	PasswordHash string // empty when the user has no password
	CreatedAt    time.Time
	State        string
	// OIDCIssuer and OIDCSubject bind the user to a sign-on identity; both are empty for
	// a user who signs in with a password only.
	OIDCIssuer  string
	OIDCSubject string
}

// Active reports whether the user may sign in and act.
func (u User) Active() bool { return u.State == StateActive }

// userCols are the columns scanUser reads, unqualified; userColsU the same of the table
// aliased u.
const (
	userCols  = "id, name, role, COALESCE(password_hash, ''), created_at, state, COALESCE(oidc_issuer, ''), COALESCE(oidc_subject, '')"
	userColsU = "u.id, u.name, u.role, COALESCE(u.password_hash, ''), u.created_at, u.state, COALESCE(u.oidc_issuer, ''), COALESCE(u.oidc_subject, '')"
)

func scanUser(row interface{ Scan(...any) error }) (User, error) {
	var u User
	var created int64
	if err := row.Scan(&u.ID, &u.Name, &u.Role, &u.PasswordHash, &created, &u.State, &u.OIDCIssuer, &u.OIDCSubject); err != nil {
		return User{}, mapErr(err)
	}
	u.CreatedAt = fromMS(created)
	return u, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CreateUser inserts u. A taken name gives ErrConflict.
func (s *Store) CreateUser(ctx context.Context, u User) error {
	if u.State == "" {
		u.State = StateActive
	}
	_, err := s.exec(ctx, "INSERT INTO users (id, name, role, password_hash, created_at, state, oidc_issuer, oidc_subject) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		u.ID, u.Name, u.Role, nullable(u.PasswordHash), ms(u.CreatedAt), u.State, nullable(u.OIDCIssuer), nullable(u.OIDCSubject))
	if err != nil {
		return fmt.Errorf("creating user %q: %w", u.Name, err)
	}
	return nil
}

// User returns the user with this id.
func (s *Store) User(ctx context.Context, id string) (User, error) {
	u, err := scanUser(s.queryRow(ctx, "SELECT "+userCols+" FROM users WHERE id = ?", id))
	if err != nil {
		return User{}, fmt.Errorf("user %q: %w", id, err)
	}
	return u, nil
}

// UserByName returns the user with this name.
func (s *Store) UserByName(ctx context.Context, name string) (User, error) {
	u, err := scanUser(s.queryRow(ctx, "SELECT "+userCols+" FROM users WHERE name = ?", name))
	if err != nil {
		return User{}, fmt.Errorf("user %q: %w", name, err)
	}
	return u, nil
}

// Users lists every user, by name; deleted users (tombstones) are not listed.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	rows, err := s.query(ctx, "SELECT "+userCols+" FROM users WHERE state <> 'deleted' ORDER BY name")
	return scanAll(rows, err, scanUser)
}

// CountUsers returns how many users exist.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.queryRow(ctx, "SELECT COUNT(*) FROM users").Scan(&n)
	return n, err
}

// SetPassword stores a user's new password hash and ends their browser sessions.
func (s *Store) SetPassword(ctx context.Context, id, hash string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.rebind("UPDATE users SET password_hash = ? WHERE id = ?"), hash, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("user %q: %w", id, ErrNotFound)
		}
		_, err = tx.ExecContext(ctx, s.rebind("DELETE FROM web_sessions WHERE user_id = ?"), id)
		return err
	})
}

// SetRole changes a user's role. Taking the admin role from the last active admin gives
// ErrLastAdmin.
func (s *Store) SetRole(ctx context.Context, id, role string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockAdmins(ctx, tx); err != nil {
			return err
		}
		if role != RoleAdmin {
			var others int
			err := tx.QueryRowContext(ctx, s.rebind("SELECT COUNT(*) FROM users WHERE role = 'admin' AND state = 'active' AND id <> ?"), id).Scan(&others)
			if err != nil {
				return err
			}
			var was, state string
			err = tx.QueryRowContext(ctx, s.rebind("SELECT role, state FROM users WHERE id = ?"), id).Scan(&was, &state)
			if err != nil {
				return fmt.Errorf("user %q: %w", id, mapErr(err))
			}
			if was == RoleAdmin && state == StateActive && others == 0 {
				return ErrLastAdmin
			}
		}
		res, err := tx.ExecContext(ctx, s.rebind("UPDATE users SET role = ? WHERE id = ? AND state <> 'deleted'"), role, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("user %q: %w", id, ErrNotFound)
		}
		return nil
	})
}

// EnsureUser returns the user named u.Name, creating it from u when it does not exist,
// and giving it u.Role when it has another. It is safe to call concurrently.
func (s *Store) EnsureUser(ctx context.Context, u User) (User, error) {
	var out User
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.rebind("INSERT INTO users (id, name, role, password_hash, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING"),
			u.ID, u.Name, u.Role, nullable(u.PasswordHash), ms(u.CreatedAt))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.rebind("UPDATE users SET role = ? WHERE name = ? AND role <> ?"), u.Role, u.Name, u.Role); err != nil {
			return err
		}
		out, err = scanUser(tx.QueryRowContext(ctx, s.rebind("SELECT "+userCols+" FROM users WHERE name = ?"), u.Name))
		return err
	})
	if err != nil {
		return User{}, fmt.Errorf("ensuring user %q: %w", u.Name, err)
	}
	return out, nil
}
