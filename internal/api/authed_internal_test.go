package api

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// TestAuthedLeavesTheRequest (issue 31): authed hands its handler a copy of the request
// that carries the user and credential, and leaves the request it was given as it was
// (it once overwrote it, *r = *...); the request log still names the user.
func TestAuthedLeavesTheRequest(t *testing.T) {
	accounts := account.New(storetest.SQLite(t), account.Limits{})
	ada, token, err := accounts.CreateUser(context.Background(), account.Actor{User: store.User{Role: store.RoleAdmin}}, "ada", store.RoleUser, "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	s := New(Services{Accounts: accounts}, Ops{}, log)
	var inner *http.Request
	authed := s.authed(func(w http.ResponseWriter, r *http.Request, u store.User) error {
		inner = r
		if got, ok := httpkit.UserFrom(r.Context()); !ok || got.ID != ada.ID || u.ID != ada.ID {
			t.Errorf("the handler's request names %+v (%v), its user %s; want ada", got, ok, u.ID)
		}
		if c, ok := httpkit.CredentialFrom(r.Context()); !ok || c.User.ID != ada.ID {
			t.Errorf("the handler's request carries no credential of ada's: %+v", c)
		}
		return nil
	})
	var outer *http.Request
	var outerCtx context.Context
	h := httpkit.Observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		outer, outerCtx = r, r.Context()
		authed.ServeHTTP(w, r)
	}), log, metrics.New(), time.Minute, httpkit.Front{})
	r := httptest.NewRequest("GET", "/api/v1/me", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	h.ServeHTTP(httptest.NewRecorder(), r)
	if inner == nil || inner == outer {
		t.Fatalf("the handler got the caller's own request (%p, caller's %p), not a copy", inner, outer)
	}
	if outer.Context() != outerCtx {
		t.Error("authed changed the caller's request")
	}
	if _, ok := httpkit.UserFrom(outer.Context()); ok {
		t.Error("the caller's request names the user: it was overwritten")
	}
	if line := buf.String(); !strings.Contains(line, "user="+ada.ID) {
		t.Errorf("the request log does not name the user:\n%s", line)
	}
}
