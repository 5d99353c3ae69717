package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// CLILogin is a pending `skrip login` (a device authorization): the CLI polls with the
// device code, whose hash only is kept, until a signed-in user approves or denies the
// user code in a browser.
type CLILogin struct {
	ID         string
	DeviceHash string
	UserCode   string
	TokenName  string // the name the token gets: "skrip CLI on <machine>"
	Address    string // the client address that started it (an IPv6 address by its /64)
	CreatedAt  time.Time
	ExpiresAt  time.Time
	ApprovedBy string // the approving user's id; "" while pending or when denied
	Denied     bool
}

// Pending reports whether l waits for a decision at now.
func (l CLILogin) Pending(now time.Time) bool {
	return l.ApprovedBy == "" && !l.Denied && now.Before(l.ExpiresAt)
}

// CLILoginCaps bound the logins not yet expired: at most Total in all and PerAddress
// from one address.
type CLILoginCaps struct {
	Total, PerAddress int
}

// Sentinels of CreateCLILogin: the cap that refused the login.
var (
	ErrCLILoginsFull       = errors.New("too many CLI logins pending")
	ErrCLILoginsPerAddress = errors.New("too many CLI logins pending from this address")
)

const cliLoginCols = "id, device_hash, user_code, token_name, address, created_at, expires_at, COALESCE(approved_by, ''), denied"

func scanCLILogin(row interface{ Scan(...any) error }) (CLILogin, error) {
	var l CLILogin
	var created, expires int64
	var denied int
	if err := row.Scan(&l.ID, &l.DeviceHash, &l.UserCode, &l.TokenName, &l.Address, &created, &expires, &l.ApprovedBy, &denied); err != nil {
		return CLILogin{}, mapErr(err)
	}
	l.CreatedAt, l.ExpiresAt, l.Denied = fromMS(created), fromMS(expires), denied != 0
	return l, nil
}

// CreateCLILogin stores l unless the logins not yet expired at l.CreatedAt already
// reach a cap: then ErrCLILoginsFull or ErrCLILoginsPerAddress, and nothing is stored.
// The check and the insert are one statement, so concurrent starts overshoot a cap by
// at most the few that race on PostgreSQL. (The casts tell PostgreSQL the parameters'
// types, which a SELECT list does not.)
func (s *Store) CreateCLILogin(ctx context.Context, l CLILogin, caps CLILoginCaps) error {
	now := ms(l.CreatedAt)
	res, err := s.exec(ctx, "INSERT INTO cli_logins (id, device_hash, user_code, token_name, address, created_at, expires_at) "+
		"SELECT ?, ?, ?, ?, ?, CAST(? AS BIGINT), CAST(? AS BIGINT) WHERE (SELECT COUNT(*) FROM cli_logins WHERE expires_at > ?) < ? "+
		"AND (SELECT COUNT(*) FROM cli_logins WHERE address = ? AND expires_at > ?) < ?",
		l.ID, l.DeviceHash, l.UserCode, l.TokenName, l.Address, now, ms(l.ExpiresAt),
		now, caps.Total, l.Address, now, caps.PerAddress)
	if err != nil {
		return fmt.Errorf("storing a CLI login: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var mine int
	if err := s.queryRow(ctx, "SELECT COUNT(*) FROM cli_logins WHERE address = ? AND expires_at > ?", l.Address, now).Scan(&mine); err != nil {
		return err
	}
	if mine >= caps.PerAddress {
		return ErrCLILoginsPerAddress
	}
	return ErrCLILoginsFull
}

// CLILoginByDevice returns the login whose device code has this hash.
func (s *Store) CLILoginByDevice(ctx context.Context, hash string) (CLILogin, error) {
	l, err := scanCLILogin(s.queryRow(ctx, "SELECT "+cliLoginCols+" FROM cli_logins WHERE device_hash = ?", hash))
	if err != nil {
		return CLILogin{}, fmt.Errorf("CLI login: %w", err)
	}
	return l, nil
}

// CLILoginByCode returns the login with this user code.
func (s *Store) CLILoginByCode(ctx context.Context, code string) (CLILogin, error) {
	l, err := scanCLILogin(s.queryRow(ctx, "SELECT "+cliLoginCols+" FROM cli_logins WHERE user_code = ?", code))
	if err != nil {
		return CLILogin{}, fmt.Errorf("CLI login: %w", err)
	}
	return l, nil
}

// DecideCLILogin approves (userID not "") or denies (userID "") the login with this
// user code, if it is still pending at now; otherwise ErrNotFound.
func (s *Store) DecideCLILogin(ctx context.Context, code, userID string, now time.Time) error {
	var res sql.Result
	var err error
	if userID != "" {
		res, err = s.exec(ctx, "UPDATE cli_logins SET approved_by = ? WHERE user_code = ? AND expires_at > ? AND approved_by IS NULL AND denied = 0", userID, code, ms(now))
	} else {
		res, err = s.exec(ctx, "UPDATE cli_logins SET denied = 1 WHERE user_code = ? AND expires_at > ? AND approved_by IS NULL AND denied = 0", code, ms(now))
	}
	if err != nil {
		return fmt.Errorf("deciding a CLI login: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("CLI login %q is not pending: %w", code, ErrNotFound)
	}
	return nil
}

// ClaimCLILogin consumes the approved login id and stores t, the token it gives, for the
// user who approved it, in one transaction: a login gives one token at most. A login
// that is not there, not approved or expired at now gives ErrNotFound.
func (s *Store) ClaimCLILogin(ctx context.Context, id string, t Token, now time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, "DELETE FROM cli_logins WHERE id = ? AND approved_by = ? AND expires_at > ?", id, t.UserID, ms(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("CLI login %q is not approved: %w", id, ErrNotFound)
		}
		_, err = s.txExec(ctx, tx, "INSERT INTO tokens (id, user_id, hash, name, scope, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
			t.ID, t.UserID, t.Hash, t.Name, scopeOrAll(t.Scope), ms(t.CreatedAt), nullMS(t.ExpiresAt))
		return err
	})
}

// DeleteCLILogin removes the login id (a denial once the CLI has been told).
func (s *Store) DeleteCLILogin(ctx context.Context, id string) error {
	_, err := s.exec(ctx, "DELETE FROM cli_logins WHERE id = ?", id)
	return err
}

// DeleteExpiredCLILogins removes the logins that expired by now and says how many.
func (s *Store) DeleteExpiredCLILogins(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM cli_logins WHERE expires_at <= ?", ms(now))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
