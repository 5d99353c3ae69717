package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

var (
	// ErrLastAdmin means a change would leave no active admin.
	ErrLastAdmin = errors.New("the last active admin")
	// ErrGone means something was there but is used up or expired.
	ErrGone = errors.New("gone")
)

// SetUserState makes the user id active or disabled. Disabling ends their browser
// sign-ins at once (their tokens stay, refused while disabled, and work again when the
// user is enabled). Disabling the last active admin gives ErrLastAdmin; a deleted user
// gives ErrNotFound.
func (s *Store) SetUserState(ctx context.Context, id, state string) (User, error) {
	var out User
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.lockAdmins(ctx, tx); err != nil {
			return err
		}
		u, err := scanUser(tx.QueryRowContext(ctx, s.rebind("SELECT "+userCols+" FROM users WHERE id = ? AND state <> 'deleted'"), id))
		if err != nil {
			return err
		}
		if state == StateDisabled && u.Role == RoleAdmin && u.State == StateActive {
			var others int
			err := tx.QueryRowContext(ctx, s.rebind("SELECT COUNT(*) FROM users WHERE role = 'admin' AND state = 'active' AND id <> ?"), id).Scan(&others)
			if err != nil {
				return err
			}
			if others == 0 {
				return ErrLastAdmin
			}
		}
		if _, err := tx.ExecContext(ctx, s.rebind("UPDATE users SET state = ? WHERE id = ?"), state, id); err != nil {
			return err
		}
		if state != StateActive {
			if _, err := tx.ExecContext(ctx, s.rebind("DELETE FROM web_sessions WHERE user_id = ?"), id); err != nil {
				return err
			}
		}
		u.State = state
		out = u
		return nil
	})
	if err != nil {
		return User{}, fmt.Errorf("user %q: %w", id, err)
	}
	return out, nil
}

// lockAdmins serializes changes that count the active admins: on PostgreSQL it locks the
// admins' rows (SQLite transactions are serial already), so that two admins disabling
// each other at once cannot both succeed.
func (s *Store) lockAdmins(ctx context.Context, tx *sql.Tx) error {
	if s.dialect != Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT id FROM users WHERE role = 'admin' ORDER BY id FOR UPDATE")
	return err
}

// LastActiveAdmin reports whether id is an active admin and no other admin is active.
func (s *Store) LastActiveAdmin(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.queryRow(ctx, "SELECT COUNT(*) FROM users WHERE role = 'admin' AND state = 'active' AND id <> ?", id).Scan(&n)
	if err != nil {
		return false, err
	}
	u, err := s.User(ctx, id)
	if err != nil {
		return false, err
	}
	return n == 0 && u.Role == RoleAdmin && u.State == StateActive, nil
}

// UserRunRef is one of a user's runs as deleting the user needs it.
type UserRunRef struct {
	ID     string
	Status string
}

// UserRuns lists the ids and statuses of every run of userID.
func (s *Store) UserRuns(ctx context.Context, userID string) ([]UserRunRef, error) {
	rows, err := s.query(ctx, "SELECT id, status FROM runs WHERE user_id = ? ORDER BY id", userID)
	return scanAll(rows, err, func(r interface{ Scan(...any) error }) (UserRunRef, error) {
		var x UserRunRef
		return x, r.Scan(&x.ID, &x.Status)
	})
}

// DeleteRunRecord removes a run's row (its blobs are the caller's to delete).
func (s *Store) DeleteRunRecord(ctx context.Context, id string) error {
	_, err := s.exec(ctx, "DELETE FROM runs WHERE id = ?", id)
	return err
}

// UserSessionFileSets lists every session file set of userID.
func (s *Store) UserSessionFileSets(ctx context.Context, userID string) ([]FileSet, error) {
	rows, err := s.query(ctx, "SELECT "+fileSetCols+" FROM session_files WHERE user_id = ?", userID)
	return scanAll(rows, err, scanFileSet)
}

// OwnerUploads lists every resumable upload of ownerID, finished or not.
func (s *Store) OwnerUploads(ctx context.Context, ownerID string) ([]Upload, error) {
	rows, err := s.query(ctx, "SELECT "+uploadCols+" FROM uploads WHERE owner_id = ? ORDER BY id", ownerID)
	return scanAll(rows, err, scanUpload)
}

// OwnerFiles lists every staged file of ownerID, pending claims and expired ones
// included.
func (s *Store) OwnerFiles(ctx context.Context, ownerID string) ([]File, error) {
	rows, err := s.query(ctx, "SELECT "+fileCols+" FROM files WHERE owner_id = ? ORDER BY key", ownerID)
	return scanAll(rows, err, scanFile)
}

// userTables are the tables that hold a user's own rows, with the column naming the
// user, in the order PurgeUser empties them (children before parents). Tools and tool
// versions they authored are not among them: those stay, attributed to the tombstone.
var userTables = []struct{ Table, Column string }{
	{"tokens", "user_id"},
	{"web_sessions", "user_id"},
	{"tool_settings", "user_id"},
	{"favourites", "user_id"},
	{"tool_edit_locks", "user_id"},
	{"tool_maintainers", "user_id"},
	{"session_steps", "user_id"},
	{"session_files", "user_id"},
	{"tool_sessions", "user_id"},
	{"problem_reports", "user_id"},
	{"runs", "user_id"},
	{"file_links", "owner_id"},
	{"file_links", "created_by"},
	{"upload_links", "owner_id"},
	{"upload_links", "created_by"},
	{"file_versions", "owner_id"},
	{"files", "owner_id"},
	{"uploads", "owner_id"},
	{"sandboxes", "owner_id"},
	{"retired_file_blobs", "owner_id"},
	{"invitations", "created_by"},
	{"cli_logins", "approved_by"},
}

// UserTables lists the tables and columns that hold a user's rows (the tests count them).
func UserTables() [][2]string {
	out := make([][2]string, len(userTables))
	for i, t := range userTables {
		out[i] = [2]string{t.Table, t.Column}
	}
	return out
}

// CountUserRows says how many rows table holds for userID in column (one of UserTables).
func (s *Store) CountUserRows(ctx context.Context, table, column, userID string) (int, error) {
	for _, t := range userTables {
		if t.Table == table && t.Column == column {
			var n int
			err := s.queryRow(ctx, "SELECT COUNT(*) FROM "+table+" WHERE "+column+" = ?", userID).Scan(&n)
			return n, err
		}
	}
	return 0, fmt.Errorf("%s.%s is not a user table", table, column)
}

// DeletedName is the placeholder name of the tombstone of user id: the real name is free
// again. The colon is outside every name a user may be given (account's name pattern), so
// no one can take a tombstone's name before it is made and block the deletion.
func DeletedName(id string) string { return "deleted:" + id }

// PurgeUser removes every row left of userID's own (see userTables; the services delete
// the bytes first) and leaves the user a tombstone: state deleted, the name replaced by
// DeletedName, no password and no sign-on identity. Upload parts go with their uploads.
func (s *Store) PurgeUser(ctx context.Context, userID string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.rebind("DELETE FROM upload_parts WHERE upload_id IN (SELECT id FROM uploads WHERE owner_id = ?)"), userID); err != nil {
			return err
		}
		for _, t := range userTables {
			if _, err := tx.ExecContext(ctx, s.rebind("DELETE FROM "+t.Table+" WHERE "+t.Column+" = ?"), userID); err != nil {
				return fmt.Errorf("emptying %s: %w", t.Table, err)
			}
		}
		res, err := tx.ExecContext(ctx, s.rebind("UPDATE users SET state = 'deleted', name = ?, password_hash = NULL, oidc_issuer = NULL, oidc_subject = NULL WHERE id = ?"),
			DeletedName(userID), userID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("deleting user %q: %w", userID, err)
	}
	return nil
}

// UserWebSessions lists userID's browser sign-ins (for an export), without secrets.
func (s *Store) UserWebSessions(ctx context.Context, userID string) ([]WebSessionInfo, error) {
	rows, err := s.query(ctx, "SELECT id, created_at, expires_at, last_seen_at, address, user_agent FROM web_sessions WHERE user_id = ? ORDER BY created_at", userID)
	return scanAll(rows, err, func(r interface{ Scan(...any) error }) (WebSessionInfo, error) {
		var w WebSessionInfo
		var c, e, l int64
		err := r.Scan(&w.ID, &c, &e, &l, &w.Address, &w.UserAgent)
		w.CreatedAt, w.ExpiresAt, w.LastSeenAt = fromMS(c), fromMS(e), fromMS(l)
		return w, err
	})
}

// WebSessionInfo is a browser sign-in as an export lists it.
type WebSessionInfo struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	LastSeenAt time.Time `json:"last_seen_at"`
	Address    string    `json:"address"`
	UserAgent  string    `json:"user_agent"`
}

// TokenInfo is an API token as an export lists it: never its hash.
type TokenInfo struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Scope      string     `json:"scope"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// UserTokens lists userID's tokens without their hashes (for an export).
func (s *Store) UserTokens(ctx context.Context, userID string) ([]TokenInfo, error) {
	rows, err := s.query(ctx, "SELECT id, name, scope, created_at, expires_at, last_used_at FROM tokens WHERE user_id = ? ORDER BY created_at", userID)
	return scanAll(rows, err, func(r interface{ Scan(...any) error }) (TokenInfo, error) {
		var t TokenInfo
		var c int64
		var e, l sql.NullInt64
		err := r.Scan(&t.ID, &t.Name, &t.Scope, &c, &e, &l)
		t.CreatedAt = fromMS(c)
		if e.Valid {
			x := fromMS(e.Int64)
			t.ExpiresAt = &x
		}
		if l.Valid {
			x := fromMS(l.Int64)
			t.LastUsedAt = &x
		}
		return t, err
	})
}

// SettingRow is one of a user's saved tool settings.
type SettingRow struct {
	ToolID string `json:"tool_id"`
	Scope  string `json:"scope"`
	Values string `json:"values"`
}

// UserSettings lists userID's saved tool settings (for an export).
func (s *Store) UserSettings(ctx context.Context, userID string) ([]SettingRow, error) {
	rows, err := s.query(ctx, "SELECT tool_id, scope, vals FROM tool_settings WHERE user_id = ? ORDER BY tool_id, scope", userID)
	return scanAll(rows, err, func(r interface{ Scan(...any) error }) (SettingRow, error) {
		var x SettingRow
		return x, r.Scan(&x.ToolID, &x.Scope, &x.Values)
	})
}

// UserSessions lists userID's tool sessions (for an export).
func (s *Store) UserSessions(ctx context.Context, userID string) ([]Session, error) {
	rows, err := s.query(ctx, "SELECT tool_id, context FROM tool_sessions WHERE user_id = ? ORDER BY tool_id, context", userID)
	keys, err := scanAll(rows, err, func(r interface{ Scan(...any) error }) (SessionKey, error) {
		k := SessionKey{UserID: userID}
		return k, r.Scan(&k.ToolID, &k.Context)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Session, 0, len(keys))
	for _, k := range keys {
		sess, err := s.Session(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, nil
}
