package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/store"
)

// registerAccount adds the account page's forms: API tokens (issue, revoke) and signed-in
// browsers (end one, end all).
func (h *Handler) registerAccount(mux *http.ServeMux) {
	mux.Handle("POST /account/tokens", h.page(h.accountIssueToken))
	mux.Handle("POST /account/tokens/{id}/revoke", h.page(h.accountRevokeToken))
	mux.Handle("POST /account/sessions/{id}/end", h.page(h.accountEndSession))
	mux.Handle("POST /account/sessions/end-all", h.page(h.accountEndSessions))
}

// tokenExpiries are the expiries the account page offers ("" is until revoked).
var tokenExpiries = []string{"", "7d", "30d", "90d", "365d"}

// tokenRow is one of the caller's tokens on the account page.
type tokenRow struct {
	store.Token
	Scope []string
}

// sessionRow is one of the caller's signed-in browsers on the account page.
type sessionRow struct {
	store.WebSession
	Ends    any
	Current bool
}

// accountData is what the account page shows beside the usage: the caller's tokens and
// browsers.
func (h *Handler) accountData(r *http.Request, c *call, data map[string]any) error {
	tokens, err := h.accounts.Tokens(r.Context(), c.User, "")
	if err != nil {
		return err
	}
	rows := make([]tokenRow, 0, len(tokens))
	for _, t := range tokens {
		rows = append(rows, tokenRow{Token: t, Scope: account.Scope(t.Scope).Words()})
	}
	sessions, err := h.accounts.WebSessions(r.Context(), c.User.ID)
	if err != nil {
		return err
	}
	ws, _, _ := h.accounts.Session(r.Context(), c.secret)
	srows := make([]sessionRow, 0, len(sessions))
	for _, s := range sessions {
		srows = append(srows, sessionRow{WebSession: s, Ends: h.accounts.SessionEnds(s), Current: s.ID == ws.ID})
	}
	data["Tokens"] = rows
	data["Sessions"] = srows
	data["ScopeWords"] = account.ScopeWords[1:]
	data["Expiries"] = tokenExpiries
	return nil
}

func (h *Handler) accountIssueToken(w http.ResponseWriter, r *http.Request, c *call) error {
	spec := account.TokenSpec{Name: strings.TrimSpace(r.PostFormValue("name")), Scope: r.PostForm["scope"], ExpiresIn: r.PostFormValue("expires_in")}
	t, secret, err := h.accounts.CreateToken(r.Context(), h.actor(r, c), c.User.ID, spec)
	if errors.Is(err, account.ErrBadToken) {
		status, _ := h.statusOf(w, err)
		return h.showAccount(w, r, c, status, map[string]any{"TokenError": h.message(r, err), "TokenName": spec.Name})
	}
	if err != nil {
		return err
	}
	return h.showAccount(w, r, c, http.StatusCreated, map[string]any{"NewToken": secret, "NewTokenName": t.Name})
}

func (h *Handler) accountRevokeToken(w http.ResponseWriter, r *http.Request, c *call) error {
	// Only the caller's own tokens: an admin revokes others' through the API or the CLI.
	t, err := h.accounts.RevokeToken(r.Context(), store.User{ID: c.User.ID, Role: store.RoleUser}, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.accounts.Audit(r.Context(), h.actor(r, c), account.AuditTokenRevoked, c.User.Name,
		map[string]any{"token": t.ID, "name": t.Name, "scope": t.Scope})
	redirect(w, r, "/account#tokens-h")
	return nil
}

func (h *Handler) accountEndSession(w http.ResponseWriter, r *http.Request, c *call) error {
	id := r.PathValue("id")
	if err := h.accounts.EndSession(r.Context(), c.User.ID, id); err != nil {
		return err
	}
	h.accounts.Audit(r.Context(), h.actor(r, c), account.AuditSessionsEnded, c.User.Name, map[string]any{"sessions": 1, "session": id})
	redirect(w, r, "/account#sessions-h")
	return nil
}

// accountEndSessions signs the caller out of every browser, this one too.
func (h *Handler) accountEndSessions(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := h.accounts.EndSessions(r.Context(), c.User.ID)
	if err != nil {
		return err
	}
	h.accounts.Audit(r.Context(), h.actor(r, c), account.AuditSessionsEnded, c.User.Name, map[string]any{"sessions": n})
	http.SetCookie(w, &http.Cookie{Name: account.SessionCookie, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: h.front.Secure(r), MaxAge: -1})
	redirect(w, r, "/signin")
	return nil
}
