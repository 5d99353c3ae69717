package account

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/store"
)

// SessionCookie is the name of the cookie that holds a browser's sign-in.
const SessionCookie = "skrip_session"

// MaxUserAgentLen is the most of a browser's User-Agent a sign-in keeps, in bytes.
const MaxUserAgentLen = 256

// Client is where a sign-in comes from: the client's address (as httpkit.Front resolves
// it) and its User-Agent.
type Client struct {
	Address   string
	UserAgent string
}

// SessionMax is how long a browser sign-in lasts at most (SKRIP_WEB_SESSION_MAX), the
// cookie's Max-Age.
func (s *Service) SessionMax() time.Duration { return s.limits.WebSessionMax }

// SessionIdle is how long a browser sign-in lasts unused (SKRIP_WEB_SESSION_IDLE).
func (s *Service) SessionIdle() time.Duration { return s.limits.WebSessionIdle }

// StartSession signs u in on a browser at client: it stores a session and returns its
// secret, for the cookie; only the secret's hash is kept. (A password sign-in and a
// sign-on both end here.)
func (s *Service) StartSession(ctx context.Context, u store.User, client Client) (string, error) {
	secret := auth.NewToken()
	now := s.now()
	err := s.st.CreateWebSession(ctx, store.WebSession{ID: ids.New("ws"), Hash: auth.HashToken(secret), UserID: u.ID,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(s.limits.WebSessionMax),
		Address: truncate(client.Address, 64), UserAgent: truncate(client.UserAgent, MaxUserAgentLen)})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// truncate cuts v to at most n bytes, on a character boundary.
func truncate(v string, n int) string {
	v = strings.ToValidUTF8(v, "")
	if len(v) <= n {
		return v
	}
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n]
}

// Session returns the browser sign-in of secret and its user, if it is neither past
// SKRIP_WEB_SESSION_MAX nor idle longer than SKRIP_WEB_SESSION_IDLE. The request counts
// as use: the session's last sight is recorded, at most once a minute.
func (s *Service) Session(ctx context.Context, secret string) (store.WebSession, store.User, error) {
	now := s.now()
	ws, u, err := s.st.WebSessionByHash(ctx, auth.HashToken(secret), now, s.limits.WebSessionIdle)
	if errors.Is(err, store.ErrNotFound) {
		return store.WebSession{}, store.User{}, errs.New(ErrUnauthenticated, nil, "you are signed out; sign in again")
	}
	if err != nil {
		return store.WebSession{}, store.User{}, err
	}
	if now.Sub(ws.LastSeenAt) >= touchEvery {
		if _, err := s.st.TouchWebSession(ctx, ws.ID, now, touchEvery); err != nil {
			return store.WebSession{}, store.User{}, err
		}
		ws.LastSeenAt = now
	}
	return ws, u, nil
}

// SessionUser returns the user signed in with the browser session secret.
func (s *Service) SessionUser(ctx context.Context, secret string) (store.User, error) {
	_, u, err := s.Session(ctx, secret)
	return u, err
}

// SessionEnds is when ws ends if it stays unused: at its idle expiry or its absolute
// one, whichever comes first.
func (s *Service) SessionEnds(ws store.WebSession) time.Time {
	idle := ws.LastSeenAt.Add(s.limits.WebSessionIdle)
	if idle.Before(ws.ExpiresAt) {
		return idle
	}
	return ws.ExpiresAt
}

// WebSessions lists the user's signed-in browsers, the latest seen first.
func (s *Service) WebSessions(ctx context.Context, userID string) ([]store.WebSession, error) {
	return s.st.WebSessions(ctx, userID, s.now(), s.limits.WebSessionIdle)
}

// EndSessions signs the user out of every browser and says of how many.
func (s *Service) EndSessions(ctx context.Context, userID string) (int64, error) {
	return s.st.DeleteUserWebSessions(ctx, userID)
}

// EndSession signs the user out of their browser session id; one they do not have is
// ErrWebSessionNotFound.
func (s *Service) EndSession(ctx context.Context, userID, id string) error {
	err := s.st.DeleteWebSessionByID(ctx, userID, id)
	if errors.Is(err, store.ErrNotFound) {
		return errs.New(ErrWebSessionNotFound, map[string]any{"session": id}, "you have no signed-in browser %q", id)
	}
	return err
}

// ExpireSignIns removes browser sessions past their expiry or idle longer than
// SKRIP_WEB_SESSION_IDLE, and says how many.
func (s *Service) ExpireSignIns(ctx context.Context) (int64, error) {
	return s.st.DeleteExpiredWebSessions(ctx, s.now(), s.limits.WebSessionIdle)
}
