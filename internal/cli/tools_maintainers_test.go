package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestToolsMaintainers: `skrip tools maintainers list|add|remove` with the real binary:
// the author adds a co-author, who may then push a version; the refusals (a user-role
// user, removing the author, a non-maintainer listing) reach stderr with the server's
// words.
func TestToolsMaintainers(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	annac, anna := env.User(t, "anna", "author")
	_, bob := env.User(t, "bob", "author")
	_, ulf := env.User(t, "ulf", "user")
	if _, _, err := annac.CreateTool(ctx, "delad", "Delad", "", "def run_tool(i, o):\n    return 'hej'\n", false); err != nil {
		t.Fatal(err)
	}
	a, b := binary{bin, env.URL, anna.Token}, binary{bin, env.URL, bob.Token}
	b.fails(t, `no tool "delad"`, "tools", "maintainers", "list", "delad")
	a.fails(t, `there is no active user "ulf" with the author role or above`, "tools", "maintainers", "add", "delad", ulf.Name)
	if out := a.ok(t, "tools", "maintainers", "add", "delad", "bob"); !strings.Contains(out, "bob maintains delad") {
		t.Fatalf("add: %q", out)
	}
	out := b.ok(t, "tools", "maintainers", "list", "delad")
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "anna") || !strings.Contains(out, "bob") {
		t.Fatalf("list: %q", out)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"v2.py": "def run_tool(i, o):\n    return 'bob'\n"})
	b.ok(t, "tools", "push", "delad", dir+"/v2.py")
	b.fails(t, "anna is the author of delad, and the author is always a maintainer", "tools", "maintainers", "remove", "delad", "anna")
	if out := a.ok(t, "tools", "maintainers", "remove", "delad", "bob"); !strings.Contains(out, "bob no longer maintains delad") {
		t.Fatalf("remove: %q", out)
	}
	b.fails(t, `no tool "delad"`, "tools", "maintainers", "list", "delad")
}
