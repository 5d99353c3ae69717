package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
)

// reason is the details.reason of an error answer.
func (a answer) reason() string {
	e, _ := a.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	r, _ := d["reason"].(string)
	return r
}

// TestCLILoginFlow: a login waits (400 authorization_pending) until a user approves it,
// gives its token once (a second poll gets 410 login_expired), and a denial is told once.
func TestCLILoginFlow(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		ctx := context.Background()
		_, ulla := env.User(t, "ulla", "user")
		ullaUser, err := env.App.Store.User(ctx, ulla.ID)
		if err != nil {
			t.Fatal(err)
		}
		start := func() (device, code string) {
			t.Helper()
			a := call(t, env, "POST", "/api/v1/cli/logins", "", strings.NewReader(`{"machine":"ullas-laptop\u0007 "}`))
			device, _ = a.body["device_code"].(string)
			code, _ = a.body["user_code"].(string)
			link, _ := a.body["verification_url"].(string)
			if a.status != 201 || device == "" || len(code) != 9 || code[4] != '-' || link != env.URL+"/cli/login?code="+code ||
				a.body["expires_in"] != float64(600) || a.body["interval"] != float64(2) {
				t.Fatalf("starting a login: %d %s", a.status, a.raw)
			}
			return device, code
		}
		poll := func(device string) answer {
			return call(t, env, "POST", "/api/v1/cli/logins/token", "", jsonBody(t, map[string]string{"device_code": device}))
		}

		device, code := start()
		if a := poll(device); a.status != 400 || a.errCode() != "invalid_request" || a.reason() != "authorization_pending" {
			t.Fatalf("polling a pending login: %d %s", a.status, a.raw)
		}
		// The code is accepted as typed, in lower case, without its dash.
		typed := strings.ToLower(strings.ReplaceAll(code, "-", ""))
		if err := env.App.Accounts.DecideCLILogin(ctx, account.Actor{User: ullaUser, Address: "127.0.0.1"}, typed, true); err != nil {
			t.Fatal(err)
		}
		a := poll(device)
		tok, _ := a.body["token"].(string)
		user, _ := a.body["user"].(map[string]any)
		if a.status != 200 || !strings.HasPrefix(tok, "skr_") || a.body["name"] != "skrip CLI on ullas-laptop" || a.body["id"] == "" || user["name"] != "ulla" {
			t.Fatalf("polling an approved login: %d %s", a.status, a.raw)
		}
		if me, err := env.Client(t, tok).Me(ctx); err != nil || me.Name != "ulla" {
			t.Fatalf("the login's token: %+v %v", me, err)
		}
		if a := poll(device); a.status != 410 || a.errCode() != "gone" || a.reason() != "login_expired" {
			t.Fatalf("a second poll after the token: %d %s", a.status, a.raw)
		}

		// A denial: 403 once, then the login is gone.
		device, code = start()
		if err := env.App.Accounts.DecideCLILogin(ctx, account.Actor{User: ullaUser}, code, false); err != nil {
			t.Fatal(err)
		}
		if a := poll(device); a.status != 403 || a.reason() != "login_denied" {
			t.Fatalf("polling a denied login: %d %s", a.status, a.raw)
		}
		if a := poll(device); a.status != 410 || a.reason() != "login_expired" {
			t.Fatalf("polling a denied login again: %d %s", a.status, a.raw)
		}
		// A decided code can't be decided again.
		if err := env.App.Accounts.DecideCLILogin(ctx, account.Actor{User: ullaUser}, code, true); err == nil {
			t.Fatal("a denied login was approved after")
		}

		// An expired login: 410, it can't be approved, and the janitor removes it.
		expired := "skrd_expired-device-code"
		now := time.Now()
		if err := env.App.Store.CreateCLILogin(ctx, store.CLILogin{ID: "cl_old", DeviceHash: auth.HashToken(expired), UserCode: "BCDFGHJK",
			TokenName: "skrip CLI on old", Address: "10.9.9.9", CreatedAt: now.Add(-11 * time.Minute), ExpiresAt: now.Add(-time.Minute)},
			store.CLILoginCaps{Total: 10, PerAddress: 10}); err != nil {
			t.Fatal(err)
		}
		if a := poll(expired); a.status != 410 || a.reason() != "login_expired" {
			t.Fatalf("polling an expired login: %d %s", a.status, a.raw)
		}
		if err := env.App.Accounts.DecideCLILogin(ctx, account.Actor{User: ullaUser}, "BCDF-GHJK", true); err == nil {
			t.Fatal("an expired login was approved")
		}
		if a := poll("skrd_never-issued"); a.status != 410 || a.reason() != "login_expired" {
			t.Fatalf("polling an unknown code: %d %s", a.status, a.raw)
		}
		if _, err := env.App.Janitor.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := env.App.Store.CLILoginByCode(ctx, "BCDFGHJK"); err == nil {
			t.Fatal("the janitor left an expired login")
		}

		// Bodies: none is fine for a start; one past 4 KiB, or not JSON, is refused.
		if a := call(t, env, "POST", "/api/v1/cli/logins", "", nil); a.status != 201 {
			t.Fatalf("a start without a body: %d %s", a.status, a.raw)
		}
		big := `{"machine":"` + strings.Repeat("x", 5000) + `"}`
		if a := call(t, env, "POST", "/api/v1/cli/logins", "", strings.NewReader(big)); a.status != 413 {
			t.Fatalf("a start of 5 KB: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "POST", "/api/v1/cli/logins/token", "", strings.NewReader(`{"device_code":`)); a.status != 400 || a.reason() == "authorization_pending" {
			t.Fatalf("a poll that is not JSON: %d %s", a.status, a.raw)
		}
	})
}

// TestCLILoginCaps: one address (an IPv6 address by its /64) holds at most
// SKRIP_CLI_LOGINS_PER_ADDRESS pending logins (429), the server at most
// SKRIP_CLI_LOGINS_PENDING (503), both with Retry-After.
func TestCLILoginCaps(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.CLILoginsPending, cfg.CLILoginsPerAddress = 4, 2
	env := apptest.Start(t, cfg)
	for i := range 2 {
		if a := call(t, env, "POST", "/api/v1/cli/logins", "", nil); a.status != 201 {
			t.Fatalf("login %d: %d %s", i, a.status, a.raw)
		}
	}
	a := call(t, env, "POST", "/api/v1/cli/logins", "", nil)
	if a.status != 429 || a.errCode() != "rate_limited" || a.reason() != "cli_logins_per_address" || a.header.Get("Retry-After") != "60" {
		t.Fatalf("a third login from one address: %d %v %s", a.status, a.header, a.raw)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		addr, reason string
		status       int
	}{
		{"2001:db8::1", "", 0},
		{"2001:db8::2", "", 0},
		{"2001:db8::3", "cli_logins_per_address", 429}, // the same /64
		{"2001:db8:1::1", "cli_logins_full", 503},
	} {
		_, err := env.App.Accounts.StartCLILogin(ctx, tc.addr, "box")
		if tc.status == 0 {
			if err != nil {
				t.Fatalf("a login from %s: %v", tc.addr, err)
			}
			continue
		}
		status, _, _, details := httpkit.Describe(err)
		if status != tc.status || details["reason"] != tc.reason || httpkit.RetryAfter(err) != 60 {
			t.Fatalf("a login from %s: %d %v (%v); want %d %s with Retry-After 60", tc.addr, status, details, err, tc.status, tc.reason)
		}
	}
}
