package cli

import (
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestTokensCommands: `skrip tokens create NAME --scope --expires` prints the secret
// once, `tokens list` shows the token without it (and --all, for an admin, everyone's),
// and `tokens revoke ID` makes it refused at once.
func TestTokensCommands(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, nora := env.User(t, "nora", "user")
	code, out, errOut := run(t, env, nora.Token, "", "tokens", "create", "ci", "--scope", "files,read", "--expires", "30d")
	secret := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(secret, "skr_") || !strings.Contains(errOut, "scope files,read") {
		t.Fatalf("tokens create: %d %q %q", code, out, errOut)
	}
	code, out, _ = run(t, env, nora.Token, "", "tokens", "list")
	if code != 0 || !strings.Contains(out, "ci") || !strings.Contains(out, "files,read") || strings.Contains(out, secret) {
		t.Fatalf("tokens list: %d %q", code, out)
	}
	var id string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "ci" {
			id = f[0]
		}
	}
	if !strings.HasPrefix(id, "t_") {
		t.Fatalf("no id of ci in %q", out)
	}
	// The scoped token cannot list tokens.
	if code, _, errOut := run(t, env, secret, "", "tokens", "list"); code == 0 || !strings.Contains(errOut, "scope") {
		t.Errorf("tokens list with a files,read token: %d %q", code, errOut)
	}
	if code, _, errOut := run(t, env, nora.Token, "", "tokens", "list", "--all"); code == 0 || !strings.Contains(errOut, "admin") {
		t.Errorf("tokens list --all as a user: %d %q", code, errOut)
	}
	code, out, _ = run(t, env, env.AdminToken, "", "tokens", "list", "--all")
	if code != 0 || !strings.Contains(out, "nora") || !strings.Contains(out, "admin") {
		t.Errorf("tokens list --all as the admin: %d %q", code, out)
	}
	code, out, _ = run(t, env, env.AdminToken, "", "tokens", "create", "for-nora", "--user", "nora")
	if code != 0 || !strings.HasPrefix(out, "skr_") {
		t.Errorf("tokens create --user nora as the admin: %d %q", code, out)
	}
	if code, _, errOut := run(t, env, nora.Token, "", "tokens", "create", "x", "--scope", "everything"); code == 0 || !strings.Contains(errOut, `"everything"`) {
		t.Errorf("an unknown scope: %d %q", code, errOut)
	}
	if code, out, errOut := run(t, env, nora.Token, "", "tokens", "revoke", id); code != 0 || !strings.Contains(out, "revoked "+id) {
		t.Fatalf("tokens revoke: %d %q %q", code, out, errOut)
	}
	if code, _, _ := run(t, env, secret, "", "files", "list"); code == 0 {
		t.Error("the revoked token still lists files")
	}
}
