package testutil

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// OIDCUser is one person of the test OpenID provider's users file (the fields of the
// zitadel example server's storage.User).
type OIDCUser struct {
	ID                string
	Username          string
	Password          string
	FirstName         string
	LastName          string
	Email             string
	EmailVerified     bool
	PreferredLanguage string
}

// OIDCProvider is a running OpenID provider of the test's own: the example server of
// github.com/zitadel/oidc/v3, built by scripts/oidc-provider.sh (SKRIP_TEST_OIDC_PROVIDER).
// Its clients are "web" (secret "secret"), "api" and "native", all allowed RedirectURI.
type OIDCProvider struct {
	// Issuer is the provider's issuer, http://localhost:<port>/, as its discovery says.
	Issuer      string
	RedirectURI string
	port        int
	bin         string
	dir         string
	cmd         *exec.Cmd
	Log         *LockedBuffer
}

// StartOIDCProvider starts the test provider with users, allowing redirectURI, and stops
// it when the test ends. Without SKRIP_TEST_OIDC_PROVIDER the test is skipped (or fails,
// when SKRIP_TEST_REQUIRE lists oidc).
func StartOIDCProvider(t testing.TB, redirectURI string, users []OIDCUser) *OIDCProvider {
	t.Helper()
	bin := os.Getenv("SKRIP_TEST_OIDC_PROVIDER")
	const install = "bash scripts/oidc-provider.sh, then set SKRIP_TEST_OIDC_PROVIDER to the path it prints"
	if bin == "" {
		Missing(t, "oidc", "SKRIP_TEST_OIDC_PROVIDER is empty", install)
	}
	if _, err := os.Stat(bin); err != nil {
		Missing(t, "oidc", err.Error(), install)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	p := &OIDCProvider{Issuer: fmt.Sprintf("http://localhost:%d/", port), RedirectURI: redirectURI, port: port, bin: bin,
		dir: t.TempDir(), Log: &LockedBuffer{}}
	t.Cleanup(p.Stop)
	p.Restart(t, users)
	return p
}

// Restart stops the provider and starts it again on the same port and issuer with
// users: the same subject may come back with another e-mail or name.
func (p *OIDCProvider) Restart(t testing.TB, users []OIDCUser) {
	t.Helper()
	p.Stop()
	m := map[string]OIDCUser{}
	for _, u := range users {
		if u.PreferredLanguage == "" {
			u.PreferredLanguage = "sv"
		}
		m[u.ID] = u
	}
	b, _ := json.Marshal(m)
	file := filepath.Join(p.dir, "users.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.bin)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(p.port), "USERS_FILE="+file, "REDIRECT_URI="+p.RedirectURI)
	cmd.Stdout, cmd.Stderr = p.Log, p.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the OpenID provider %s: %v", p.bin, err)
	}
	p.cmd = cmd
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.Issuer+".well-known/openid-configuration", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the OpenID provider did not answer on port %d within 20s; its log:\n%s", p.port, p.Log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop stops the provider; Restart starts it again.
func (p *OIDCProvider) Stop() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.cmd = nil
}
