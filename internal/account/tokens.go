package account

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// Sentinel errors of tokens and web sessions.
var (
	// ErrBadToken means a new token's name, scope or expiry is not valid.
	ErrBadToken = errors.New("invalid token request")
	// ErrTokenNotFound means no such token, or one the caller may not see.
	ErrTokenNotFound = errors.New("token not found")
	// ErrScope means the request is outside the scope of the token it was made with.
	ErrScope = errors.New("outside the token's scope")
	// ErrWebSessionNotFound means the caller has no browser sign-in of that id.
	ErrWebSessionNotFound = errors.New("web session not found")
	// ErrTokenLimit means the user holds MaxTokensPerUser tokens already.
	ErrTokenLimit = errors.New("too many tokens")
)

// MaxTokensPerUser is the most tokens one user may hold unless SKRIP_TOKENS_PER_USER
// (Limits.TokensPerUser) says otherwise; CreateToken refuses more (the
// user revokes one first).
const MaxTokensPerUser = 100

// The words of a token's scope (SPEC §2 "Tokens"). ScopeAll allows everything its user
// may do; the others are the parts of the API a token may be kept to.
const (
	ScopeAll       = store.ScopeAll
	ScopeFiles     = "files"
	ScopeRuns      = "runs"
	ScopeSandboxes = "sandboxes"
	ScopeRead      = "read"
)

// ScopeWords are the words a scope is made of, in the order a scope is written.
var ScopeWords = []string{ScopeAll, ScopeFiles, ScopeRuns, ScopeSandboxes, ScopeRead}

// Scope is what a credential may do: "all", or a comma-separated subset of files, runs,
// sandboxes and read, in ScopeWords' order. A browser's sign-in is "all".
type Scope string

// Words is the scope as a list.
func (s Scope) Words() []string { return strings.Split(string(s), ",") }

// Has reports whether the scope holds word; "all" holds every word.
func (s Scope) Has(word string) bool {
	return s == ScopeAll || slices.Contains(s.Words(), word)
}

// All reports whether the scope allows everything.
func (s Scope) All() bool { return s == ScopeAll }

// ParseScope checks words and returns them as a Scope. No words is "all"; "all" with
// other words is "all". A word that is none of ScopeWords is refused, named.
func ParseScope(words []string) (Scope, error) {
	var have []string
	for _, w := range words {
		for _, part := range strings.Split(w, ",") {
			part = strings.ToLower(strings.TrimSpace(part))
			if part == "" {
				continue
			}
			if !slices.Contains(ScopeWords, part) {
				return "", errs.New(ErrBadToken, map[string]any{"field": "scope", "value": part, "allowed": ScopeWords},
					"token scope %q is not one of all, files, runs, sandboxes, read", part)
			}
			have = append(have, part)
		}
	}
	if len(have) == 0 || slices.Contains(have, ScopeAll) {
		return ScopeAll, nil
	}
	var out []string
	for _, w := range ScopeWords {
		if slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return Scope(strings.Join(out, ",")), nil
}

// TokenSpec is what a new token is to be: its name, scope words (none: all) and how long
// it lasts ("720h", "30d"; empty: until revoked, unless SKRIP_TOKEN_MAX_LIFETIME is set,
// which is then the expiry).
type TokenSpec struct {
	Name      string
	Scope     []string
	ExpiresIn string
}

// MaxTokenNameLen is the longest token name, in bytes.
const MaxTokenNameLen = 200

// touchEvery is how stale a token's last use or a browser's last sight may be before a
// request writes it again: at most one write a minute per token or session.
const touchEvery = time.Minute

// roomForToken refuses a new token for userID when they hold Limits.TokensPerUser.
func (s *Service) roomForToken(ctx context.Context, userID string) error {
	n, err := s.st.CountTokens(ctx, userID)
	if err != nil {
		return err
	}
	if n >= s.limits.TokensPerUser {
		return errs.New(ErrTokenLimit, map[string]any{"limit": s.limits.TokensPerUser},
			"the user holds %d tokens, as many as one user may; revoke one first", n)
	}
	return nil
}

// defaultExpiry is when a token made at now without an asked-for expiry expires:
// SKRIP_TOKEN_MAX_LIFETIME later, or never (the zero time) when that is 0.
func (s *Service) defaultExpiry(now time.Time) time.Time {
	if s.limits.TokenMaxLifetime > 0 {
		return now.Add(s.limits.TokenMaxLifetime)
	}
	return time.Time{}
}

// issueToken stores a token of scope all for userID, expiring at expires (zero: never).
func (s *Service) issueToken(ctx context.Context, userID, name string, expires time.Time) (string, error) {
	tok := auth.NewToken()
	err := s.st.CreateToken(ctx, store.Token{ID: ids.New("t"), UserID: userID, Hash: auth.HashToken(tok), Name: name, Scope: ScopeAll,
		CreatedAt: s.now(), ExpiresAt: expires})
	if err != nil {
		return "", err
	}
	return tok, nil
}

// CreateToken makes a token of spec for the user ref (an id or a name) names, for actor,
// and audits it. Anyone may make their own; an admin may make anyone's, and any other
// user's is answered as if missing (Lookup). The rules of the token itself (name, scope,
// expiry no longer than SKRIP_TOKEN_MAX_LIFETIME, MaxTokensPerUser) are the same
// whoever asks. It returns the token as stored, with its user's name, and, this once,
// its secret; only its hash is kept. The API and the web UI (the account page, the
// admin's users page) all come here, so they cannot differ.
func (s *Service) CreateToken(ctx context.Context, actor Actor, ref string, spec TokenSpec) (store.Token, string, error) {
	target, err := s.Lookup(ctx, actor.User, ref)
	if err != nil {
		return store.Token{}, "", err
	}
	t, secret, err := s.createToken(ctx, target.ID, spec)
	if err != nil {
		return store.Token{}, "", err
	}
	t.UserName = target.Name
	details := map[string]any{"token": t.ID, "name": t.Name, "scope": t.Scope}
	if !t.ExpiresAt.IsZero() {
		details["expires_at"] = t.ExpiresAt.Format(time.RFC3339)
	}
	s.Audit(ctx, actor, AuditTokenCreated, target.Name, details)
	return t, secret, nil
}

// createToken checks spec and makes a token of it for the user userID, whoever asks.
func (s *Service) createToken(ctx context.Context, userID string, spec TokenSpec) (store.Token, string, error) {
	name := strings.TrimSpace(spec.Name)
	if len(name) > MaxTokenNameLen {
		return store.Token{}, "", errs.New(ErrBadToken, map[string]any{"field": "name", "max_length": MaxTokenNameLen},
			"token name is %d bytes; the limit is %d", len(name), MaxTokenNameLen)
	}
	scope, err := ParseScope(spec.Scope)
	if err != nil {
		return store.Token{}, "", err
	}
	if err := s.roomForToken(ctx, userID); err != nil {
		return store.Token{}, "", err
	}
	now := s.now()
	t := store.Token{ID: ids.New("t"), UserID: userID, Name: name, Scope: string(scope), CreatedAt: now}
	maxLife := s.limits.TokenMaxLifetime
	if spec.ExpiresIn != "" {
		d, err := config.ParseDuration(spec.ExpiresIn)
		if err != nil || d <= 0 {
			return store.Token{}, "", errs.New(ErrBadToken, map[string]any{"field": "expires_in", "value": spec.ExpiresIn},
				"token expiry %q is not a positive duration such as 720h or 30d", spec.ExpiresIn)
		}
		if maxLife > 0 && d > maxLife {
			return store.Token{}, "", errs.New(ErrBadToken, map[string]any{"field": "expires_in", "value": spec.ExpiresIn, "max": maxLife.String()},
				"token expiry %q is longer than this server allows (SKRIP_TOKEN_MAX_LIFETIME, %s)", spec.ExpiresIn, maxLife)
		}
		t.ExpiresAt = now.Add(d)
	} else if maxLife > 0 {
		t.ExpiresAt = now.Add(maxLife)
	}
	secret := auth.NewToken()
	t.Hash = auth.HashToken(secret)
	if err := s.st.CreateToken(ctx, t); err != nil {
		return store.Token{}, "", err
	}
	return t, secret, nil
}

// Credential is who made a request and with what: the user, the scope the credential
// allows, and which token or browser sign-in it was (one of TokenID, SessionID).
type Credential struct {
	User      store.User
	Scope     Scope
	TokenID   string
	SessionID string
}

// Authenticate returns the user holding token. A token unknown, revoked or expired, or
// of a user who is not active, is refused. The token's last use is recorded, at most
// once a minute. AuthenticateToken also says the token's scope.
func (s *Service) Authenticate(ctx context.Context, token string) (store.User, error) {
	c, err := s.AuthenticateToken(ctx, token)
	return c.User, err
}

// AuthenticateToken is Authenticate with the token's scope and id: what the API checks
// a request against.
func (s *Service) AuthenticateToken(ctx context.Context, token string) (Credential, error) {
	now := s.now()
	t, u, err := s.st.TokenByHash(ctx, auth.HashToken(token), now)
	if errors.Is(err, store.ErrNotFound) {
		return Credential{}, errs.New(ErrUnauthenticated, nil, "the token is not valid: it is unknown, revoked or expired")
	}
	if err != nil {
		return Credential{}, err
	}
	if t.LastUsedAt.IsZero() || now.Sub(t.LastUsedAt) >= touchEvery {
		if _, err := s.st.TouchToken(ctx, t.ID, now, touchEvery); err != nil {
			return Credential{}, err
		}
	}
	return Credential{User: u, Scope: Scope(scopeOrAll(t.Scope)), TokenID: t.ID}, nil
}

func scopeOrAll(s string) string {
	if s == "" {
		return ScopeAll
	}
	return s
}

// Tokens lists tokens for caller: with ref empty, the caller's own; with ref a user's
// id or name, that user's (the caller's own, or anyone's for an admin; anyone else is
// answered as if missing); with ref "*", every user's (admins only).
func (s *Service) Tokens(ctx context.Context, caller store.User, ref string) ([]store.Token, error) {
	switch ref {
	case "":
		return s.st.Tokens(ctx, caller.ID)
	case "*":
		if err := RequireAdmin(caller, "listing every user's tokens"); err != nil {
			return nil, err
		}
		return s.st.Tokens(ctx, "")
	}
	u, err := s.Lookup(ctx, caller, ref)
	if err != nil {
		return nil, err
	}
	return s.st.Tokens(ctx, u.ID)
}

// RevokeToken deletes the token id for caller, who may revoke their own and, as an
// admin, anyone's; someone else's is answered as if missing. From then on the token is
// refused. It returns the token revoked.
func (s *Service) RevokeToken(ctx context.Context, caller store.User, id string) (store.Token, error) {
	notFound := errs.New(ErrTokenNotFound, map[string]any{"token": id}, "no token %q", id)
	t, err := s.st.Token(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Token{}, notFound
	}
	if err != nil {
		return store.Token{}, err
	}
	if t.UserID != caller.ID && caller.Role != store.RoleAdmin {
		return store.Token{}, notFound
	}
	if err := s.st.DeleteToken(ctx, id); errors.Is(err, store.ErrNotFound) {
		return store.Token{}, notFound
	} else if err != nil {
		return store.Token{}, err
	}
	return t, nil
}
