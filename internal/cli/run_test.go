package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/examples"
	"github.com/skrip-dev/skrip/internal/apptest"
)

func TestToolsAndRunCLI(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, author := env.User(t, "ann", "author")
	dir := t.TempDir()
	src := filepath.Join(dir, "tool.py")
	os.WriteFile(src, []byte(`
import os, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    n = tk.inputs().get("n", 1)
    open(os.path.join(output_dir, "out.txt"), "w").write("n=%s" % n)
    return {"outputs": [
        {"kind": "notice", "level": "warning", "message": "careful"},
        {"kind": "markdown", "markdown": "# Title\n\nSome *text*."},
        {"kind": "table", "title": "Scores", "columns": [{"key": "who", "label": "Who"}, {"key": "pts", "label": "Points"}],
         "rows": [{"who": "Ada", "pts": 10}, {"who": "Björn Borg", "pts": 7.5}]},
    ], "next_actions": [{"action_id": "again", "label": "Kör igen", "kind": "form",
        "fields": [{"name": "size", "label": "Size", "kind": "enum", "options": [{"value": "a4", "label": "A4"}]}]}],
       "state": {}}
`), 0o644)
	code, out, errOut := run(t, env, author.Token, "", "tools", "add", src, "--slug", "demo", "--title", "Demo", "--publish")
	if code != 0 || !strings.Contains(out, "created demo") || !strings.Contains(out, "published") {
		t.Fatalf("tools add: %d %q %q", code, out, errOut)
	}
	code, out, _ = run(t, env, author.Token, "", "tools", "list")
	if code != 0 || !strings.Contains(out, "demo") || !strings.Contains(out, "Demo") {
		t.Fatalf("tools list: %d %q", code, out)
	}
	in := filepath.Join(dir, "data.csv")
	os.WriteFile(in, []byte("a,b\n"), 0o644)
	outDir := filepath.Join(dir, "out")
	code, out, errOut = run(t, env, author.Token, "", "run", "demo", in, "--input", "n=3", "--out", outDir)
	if code != 0 {
		t.Fatalf("run: %d %q %q", code, out, errOut)
	}
	for _, want := range []string{"succeeded", "[WARNING] careful", "# Title", "Scores", "Who         Points", "Björn Borg  7.5",
		"Artifacts:", "output/out.txt", "Next actions:", `again  "Kör igen"  size (enum: a4)`, "skrip action r_"} {
		if !strings.Contains(out, want) {
			t.Errorf("run output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outDir, "out.txt")); string(b) != "n=3" {
		t.Fatalf("artifact: %q", b)
	}
	// A failing version: the exit status says so.
	os.WriteFile(src, []byte("from skrip_toolkit import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError('Upload a CSV file.')\n"), 0o644)
	if code, out, _ := run(t, env, author.Token, "", "tools", "push", "demo", src, "--publish"); code != 0 || !strings.Contains(out, "published") {
		t.Fatalf("tools push: %d %q", code, out)
	}
	code, out, errOut = run(t, env, author.Token, "", "run", "demo")
	if code != 1 || !strings.Contains(out, "failed") || !strings.Contains(errOut, "Upload a CSV file.") || strings.Contains(out, "(the tool crashed") {
		t.Fatalf("failing run: %d %q %q", code, out, errOut)
	}
	// A crash says so beside its summary (the run's error_source), a tool's own message not.
	os.WriteFile(src, []byte("def run_tool(i, o):\n    raise ValueError('oops')\n"), 0o644)
	if code, out, _ := run(t, env, author.Token, "", "tools", "push", "demo", src, "--publish"); code != 0 || !strings.Contains(out, "published") {
		t.Fatalf("tools push: %d %q", code, out)
	}
	code, out, errOut = run(t, env, author.Token, "", "run", "demo")
	if code != 1 || !strings.Contains(out, "failed in") || !strings.Contains(out, "(the tool crashed: its stderr is in --json): Tool execution failed (ValueError).") {
		t.Fatalf("crashing run: %d %q %q", code, out, errOut)
	}
	code, _, errOut = run(t, env, author.Token, "", "run", "nope")
	if code == 0 || !strings.Contains(errOut, `no tool "nope"`) {
		t.Fatalf("unknown tool: %d %q", code, errOut)
	}
	code, _, errOut = run(t, env, author.Token, "", "run", "demo", "--input", "novalue")
	if code == 0 || !strings.Contains(errOut, "key=value") {
		t.Fatalf("bad --input: %d %q", code, errOut)
	}
}

// TestExampleTools runs every example tool on its demo files, as `serve --demo` offers them.
func TestExampleTools(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	loaded, err := env.App.LoadDemo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := env.App.LoadDemo(t.Context()); len(again) != 0 {
		t.Fatalf("LoadDemo is not idempotent: loaded %v again", again)
	}
	tools, _ := examples.Tools()
	if len(loaded) != len(tools) || len(tools) < 3 {
		t.Fatalf("loaded %v of %d examples", loaded, len(tools))
	}
	_, u := env.User(t, "student", "user")
	want := map[string][]string{
		"csv-summary":     {"betyg.csv: 5 rader, 4 kolumner", "poäng", "tal", "64", "78.5"},
		"html-bundle":     {"Alla 2 hänvisningar i 1 sida hittades", "style.css", "uppladdad", "HTML preview"},
		"markdown-report": {"# Filrapport", "anteckningar.txt", "report.md"},
	}
	for _, ex := range tools {
		t.Run(ex.Slug, func(t *testing.T) {
			dir := t.TempDir()
			var args []string
			for name, body := range ex.Demo {
				p := filepath.Join(dir, name)
				os.WriteFile(p, body, 0o644)
				args = append(args, p)
			}
			code, out, errOut := run(t, env, u.Token, "", append([]string{"run", ex.Slug}, args...)...)
			if code != 0 {
				t.Fatalf("%d %q %q", code, out, errOut)
			}
			for _, w := range want[ex.Slug] {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
