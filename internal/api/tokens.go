package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// registerTokens adds the routes of API tokens and of the caller's browser sign-ins
// (docs/api.md "Tokens" and "Web sessions"). POST /api/v1/users/{id}/tokens is in the
// users' list.
func (s *Server) registerTokens(m Mux) {
	m.Handle("GET /api/v1/tokens", s.authed(s.listTokens))
	m.Handle("DELETE /api/v1/tokens/{id}", s.authed(s.revokeToken))
	m.Handle("GET /api/v1/me/sessions", s.authed(s.listWebSessions))
	m.Handle("DELETE /api/v1/me/sessions", s.authed(s.endWebSessions))
	m.Handle("DELETE /api/v1/me/sessions/{id}", s.authed(s.endWebSession))
}

// tokenOf is the public view of a token: never its secret or hash.
func tokenOf(t store.Token) wire.Token {
	out := wire.Token{ID: t.ID, UserID: t.UserID, User: t.UserName, Name: t.Name, Scope: account.Scope(t.Scope).Words(), CreatedAt: t.CreatedAt}
	if !t.ExpiresAt.IsZero() {
		e := t.ExpiresAt
		out.ExpiresAt = &e
	}
	if !t.LastUsedAt.IsZero() {
		u := t.LastUsedAt
		out.LastUsedAt = &u
	}
	return out
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, caller store.User) error {
	var req wire.NewToken
	if r.ContentLength != 0 {
		if err := httpkit.DecodeJSON(w, r, &req); err != nil {
			return err
		}
	}
	t, secret, err := s.svc.Accounts.CreateToken(r.Context(), s.actor(r, caller), r.PathValue("id"),
		account.TokenSpec{Name: req.Name, Scope: req.Scope, ExpiresIn: req.ExpiresIn})
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, wire.IssuedToken{Token: tokenOf(t), Secret: secret})
	return nil
}

// listTokens lists the caller's tokens; ?user=NAME-OR-ID another user's (admins, or the
// caller naming themselves), ?user=* every user's (admins).
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, caller store.User) error {
	tokens, err := s.svc.Accounts.Tokens(r.Context(), caller, r.URL.Query().Get("user"))
	if err != nil {
		return err
	}
	out := wire.TokenList{Tokens: make([]wire.Token, 0, len(tokens))}
	for _, t := range tokens {
		out.Tokens = append(out.Tokens, tokenOf(t))
	}
	out.Count = len(out.Tokens)
	w.Header().Set("Cache-Control", "no-store")
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

// revokeToken revokes the token {id}, or with {id} "current" the token the request is
// made with (the CLI's logout).
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, caller store.User) error {
	id := r.PathValue("id")
	if id == "current" {
		c, _ := httpkit.CredentialFrom(r.Context())
		if c.TokenID == "" {
			return errs.New(httpkit.ErrInvalidRequest, map[string]any{"token": id},
				"DELETE /api/v1/tokens/current revokes the token a request is made with; this request was made without one (a browser signs out at /signout)")
		}
		id = c.TokenID
	}
	t, err := s.svc.Accounts.RevokeToken(r.Context(), caller, id)
	if err != nil {
		return err
	}
	s.svc.Accounts.Audit(r.Context(), s.actor(r, caller), account.AuditTokenRevoked, t.UserName,
		map[string]any{"token": t.ID, "name": t.Name, "scope": t.Scope})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listWebSessions(w http.ResponseWriter, r *http.Request, caller store.User) error {
	list, err := s.svc.Accounts.WebSessions(r.Context(), caller.ID)
	if err != nil {
		return err
	}
	c, _ := httpkit.CredentialFrom(r.Context())
	out := make([]wire.WebSession, 0, len(list))
	for _, ws := range list {
		out = append(out, wire.WebSession{ID: ws.ID, CreatedAt: ws.CreatedAt, LastSeenAt: ws.LastSeenAt,
			ExpiresAt: s.svc.Accounts.SessionEnds(ws), Address: ws.Address, UserAgent: ws.UserAgent,
			Current: c.SessionID != "" && ws.ID == c.SessionID})
	}
	w.Header().Set("Cache-Control", "no-store")
	httpkit.WriteJSON(w, http.StatusOK, wire.WebSessionList{Count: len(out), Sessions: out})
	return nil
}

func (s *Server) endWebSessions(w http.ResponseWriter, r *http.Request, caller store.User) error {
	n, err := s.svc.Accounts.EndSessions(r.Context(), caller.ID)
	if err != nil {
		return err
	}
	s.svc.Accounts.Audit(r.Context(), s.actor(r, caller), account.AuditSessionsEnded, caller.Name, map[string]any{"sessions": n})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) endWebSession(w http.ResponseWriter, r *http.Request, caller store.User) error {
	id := r.PathValue("id")
	if err := s.svc.Accounts.EndSession(r.Context(), caller.ID, id); err != nil {
		return err
	}
	s.svc.Accounts.Audit(r.Context(), s.actor(r, caller), account.AuditSessionsEnded, caller.Name, map[string]any{"sessions": 1, "session": id})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
