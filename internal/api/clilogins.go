package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/wire"
)

// maxCLILoginBody caps the bodies of the CLI login routes, which anyone may send: a
// machine name or a device code is far less.
const maxCLILoginBody = 4 << 10

// CLILoginPage is the web page where a signed-in user approves a `skrip login`.
const CLILoginPage = "/cli/login"

// registerCLILogins adds the device authorization routes of `skrip login`; neither takes
// a token (docs/api.md "CLI login").
func (s *Server) registerCLILogins(m Mux) {
	m.Handle("POST /api/v1/cli/logins", s.anonymous(s.startCLILogin))
	m.Handle("POST /api/v1/cli/logins/token", s.anonymous(s.pollCLILogin))
}

// anonymous wraps h, a route that needs no credential, writing its error through the
// error table.
func (s *Server) anonymous(h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxCLILoginBody)
		if err := h(w, r); err != nil {
			httpkit.WriteError(w, r, s.log, err)
		}
	})
}

func (s *Server) startCLILogin(w http.ResponseWriter, r *http.Request) error {
	var in wire.CLILoginRequest
	if r.ContentLength != 0 {
		if err := httpkit.DecodeJSON(w, r, &in); err != nil {
			return err
		}
	}
	l, err := s.svc.Accounts.StartCLILogin(r.Context(), s.ops.Front.ClientAddr(r), in.Machine)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusCreated, wire.CLILoginStart{
		DeviceCode:      l.DeviceCode,
		UserCode:        l.UserCode,
		VerificationURL: s.ops.Front.URL(r, CLILoginPage+"?code="+url.QueryEscape(l.UserCode)),
		ExpiresIn:       int(time.Until(l.ExpiresAt).Round(time.Second) / time.Second),
		Interval:        int(l.Interval / time.Second),
	})
	return nil
}

func (s *Server) pollCLILogin(w http.ResponseWriter, r *http.Request) error {
	var in wire.CLILoginPoll
	if err := httpkit.DecodeJSON(w, r, &in); err != nil {
		return err
	}
	t, err := s.svc.Accounts.PollCLILogin(r.Context(), in.DeviceCode)
	if err != nil {
		return err
	}
	httpkit.WriteJSON(w, http.StatusOK, wire.CLILoginToken{Token: t.Secret, ID: t.ID, Name: t.Name, User: userOf(t.User)})
	return nil
}
