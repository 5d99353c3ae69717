// Package account owns users and their credentials: creating users, issuing API tokens,
// resolving a token or a password to a user, and the bootstrap admin of a fresh server.
package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinel errors.
var (
	// ErrInvalid means the request names a bad user name, role or password.
	ErrInvalid = errors.New("invalid account request")
	// ErrForbidden means the user is signed in but their role does not allow this.
	ErrForbidden = errors.New("forbidden")
	// ErrUnauthenticated means no valid credential was given.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForgery means a browser request that changes something lacks its page's
	// anti-forgery token.
	ErrForgery = errors.New("anti-forgery token missing")
	// ErrNotFound means no such user, or one the caller may not see.
	ErrNotFound = errors.New("user not found")
	// ErrExists means a user of that name already exists.
	ErrExists = errors.New("user exists")
	// ErrThrottled means too many sign-ins failed lately for the client's address or the
	// name: the next must wait (the error's RetryAfter).
	ErrThrottled = errors.New("sign-in throttled")
	// ErrBusy means every password check was taken for as long as one may wait.
	ErrBusy = errors.New("password checks busy")
)

// MinPasswordLen is the shortest password accepted.
const MinPasswordLen = 8

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// Service creates and resolves users and tokens.
type Service struct {
	st     *store.Store
	now    func() time.Time
	limits Limits
	// hashes bounds the password hashes running at once, and throttle slows down
	// repeated failed sign-ins.
	hashes   *gate
	throttle *throttle
	// dummyHash is checked against when a name has no password, so that the answer
	// takes as long as a real check and timing does not tell names apart.
	dummyHash string
}

// New returns a Service over st whose password checks keep to limits.
func New(st *store.Store, limits Limits) *Service {
	l := limits.withDefaults()
	return &Service{st: st, now: time.Now, limits: l, hashes: newGate(l.Checks, l.Wait, l.Metrics),
		throttle: newThrottle(l.Entries, l.MaxDelay), dummyHash: auth.DummyHash()}
}

// CreateUser validates and stores a new user for actor, who must be an admin
// (MayCreateUsers), issues its first token and audits it. The token is returned once and
// only its hash is kept. The API and the web UI both come here, so who may create which
// user is decided once.
func (s *Service) CreateUser(ctx context.Context, actor Actor, name, role, password string) (store.User, string, error) {
	if err := MayCreateUsers(actor.User); err != nil {
		return store.User{}, "", err
	}
	if !namePattern.MatchString(name) {
		return store.User{}, "", errs.New(ErrInvalid, map[string]any{"field": "name", "value": name},
			"user name %q must be 1 to 64 letters, digits or ._@- and start with a letter or digit", name)
	}
	if role == "" {
		role = store.RoleUser
	}
	if !store.ValidRole(role) {
		return store.User{}, "", errs.New(ErrInvalid, map[string]any{"field": "role", "value": role},
			"role %q is not one of admin, reviewer, author, user", role)
	}
	u := store.User{ID: ids.New("u"), Name: name, Role: role, CreatedAt: s.now()}
	if password != "" {
		if err := validPassword(password); err != nil {
			return store.User{}, "", err
		}
		if err := s.hashes.do(ctx, nil, func() { u.PasswordHash = auth.HashPassword(password) }); err != nil {
			return store.User{}, "", err
		}
	}
	if err := s.st.CreateUser(ctx, u); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return store.User{}, "", errs.New(ErrExists, map[string]any{"name": name}, "a user named %q already exists", name)
		}
		return store.User{}, "", err
	}
	_, tok, err := s.createToken(ctx, u.ID, TokenSpec{Name: "first token"})
	if err != nil {
		return store.User{}, "", err
	}
	s.Audit(ctx, actor, AuditUserCreated, u.Name, map[string]any{"role": u.Role})
	return u, tok, nil
}

// SetPassword gives a user a new web sign-in password and signs them out of every browser.
func (s *Service) SetPassword(ctx context.Context, userID, password string) error {
	if err := validPassword(password); err != nil {
		return err
	}
	var hash string
	if err := s.hashes.do(ctx, nil, func() { hash = auth.HashPassword(password) }); err != nil {
		return err
	}
	return s.st.SetPassword(ctx, userID, hash)
}

func validPassword(password string) error {
	if len(password) < MinPasswordLen {
		return errs.New(ErrInvalid, map[string]any{"field": "password", "min_length": MinPasswordLen},
			"password must be at least %d characters", MinPasswordLen)
	}
	return nil
}

// CheckPassword returns the user named name when password is theirs. The hash waits for
// its turn among the password checks (Limits.Checks), and a name without a password is
// checked against a dummy hash, so that timing does not tell names apart.
// With SKRIP_PASSWORDS=admin, a right password of a user who is no admin gets
// ErrPasswordsOff.
func (s *Service) CheckPassword(ctx context.Context, name, password string) (store.User, error) {
	u, err := s.checkPassword(ctx, name, password, nil)
	if err != nil {
		return store.User{}, err
	}
	if err := s.passwordAllowed(u); err != nil {
		return store.User{}, err
	}
	return u, nil
}

// checkPassword is CheckPassword; admit, when not nil, runs once the check has its turn,
// just before the hash, and an error from it is the answer, with no hash.
func (s *Service) checkPassword(ctx context.Context, name, password string, admit func() error) (store.User, error) {
	u, err := s.st.UserByName(ctx, name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.User{}, err
	}
	hash := u.PasswordHash
	if err != nil || hash == "" {
		hash = s.dummyHash
	}
	var bad error
	if err := s.hashes.do(ctx, admit, func() { bad = auth.CheckPassword(hash, password) }); err != nil {
		return store.User{}, err
	}
	// A disabled user's right password is answered as a wrong one: the account signs in
	// nowhere, and the answer tells nobody which accounts are disabled.
	if bad != nil || hash == s.dummyHash || !u.Active() {
		return store.User{}, errs.New(ErrUnauthenticated, nil, "wrong name or password")
	}
	return u, nil
}

// SignIn checks name and password, given by the client at address client, and starts a
// browser session. It returns the user and the session's secret, which goes in the
// cookie; only its hash is stored. After repeated failures for the address or the name,
// it answers ErrThrottled without checking (a 429 with the wait in its RetryAfter); a
// sign-in that succeeds clears both. The throttle is asked twice: before the check
// queues for its turn, so that a throttled sign-in does not take one, and once it has
// its turn, when the check begins and holds one of the keys' free failures until it
// ends (passwords.go, throttle), so that sign-ins that arrive together get no more
// checks than the failures the keys have left.
func (s *Service) SignIn(ctx context.Context, client, name, password string) (store.User, string, error) {
	return s.SignInFrom(ctx, Client{Address: client}, name, password)
}

// SignInFrom is SignIn for client, whose address and user agent the session keeps.
func (s *Service) SignInFrom(ctx context.Context, client Client, name, password string) (store.User, string, error) {
	keys := s.signInKeys(client.Address, name)
	if d, by := s.throttle.wait(s.now(), keys); d > 0 {
		return store.User{}, "", s.throttled(d, by)
	}
	var att *attempt
	u, err := s.checkPassword(ctx, name, password, func() error {
		a, d, by := s.throttle.begin(s.now(), keys)
		if d > 0 {
			return s.throttled(d, by)
		}
		att = a
		return nil
	})
	if att != nil { // the password was checked: err is nil or ErrUnauthenticated
		o := checkPassed
		if err != nil {
			o = checkFailed
		}
		s.throttle.end(s.now(), att, o)
	}
	if err != nil {
		return store.User{}, "", err
	}
	if err := s.passwordAllowed(u); err != nil {
		return store.User{}, "", err
	}
	secret, err := s.StartSession(ctx, u, client)
	if err != nil {
		return store.User{}, "", err
	}
	return u, secret, nil
}

// throttled is the answer to a sign-in that must wait d, for the key by.
func (s *Service) throttled(d time.Duration, by string) error {
	s.limits.Metrics.SignInThrottled.WithLabelValues(by).Inc()
	secs := int((d + time.Second - 1) / time.Second)
	return errs.New(ErrThrottled, map[string]any{"retry_after_s": secs, "by": by},
		"too many failed sign-ins from your address or for this name; try again in %d seconds", secs).Retry(d)
}

// BrowserUser returns the user signed in with the browser session secret. A request
// that changes something (changes) must carry the session's anti-forgery token, csrf:
// the API's X-CSRF-Token header and the web UI's form field are checked by this one
// rule.
func (s *Service) BrowserUser(ctx context.Context, secret, csrf string, changes bool) (store.User, error) {
	_, u, err := s.BrowserSession(ctx, secret, csrf, changes)
	return u, err
}

// BrowserSession is BrowserUser with the session itself.
func (s *Service) BrowserSession(ctx context.Context, secret, csrf string, changes bool) (store.WebSession, store.User, error) {
	ws, u, err := s.Session(ctx, secret)
	if err != nil {
		return ws, u, err
	}
	if changes && !auth.CheckCSRF(secret, csrf) {
		return store.WebSession{}, store.User{}, errs.New(ErrForgery, nil,
			"This form or request is out of date or came from another site: it lacks the page's anti-forgery token. Reload the page and try again.")
	}
	return ws, u, nil
}

// SignOut ends the browser session secret.
func (s *Service) SignOut(ctx context.Context, secret string) error {
	return s.st.DeleteWebSession(ctx, auth.HashToken(secret))
}

// AdminTokenFile is the name, inside the data dir, of the first-start admin token.
const AdminTokenFile = "admin-token"

// Bootstrap makes sure someone can administer a server:
//   - with token set, user "admin" exists with role admin and accepts that token
//     (idempotent, for scripted set-ups);
//   - otherwise, when there are no users at all, it creates "admin", writes a fresh token
//     to <dataDir>/admin-token (mode 0600) and logs where.
func (s *Service) Bootstrap(ctx context.Context, token, dataDir string, log *slog.Logger) error {
	if token != "" {
		if len(token) < auth.MinBootstrapTokenLen {
			return fmt.Errorf("SKRIP_BOOTSTRAP_ADMIN_TOKEN is %d characters; use at least %d (e.g. the output of `openssl rand -hex 24`)",
				len(token), auth.MinBootstrapTokenLen)
		}
		admin, err := s.st.EnsureUser(ctx, store.User{ID: ids.New("u"), Name: "admin", Role: store.RoleAdmin, CreatedAt: s.now()})
		if err != nil {
			return err
		}
		err = s.st.EnsureToken(ctx, store.Token{ID: ids.New("t"), UserID: admin.ID, Hash: auth.HashToken(token), Name: "bootstrap", CreatedAt: s.now()})
		if err != nil {
			return fmt.Errorf("SKRIP_BOOTSTRAP_ADMIN_TOKEN: %w", err)
		}
		log.Info("bootstrap admin token accepted", "user", "admin")
		return nil
	}
	n, err := s.st.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	admin, err := s.st.EnsureUser(ctx, store.User{ID: ids.New("u"), Name: "admin", Role: store.RoleAdmin, CreatedAt: s.now()})
	if err != nil {
		return err
	}
	tok, err := s.issueToken(ctx, admin.ID, "first start", time.Time{}) // the operator's way in: it never expires
	if err != nil {
		return err
	}
	path := filepath.Join(dataDir, AdminTokenFile)
	if err := writeFileAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the admin token: %w", err)
	}
	abs, _ := filepath.Abs(path)
	log.Warn("created user admin; its API token is in "+abs+" (read it, then delete the file)", "path", abs)
	return nil
}

// writeFileAtomic writes data to a temp file beside path, syncs it and renames it, so
// path never holds a partial file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
