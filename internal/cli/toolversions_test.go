package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestToolsVersionsDiffRestore: skrip tools push --note saves a note; tools versions
// lists the versions with it; tools diff prints the unified diff; tools restore makes
// the next version from an old one; a version of another tool is refused in the API's
// words.
func TestToolsVersionsDiffRestore(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	ac, anna := env.User(t, "anna", "author")
	_, v1, err := ac.CreateTool(ctx, "hej", "Hej", "", "def run_tool(i, o):\n    return 'hej'\n", false)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "hej.py")
	if err := os.WriteFile(file, []byte("def run_tool(i, o):\n    return 'hej då'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, env, anna.Token, "", "tools", "push", "hej", file, "--note", "Säger hej då"); code != 0 {
		t.Fatalf("push --note: %d %q %q", code, out, errOut)
	}
	code, out, errOut := run(t, env, anna.Token, "", "tools", "versions", "hej")
	if code != 0 || !strings.Contains(out, "Säger hej då") || !strings.Contains(out, v1.ID) || !strings.Contains(out, "COMPILES") {
		t.Fatalf("versions: %d %q %q", code, out, errOut)
	}
	list, err := ac.ToolVersions(ctx, "hej")
	if err != nil || len(list.Versions) != 2 || list.Versions[0].Note != "Säger hej då" {
		t.Fatalf("the pushed version: %+v %v", list, err)
	}
	v2 := list.Versions[0].ID
	code, out, errOut = run(t, env, anna.Token, "", "tools", "diff", v2, v1.ID)
	want := "--- a/source (version 1)\n+++ b/source (version 2)\n@@ -1,2 +1,2 @@\n def run_tool(i, o):\n-    return 'hej'\n+    return 'hej då'\n"
	if code != 0 || out != want {
		t.Fatalf("diff: %d\n%s\n%s\nwant:\n%s", code, out, errOut, want)
	}
	code, out, errOut = run(t, env, anna.Token, "", "tools", "restore", v1.ID)
	if code != 0 || !strings.Contains(out, "version 3") || !strings.Contains(out, "Återställd från version 1") {
		t.Fatalf("restore: %d %q %q", code, out, errOut)
	}
	// tools import --note, for a new version of a tool one has.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool.json"), []byte(`{"slug":"hej","title":"Hej"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "script.py"), []byte("def run_tool(i, o):\n    return 'hejsan'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, env, anna.Token, "", "tools", "import", dir, "--note", "Från katalogen"); code != 0 {
		t.Fatalf("import --note: %d %q %q", code, out, errOut)
	}
	if list, err := ac.ToolVersions(ctx, "hej"); err != nil || list.Count != 4 || list.Versions[0].Note != "Från katalogen" {
		t.Fatalf("after import --note: %+v %v", list, err)
	}
	_, other, err := ac.CreateTool(ctx, "annat", "Annat", "", "def run_tool(i, o):\n    return 'x'\n", false)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, env, anna.Token, "", "tools", "diff", v2, other.ID); code == 0 || !strings.Contains(errOut, "compare versions of one tool") {
		t.Fatalf("diff across tools: %d %q", code, errOut)
	}
}
