package account

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/netip"
	"strings"
	"time"
	"unicode"

	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// `skrip login` is a device authorization (RFC 8628's shape): the CLI starts a login and
// gets a secret device code and a short user code; the user opens the server's page in a
// signed-in browser, checks the code and approves; the CLI, polling with the device
// code, then receives a token named after its machine. Anyone may start a login, so the
// pending ones are capped (in all and per client address) and expire, and a signed-in
// user who tries codes that match nothing is slowed down like a failed sign-in.

// Sentinels of the CLI login.
var (
	// ErrCLILoginPending means the login waits for the user's decision: poll again after
	// the interval.
	ErrCLILoginPending = errors.New("CLI login pending")
	// ErrCLILoginDenied means the user denied the login.
	ErrCLILoginDenied = errors.New("CLI login denied")
	// ErrCLILoginGone means the device code is unknown, expired or already used.
	ErrCLILoginGone = errors.New("CLI login expired")
	// ErrCLILoginNotFound means no pending login has the user code.
	ErrCLILoginNotFound = errors.New("CLI login not found")
	// ErrCLILoginsFull means the server holds as many pending logins as it may.
	ErrCLILoginsFull = errors.New("CLI logins full")
	// ErrCLILoginsPerAddress means the client's address holds as many pending logins as
	// one may.
	ErrCLILoginsPerAddress = errors.New("CLI logins per address")
	// ErrCLICodeThrottled means the user entered too many codes that match nothing lately.
	ErrCLICodeThrottled = errors.New("CLI login codes throttled")
)

// CLI login constants.
const (
	// CLILoginTTL is how long a login waits for its decision.
	CLILoginTTL = 10 * time.Minute
	// CLILoginInterval is how often the CLI polls.
	CLILoginInterval = 2 * time.Second
	// userCodeAlphabet has no vowels (no words) and nothing that looks like another
	// letter or a digit. 20^8 codes (about 2.6e10) against at most SKRIP_CLI_LOGINS_PENDING
	// pending ones, with wrong guesses throttled per user, is not guessable in a login's
	// ten minutes.
	userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"
	userCodeLen      = 8
	// maxMachineLen bounds the machine name a CLI sends, in characters.
	maxMachineLen = 64
	// codeFailures are the codes matching nothing a user may enter before each further
	// one waits, as failed sign-ins do.
	codeFailures = 5
	// cliLoginRetry is what a client refused by a cap is told to wait.
	cliLoginRetry = time.Minute
)

// CLILoginLimits cap the CLI logins waiting for a decision (docs/operating.md). A zero
// field takes its default.
type CLILoginLimits struct {
	Pending    int // in all (1000)
	PerAddress int // from one client address, an IPv6 address by its /64 (5)
	// CodeFailures are the codes matching no login one user may enter before each
	// further one waits (codeFailures, 5).
	CodeFailures int
}

func (l CLILoginLimits) withDefaults() CLILoginLimits {
	if l.Pending <= 0 {
		l.Pending = 1000
	}
	if l.PerAddress <= 0 {
		l.PerAddress = 5
	}
	if l.CodeFailures <= 0 {
		l.CodeFailures = codeFailures
	}
	return l
}

// NewCLILogin is a login just started: the CLI keeps DeviceCode secret and shows
// UserCode.
type NewCLILogin struct {
	DeviceCode string
	UserCode   string // as shown: XXXX-XXXX
	ExpiresAt  time.Time
	Interval   time.Duration
}

// CLIToken is what an approved login gives its CLI, once.
type CLIToken struct {
	ID, Name, Secret string
	User             store.User
}

// StartCLILogin starts a login for the CLI at address client on the machine named
// machine (any text, cleaned and cut to 64 characters; it names the token, and may be
// empty).
func (s *Service) StartCLILogin(ctx context.Context, client, machine string) (NewCLILogin, error) {
	name := "skrip CLI"
	if machine = cleanMachine(machine); machine != "" {
		name += " on " + machine
	}
	now := s.now()
	device := "skrd_" + randomText(32)
	l := store.CLILogin{ID: ids.New("cl"), DeviceHash: auth.HashToken(device), TokenName: name,
		Address: addressKey(client), CreatedAt: now, ExpiresAt: now.Add(CLILoginTTL)}
	var err error
	for range 3 { // a user code taken by another pending login: draw again
		l.UserCode = newUserCode()
		if err = s.st.CreateCLILogin(ctx, l, store.CLILoginCaps{Total: s.limits.CLILogins.Pending, PerAddress: s.limits.CLILogins.PerAddress}); !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	secs := int(cliLoginRetry / time.Second)
	switch {
	case errors.Is(err, store.ErrCLILoginsPerAddress):
		return NewCLILogin{}, errs.New(ErrCLILoginsPerAddress, map[string]any{"limit": s.limits.CLILogins.PerAddress, "retry_after_s": secs},
			"your address has %d CLI logins waiting, as many as one may; finish or wait out one of them", s.limits.CLILogins.PerAddress).Retry(cliLoginRetry)
	case errors.Is(err, store.ErrCLILoginsFull):
		return NewCLILogin{}, errs.New(ErrCLILoginsFull, map[string]any{"limit": s.limits.CLILogins.Pending, "retry_after_s": secs},
			"the server has %d CLI logins waiting, as many as it may; try again in a minute", s.limits.CLILogins.Pending).Retry(cliLoginRetry)
	case err != nil:
		return NewCLILogin{}, err
	}
	return NewCLILogin{DeviceCode: device, UserCode: FormatUserCode(l.UserCode), ExpiresAt: l.ExpiresAt, Interval: CLILoginInterval}, nil
}

// PollCLILogin answers the CLI polling with deviceCode: ErrCLILoginPending while the
// user has not decided, ErrCLILoginDenied once (the login is gone after that),
// ErrCLILoginGone for a code unknown, expired or used, and, the first time after the
// user approved, a new token for them named after the machine.
func (s *Service) PollCLILogin(ctx context.Context, deviceCode string) (CLIToken, error) {
	gone := errs.New(ErrCLILoginGone, nil, "this login has expired or was already used; run skrip login again")
	if len(deviceCode) > 128 {
		return CLIToken{}, gone
	}
	l, err := s.st.CLILoginByDevice(ctx, auth.HashToken(deviceCode))
	if errors.Is(err, store.ErrNotFound) {
		return CLIToken{}, gone
	}
	if err != nil {
		return CLIToken{}, err
	}
	now := s.now()
	switch {
	case !now.Before(l.ExpiresAt):
		return CLIToken{}, gone
	case l.Denied:
		if err := s.st.DeleteCLILogin(ctx, l.ID); err != nil {
			return CLIToken{}, err
		}
		return CLIToken{}, errs.New(ErrCLILoginDenied, nil, "the login was denied in the browser")
	case l.ApprovedBy == "":
		secs := int(CLILoginInterval / time.Second)
		return CLIToken{}, errs.New(ErrCLILoginPending, map[string]any{"interval": secs},
			"the login waits for you to approve it in the browser; poll again in %d seconds", secs)
	}
	u, err := s.st.User(ctx, l.ApprovedBy)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return CLIToken{}, err
	}
	if err != nil || !u.Active() {
		// The approver was disabled or deleted in the meantime: no token for them.
		if err := s.st.DeleteCLILogin(ctx, l.ID); err != nil {
			return CLIToken{}, err
		}
		return CLIToken{}, errs.New(ErrCLILoginDenied, nil, "the user who approved the login can no longer sign in")
	}
	// The token keeps to the rules of every token: the most a user may hold, and the
	// server's longest lifetime.
	if err := s.roomForToken(ctx, u.ID); err != nil {
		return CLIToken{}, err
	}
	secret := auth.NewToken()
	t := store.Token{ID: ids.New("t"), UserID: u.ID, Hash: auth.HashToken(secret), Name: l.TokenName, CreatedAt: now,
		ExpiresAt: s.defaultExpiry(now)}
	if err := s.st.ClaimCLILogin(ctx, l.ID, t, now); errors.Is(err, store.ErrNotFound) {
		return CLIToken{}, gone // another poll took it
	} else if err != nil {
		return CLIToken{}, err
	}
	return CLIToken{ID: t.ID, Name: t.Name, Secret: secret, User: u}, nil
}

// PendingCLILogin returns the pending login with the user code code (in any case, with
// or without its dash), for caller to decide on. Codes that match nothing count against
// caller like failed sign-ins: after a few, each further one must wait.
func (s *Service) PendingCLILogin(ctx context.Context, caller store.User, code string) (store.CLILogin, error) {
	keys := []key{{by: "cli_code", id: "c " + caller.ID, free: s.limits.CLILogins.CodeFailures}}
	if d, _ := s.throttle.wait(s.now(), keys); d > 0 {
		secs := int((d + time.Second - 1) / time.Second)
		return store.CLILogin{}, errs.New(ErrCLICodeThrottled, map[string]any{"retry_after_s": secs},
			"too many codes that match no login lately; try again in %d seconds", secs).Retry(d)
	}
	norm := NormalizeUserCode(code)
	var l store.CLILogin
	var err error
	if len(norm) == userCodeLen {
		l, err = s.st.CLILoginByCode(ctx, norm)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.CLILogin{}, err
		}
	} else {
		err = store.ErrNotFound
	}
	if err != nil || !l.Pending(s.now()) {
		if a, d, _ := s.throttle.begin(s.now(), keys); d == 0 {
			s.throttle.end(s.now(), a, checkFailed)
		}
		return store.CLILogin{}, errs.New(ErrCLILoginNotFound, map[string]any{"code": FormatUserCode(norm)},
			"no login waits with the code %s: check it against the one skrip login shows, or run skrip login again", FormatUserCode(norm))
	}
	return l, nil
}

// DecideCLILogin approves or denies, as actor, the pending login with the user code
// code. An approval is audited; the token is made when the CLI next polls.
func (s *Service) DecideCLILogin(ctx context.Context, actor Actor, code string, approve bool) error {
	l, err := s.PendingCLILogin(ctx, actor.User, code)
	if err != nil {
		return err
	}
	by := ""
	if approve {
		by = actor.User.ID
	}
	if err := s.st.DecideCLILogin(ctx, l.UserCode, by, s.now()); errors.Is(err, store.ErrNotFound) {
		return errs.New(ErrCLILoginNotFound, map[string]any{"code": FormatUserCode(l.UserCode)},
			"the login with the code %s was decided or expired meanwhile; run skrip login again", FormatUserCode(l.UserCode))
	} else if err != nil {
		return err
	}
	if approve {
		s.Audit(ctx, actor, AuditCLILogin, actor.User.Name, map[string]any{"token_name": l.TokenName, "login": l.ID, "cli_address": l.Address})
	}
	return nil
}

// ExpireCLILogins removes the logins past their expiry and says how many.
func (s *Service) ExpireCLILogins(ctx context.Context) (int64, error) {
	return s.st.DeleteExpiredCLILogins(ctx, s.now())
}

// NormalizeUserCode is code as stored: upper case, without the dash or spaces a user may
// type, at most a few characters more than a code has.
func NormalizeUserCode(code string) string {
	var b strings.Builder
	for _, r := range code {
		if b.Len() > userCodeLen+2 {
			break
		}
		if r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FormatUserCode is a stored user code as shown: XXXX-XXXX.
func FormatUserCode(code string) string {
	if len(code) != userCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// MachineOf is the machine a login's token is named after.
func MachineOf(l store.CLILogin) string {
	m, _ := strings.CutPrefix(l.TokenName, "skrip CLI")
	return strings.TrimPrefix(m, " on ")
}

func newUserCode() string {
	b := make([]byte, userCodeLen)
	for i := range b {
		// Rejection sampling keeps every letter equally likely: 240 is 12 × 20.
		var c [1]byte
		for {
			rand.Read(c[:])
			if c[0] < 240 {
				break
			}
		}
		b[i] = userCodeAlphabet[int(c[0])%len(userCodeAlphabet)]
	}
	return string(b)
}

func randomText(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// cleanMachine keeps the letters, digits, spaces and ._- of a machine name, at most
// maxMachineLen of them.
func cleanMachine(m string) string {
	var b strings.Builder
	n := 0
	for _, r := range strings.TrimSpace(m) {
		if n == maxMachineLen {
			break
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == ' ' || r == '.' || r == '-' || r == '_' {
			b.WriteRune(r)
			n++
		}
	}
	return strings.TrimSpace(b.String())
}

// addressKey is the client address that pending logins are counted for: an IPv6 address
// by its /64, which one subscriber usually holds whole.
func addressKey(client string) string {
	if a, err := netip.ParseAddr(client); err == nil {
		a = a.Unmap()
		if a.Is6() {
			p, _ := a.Prefix(64)
			return p.String()
		}
		return a.String()
	}
	if len(client) > 64 {
		client = client[:64]
	}
	return client
}
