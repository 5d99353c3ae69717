package api

import (
	"net/http"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/wire"
)

// A tool's maintainers (docs/api.md "Maintainers"): they may do to the tool what its
// author may. Listing, adding and removing are for its maintainers and admins; the
// catalog holds the rules.
func (s *Server) registerMaintainers(m Mux) {
	m.Handle("GET /api/v1/tools/{tool}/maintainers", s.authed(s.listMaintainers))
	m.Handle("POST /api/v1/tools/{tool}/maintainers", s.authed(s.addMaintainer))
	m.Handle("DELETE /api/v1/tools/{tool}/maintainers", s.authed(s.removeMaintainer))
	m.Handle("DELETE /api/v1/tools/{tool}/maintainers/{user}", s.authed(s.removeMaintainer))
}

func maintainerOf(t store.Tool, m store.Maintainer) wire.Maintainer {
	return wire.Maintainer{UserID: m.UserID, Name: m.Name, Role: m.Role, Author: m.UserID == t.AuthorID, AddedBy: m.AddedBy, AddedAt: m.AddedAt}
}

func (s *Server) listMaintainers(w http.ResponseWriter, r *http.Request, u store.User) error {
	t, list, err := s.svc.Catalog.Maintainers(r.Context(), u, r.PathValue("tool"))
	if err != nil {
		return err
	}
	out := wire.MaintainerList{Maintainers: make([]wire.Maintainer, 0, len(list))}
	for _, m := range list {
		out.Maintainers = append(out.Maintainers, maintainerOf(t, m))
	}
	out.Count = len(out.Maintainers)
	httpkit.WriteJSON(w, http.StatusOK, out)
	return nil
}

// addMaintainer answers 201 with the new maintainer, or 200 when they were one already.
func (s *Server) addMaintainer(w http.ResponseWriter, r *http.Request, u store.User) error {
	var req wire.MaintainerRef
	if err := httpkit.DecodeJSON(w, r, &req); err != nil {
		return err
	}
	t, m, added, err := s.svc.Catalog.AddMaintainer(r.Context(), u, r.PathValue("tool"), req.User)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if added {
		status = http.StatusCreated
		s.svc.Accounts.Audit(r.Context(), s.actor(r, u), account.AuditMaintainerAdded, t.Slug, map[string]any{"tool": t.ID, "user": m.Name, "user_id": m.UserID})
	}
	httpkit.WriteJSON(w, status, maintainerOf(t, m))
	return nil
}

// removeMaintainer answers 204. The user is the path's {user}, or the body's "user" on
// DELETE /maintainers itself (SPEC §6 names the route without it).
func (s *Server) removeMaintainer(w http.ResponseWriter, r *http.Request, u store.User) error {
	who := r.PathValue("user")
	if who == "" {
		var req wire.MaintainerRef
		if err := httpkit.DecodeJSON(w, r, &req); err != nil {
			return err
		}
		who = req.User
	}
	t, m, err := s.svc.Catalog.RemoveMaintainer(r.Context(), u, r.PathValue("tool"), who)
	if err != nil {
		return err
	}
	s.svc.Accounts.Audit(r.Context(), s.actor(r, u), account.AuditMaintainerRemoved, t.Slug, map[string]any{"tool": t.ID, "user": m.Name, "user_id": m.UserID})
	w.WriteHeader(http.StatusNoContent)
	return nil
}
