package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/lifecycle"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// registerLifecycle adds the routes of a user's life after creation (SPEC §2 "Users"):
// disable, enable, delete, export, invitations and the audit log.
func (s *Server) registerLifecycle(m Mux) {
	m.Handle("GET /api/v1/users/{id}", s.authed(s.getUser))
	m.Handle("DELETE /api/v1/users/{id}", s.authed(s.deleteUser))
	m.Handle("POST /api/v1/users/{id}/disable", s.authed(s.setUserState(false)))
	m.Handle("POST /api/v1/users/{id}/enable", s.authed(s.setUserState(true)))
	m.Handle("GET /api/v1/users/{id}/export", s.authed(s.exportUser))
	m.Handle("POST /api/v1/invitations", s.authed(s.createInvitation))
	m.Handle("GET /api/v1/audit", s.authed(s.listAudit))
}

// actor is the caller with the client's address, for the audit log.
func (s *Server) actor(r *http.Request, u store.User) account.Actor {
	return account.Actor{User: u, Address: s.ops.Front.ClientAddr(r)}
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, caller store.User) error {
	u, err := s.svc.Accounts.Lookup(r.Context(), caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, userOf(u))
	return nil
}

func (s *Server) setUserState(enable bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, caller store.User) error {
		f := s.svc.Lifecycle.Disable
		if enable {
			f = s.svc.Lifecycle.Enable
		}
		u, err := f(r.Context(), s.actor(r, caller), r.PathValue("id"))
		if err != nil {
			return err
		}
		httpkit.WriteJSON(w, http.StatusOK, userOf(u))
		return nil
	}
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, caller store.User) error {
	if err := s.svc.Lifecycle.Delete(r.Context(), s.actor(r, caller), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// exportUser streams the zip as it is made. Once its first bytes are sent, an error can
// no longer be answered: the connection is broken instead (http.ErrAbortHandler), so
// the client never gets an archive that looks whole.
func (s *Server) exportUser(w http.ResponseWriter, r *http.Request, caller store.User) error {
	actor := s.actor(r, caller)
	u, err := s.svc.Lifecycle.ExportTarget(r.Context(), actor, r.PathValue("id"))
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/zip")
	// A user name may hold any letter: the ASCII filename and filename* both name it.
	w.Header().Set("Content-Disposition", httpkit.ContentDisposition(lifecycle.ExportName(u, time.Now())))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := s.svc.Lifecycle.Export(r.Context(), actor, u, w); err != nil {
		s.log.Error("exporting a user failed midway; the connection is broken so the zip is not taken for whole", "user", u.Name, "error", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (s *Server) createInvitation(w http.ResponseWriter, r *http.Request, caller store.User) error {
	var req wire.NewInvitation
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	var ttl time.Duration
	if req.ExpiresIn != "" {
		d, err := config.ParseDuration(req.ExpiresIn)
		if err != nil || d == 0 {
			return errs.New(account.ErrInvalid, map[string]any{"field": "expires_in", "value": req.ExpiresIn},
				"expires_in %q is not a duration such as 48h or 7d", req.ExpiresIn)
		}
		ttl = d
	}
	secret, exp, err := s.svc.Accounts.Invite(r.Context(), s.actor(r, caller), req.Role, ttl)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, wire.Invitation{URL: s.ops.Front.URL(r, account.InvitePath+secret), ExpiresAt: exp})
	return nil
}

// Audit pages: the default and the most one page holds.
const (
	defaultAuditPage = 100
	maxAuditPage     = 1000
)

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, caller store.User) error {
	limit := defaultAuditPage
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditPage {
			return errs.New(account.ErrInvalid, map[string]any{"field": "limit", "value": v},
				"limit %q must be a whole number from 1 to %d", v, maxAuditPage)
		}
		limit = n
	}
	events, err := s.svc.Accounts.AuditLog(r.Context(), caller, r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, auditList(events, limit))
	return nil
}

// auditList is events in the API's words; a full page carries the cursor of the next.
func auditList(events []store.AuditEvent, limit int) wire.AuditList {
	out := wire.AuditList{Events: make([]wire.AuditEvent, 0, len(events))}
	for _, e := range events {
		var d map[string]any
		if json.Unmarshal([]byte(e.Details), &d) != nil || d == nil {
			d = map[string]any{}
		}
		out.Events = append(out.Events, wire.AuditEvent{ID: e.ID, At: e.At, Actor: e.Actor, Action: e.Action, Target: e.Target, Address: e.Address, Details: d})
	}
	if len(events) == limit && limit > 0 {
		out.Cursor = events[len(events)-1].ID
	}
	return out
}
