package cli

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestUsersLifecycleCommands: disable, enable, export (written whole or not at all),
// delete (only with --yes off a terminal) and the audit log.
func TestUsersLifecycleCommands(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "vera", "user")
	if code, out, errOut := run(t, env, env.AdminToken, "", "users", "disable", "vera"); code != 0 || out != "vera is disabled\n" {
		t.Fatalf("disable: %d %q %q", code, out, errOut)
	}
	if code, _, _ := run(t, env, u.Token, "", "files", "list"); code == 0 {
		t.Fatal("a disabled user's token still works")
	}
	if code, out, errOut := run(t, env, env.AdminToken, "", "users", "enable", "vera"); code != 0 || out != "vera is enabled\n" {
		t.Fatalf("enable: %d %q %q", code, out, errOut)
	}

	dir := t.TempDir()
	target := filepath.Join(dir, "vera.zip")
	if code, out, errOut := run(t, env, u.Token, "", "users", "export", "vera", "-o", target); code != 0 || !strings.Contains(out, "wrote "+target) {
		t.Fatalf("export: %d %q %q", code, out, errOut)
	}
	zr, err := zip.OpenReader(target)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	zr.Close()
	if !strings.Contains(strings.Join(names, " "), "user.json") {
		t.Fatalf("the export holds %v", names)
	}
	if code, _, errOut := run(t, env, u.Token, "", "users", "export", "vera", "-o", target); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("export over a file: %d %q", code, errOut)
	}
	// An export refused leaves nothing behind.
	missing := filepath.Join(dir, "nobody.zip")
	if code, _, _ := run(t, env, u.Token, "", "users", "export", "nobody", "-o", missing); code == 0 {
		t.Fatal("exporting another user worked")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left in the folder: %v", entries)
	}

	if code, _, errOut := run(t, env, env.AdminToken, "", "users", "delete", "vera"); code == 0 || !strings.Contains(errOut, "--yes") {
		t.Fatalf("delete without --yes off a terminal: %d %q", code, errOut)
	}
	if code, out, errOut := run(t, env, env.AdminToken, "", "users", "delete", "vera", "--yes"); code != 0 || out != "deleted vera\n" {
		t.Fatalf("delete: %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(t, env, env.AdminToken, "", "users", "list"); code != 0 || strings.Contains(out, "vera") {
		t.Fatalf("a deleted user is listed: %q", out)
	}
	code, out, errOut := run(t, env, env.AdminToken, "", "audit", "--limit", "3")
	if code != 0 || !strings.Contains(out, "user_deleted") || !strings.Contains(out, "user_exported") || strings.Count(out, "\n") != 4 {
		t.Fatalf("audit: %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(t, env, env.AdminToken, "", "cleanup"); code != 0 || !strings.Contains(out, "old audit events") || !strings.Contains(out, "stale invitations") {
		t.Fatalf("cleanup: %d %q", code, out)
	}
}
