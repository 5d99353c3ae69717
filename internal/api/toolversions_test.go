package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestToolVersionsListDiffRestore drives a tool's versions (docs/api.md "Tool versions"):
// notes given on saving, the list with numbers, notes, authors, the syntax check and the
// latest sandbox run; the diff of two versions; restoring an old one as the next number;
// and the refusals: a version of another tool, a missing ?against=, another author and a
// user (404), versions too different to compare (413), a note over its cap (400).
func TestToolVersionsListDiffRestore(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		ctx := context.Background()
		ac, anna := env.User(t, "anna", "author")
		_, bob := env.User(t, "bob", "author")
		_, ulf := env.User(t, "ulf", "user")
		src1 := "def run_tool(i, o):\n    return 'ett'\n"
		_, v1, err := ac.CreateTool(ctx, "noter", "Noter", "", src1, false)
		if err != nil {
			t.Fatal(err)
		}
		if v1.Number != 1 || v1.Note != "" {
			t.Fatalf("first version: number %d note %q", v1.Number, v1.Note)
		}
		src2 := "def run_tool(i, o):\n    return 'två'\n"
		v2, err := ac.AddVersion(ctx, "noter", client.NewVersion{Source: src2, Note: "  Svarar två  ",
			InputSchema: []byte(`[{"name":"n","label":"N","kind":"integer"}]`)})
		if err != nil || v2.Number != 2 || v2.Note != "Svarar två" {
			t.Fatalf("second version: %+v %v", v2, err)
		}
		v3, err := ac.AddVersion(ctx, "noter", client.NewVersion{Source: "def run_tool(i, o):\n    return (\n", Note: "Halvfärdig"})
		if err != nil || v3.Number != 3 {
			t.Fatalf("third version: %+v %v", v3, err)
		}
		if rn, err := ac.EditorRun(ctx, v1.ID, nil, nil, time.Minute); err != nil || rn.Status != "succeeded" {
			t.Fatalf("run-sandbox: %+v %v", rn, err)
		}

		list, err := ac.ToolVersions(ctx, "noter")
		if err != nil {
			t.Fatal(err)
		}
		if list.Count != 3 || len(list.Versions) != 3 {
			t.Fatalf("list: %+v", list)
		}
		for i, want := range []struct {
			id, note, sandbox string
			number            int
			compiles          bool
		}{{v3.ID, "Halvfärdig", "", 3, false}, {v2.ID, "Svarar två", "", 2, true}, {v1.ID, "", "succeeded", 1, true}} {
			got := list.Versions[i]
			if got.ID != want.id || got.Number != want.number || got.Note != want.note || got.Compiles != want.compiles ||
				got.LastSandboxStatus != want.sandbox || got.CreatedByName != "anna" || got.CreatedAt.IsZero() {
				t.Errorf("version %d: %+v; want %+v", i, got, want)
			}
		}
		if v := list.Versions[0]; v.SyntaxLine != 2 || v.SyntaxError == "" {
			t.Errorf("version 3's syntax check: line %d %q", v.SyntaxLine, v.SyntaxError)
		}

		d, err := ac.DiffVersions(ctx, v2.ID, v1.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantSource := "--- a/source (version 1)\n+++ b/source (version 2)\n@@ -1,2 +1,2 @@\n def run_tool(i, o):\n-    return 'ett'\n+    return 'två'\n"
		if d.From.ID != v1.ID || d.From.Number != 1 || d.To.Number != 2 || len(d.Parts) != 3 ||
			d.Parts[0].Name != "source" || d.Parts[0].Unified != wantSource || !d.Parts[1].Changed || d.Parts[2].Changed {
			t.Fatalf("diff: %+v", d)
		}
		if !strings.HasPrefix(d.Parts[1].Unified, "--- a/input_schema (version 1)\n+++ b/input_schema (version 2)\n@@ -0,0 +1,") ||
			!strings.Contains(d.Parts[1].Unified, "+    \"name\": \"n\",\n") || d.Unified != d.Parts[0].Unified+d.Parts[1].Unified {
			t.Errorf("input_schema diff:\n%s\nall:\n%s", d.Parts[1].Unified, d.Unified)
		}
		if same, err := ac.DiffVersions(ctx, v1.ID, v1.ID); err != nil || same.Unified != "" {
			t.Errorf("a version against itself: %+v %v", same, err)
		}

		restored, err := ac.RestoreVersion(ctx, v1.ID)
		if err != nil || restored.Number != 4 || restored.Note != "Återställd från version 1" || restored.Source != src1 || restored.ID == v1.ID {
			t.Fatalf("restore: %+v %v", restored, err)
		}
		if list, _ := ac.ToolVersions(ctx, "noter"); list.Count != 4 || list.Versions[0].ID != restored.ID || !list.Versions[0].Compiles {
			t.Errorf("after restore: %+v", list)
		}

		// A tool's first version is checked too.
		if _, _, err := ac.CreateTool(ctx, "trasig", "Trasig", "", "def run_tool(i, o)\n    return 1\n", false); err != nil {
			t.Fatal(err)
		}
		if list, err := ac.ToolVersions(ctx, "trasig"); err != nil || list.Count != 1 || list.Versions[0].Compiles || list.Versions[0].SyntaxLine != 1 {
			t.Errorf("a new tool's broken first version: %+v %v", list, err)
		}

		// Refusals.
		_, other, err := ac.CreateTool(ctx, "annat", "Annat", "", src1, false)
		if err != nil {
			t.Fatal(err)
		}
		wantError := func(what string, a answer, status int, code, reason string) {
			t.Helper()
			if a.status != status || a.errCode() != code || a.reason() != reason || a.errMessage() == "" {
				t.Errorf("%s: %d %s; want %d %s (%s) with a message", what, a.status, a.raw, status, code, reason)
			}
		}
		get := func(token, path string) answer { return send(t, env, "GET", path, token, "", nil) }
		wantError("another tool's version", get(anna.Token, "/api/v1/tool-versions/"+v2.ID+"/diff?against="+other.ID), 400, "invalid_request", "other_tool_version")
		wantError("no against", get(anna.Token, "/api/v1/tool-versions/"+v2.ID+"/diff"), 400, "invalid_request", "")
		wantError("an unknown version", get(anna.Token, "/api/v1/tool-versions/"+v2.ID+"/diff?against=v_nope"), 404, "not_found", "version_not_found")
		for _, who := range []struct{ name, token string }{{"another author", bob.Token}, {"a user", ulf.Token}} {
			wantError(who.name+" lists", get(who.token, "/api/v1/tools/noter/versions"), 404, "not_found", "tool_not_found")
			wantError(who.name+" diffs", get(who.token, "/api/v1/tool-versions/"+v2.ID+"/diff?against="+v1.ID), 404, "not_found", "version_not_found")
			wantError(who.name+" restores", send(t, env, "POST", "/api/v1/tool-versions/"+v1.ID+"/restore", who.token, "", nil), 404, "not_found", "version_not_found")
		}
		// Published, the tool is seen by all, but its versions are still its author's.
		if _, err := ac.Publish(ctx, v1.ID); err != nil {
			t.Fatal(err)
		}
		wantError("a user lists a published tool's versions", get(ulf.Token, "/api/v1/tools/noter/versions"), 403, "forbidden", "not_tool_author")
		if list, _ := ac.ToolVersions(ctx, "noter"); !list.Versions[3].Published || list.Versions[0].Published {
			t.Errorf("published flag: %+v", list.Versions)
		}

		var big1, big2 strings.Builder
		for i := range 1100 {
			fmt.Fprintf(&big1, "a%d = %d\n", i, i)
			fmt.Fprintf(&big2, "b%d = %d\n", i, i)
		}
		b1, err := ac.AddVersion(ctx, "noter", client.NewVersion{Source: big1.String()})
		if err != nil {
			t.Fatal(err)
		}
		b2, err := ac.AddVersion(ctx, "noter", client.NewVersion{Source: big2.String()})
		if err != nil {
			t.Fatal(err)
		}
		wantError("versions too different", get(anna.Token, "/api/v1/tool-versions/"+b2.ID+"/diff?against="+b1.ID), 413, "too_large", "diff_too_large")
		wantError("a note too long", send(t, env, "POST", "/api/v1/tools/noter/versions", anna.Token, "application/json",
			strings.NewReader(`{"source":"x = 1\n","note":"`+strings.Repeat("n", 501)+`"}`)), 400, "invalid_request", "invalid_tool")
	})
}
