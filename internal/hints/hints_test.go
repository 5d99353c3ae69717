package hints

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// toolkit.json is what `go generate` makes of docs/authoring.md today: a guide edited
// without regenerating fails here.
func TestToolkitFollowsGuide(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "authoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := Encode(ParseGuide(md)); !bytes.Equal(toolkitJSON, want) {
		t.Fatalf("internal/hints/toolkit.json is not what docs/authoring.md gives; run go generate ./internal/hints\nhave:\n%s\nwant:\n%s", toolkitJSON, want)
	}
}

// Every public function (and class) of each helper module the runner ships has hover
// help from the guide, with a non-empty text.
func TestEveryToolkitFunctionHasHelp(t *testing.T) {
	help := map[string]string{}
	for _, f := range Toolkit() {
		if strings.TrimSpace(f.Help) == "" || f.Signature == "" {
			t.Errorf("%s.%s has no help text or signature", f.Module, f.Name)
		}
		help[f.Module+"."+f.Name] = f.Help
	}
	def := regexp.MustCompile(`(?m)^(?:def|class) ([A-Za-z][A-Za-z0-9_]*)\(`)
	all := regexp.MustCompile(`(?s)__all__ = \[([^\]]*)\]`)
	for _, m := range Modules {
		src, err := os.ReadFile(filepath.Join("..", "runner", "shim", m+".py"))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		if a := all.FindSubmatch(src); a != nil {
			for _, n := range strings.Split(string(a[1]), ",") {
				if n = strings.Trim(strings.TrimSpace(n), `"'`); n != "" {
					names = append(names, n)
				}
			}
		} else {
			for _, d := range def.FindAllSubmatch(src, -1) {
				names = append(names, string(d[1]))
			}
		}
		// Types for annotations and constants, not what a tool calls.
		names = slices.DeleteFunc(names, func(n string) bool {
			return n == "ManifestFile" || n == "ActionPayload" || n == "JsonValue" || n == strings.ToUpper(n)
		})
		if len(names) == 0 {
			t.Fatalf("%s.py: found no public functions", m)
		}
		for _, n := range names {
			if help[m+"."+n] == "" {
				t.Errorf("%s.%s has no help in docs/authoring.md section 3", m, n)
			}
		}
	}
	if h := help["skriptoteket_toolkit.read_inputs"]; !strings.Contains(h, "form values") {
		t.Errorf("read_inputs' help: %q", h)
	}
}

// The runtime's list is read from the tree; without one (an older tree, the host) the
// helper modules are all there is.
func TestRuntimeModules(t *testing.T) {
	root := t.TempDir()
	got, ok := RuntimeModules(root)
	if ok || !slices.Equal(got, []string{"pdf_helper", "skrip_toolkit", "skriptoteket_toolkit", "tool_errors"}) {
		t.Fatalf("no list: %v %v", got, ok)
	}
	if got, ok := RuntimeModules(""); ok || len(got) != 4 {
		t.Fatalf("host: %v %v", got, ok)
	}
	os.MkdirAll(filepath.Join(root, "usr/share/skrip"), 0o755)
	os.WriteFile(filepath.Join(root, ModulesFile), []byte(`["json", "pandas", "bad name", "os", "json"]`), 0o644)
	got, ok = RuntimeModules(root)
	if !ok || !slices.Equal(got, []string{"json", "os", "pandas", "pdf_helper", "skrip_toolkit", "skriptoteket_toolkit", "tool_errors"}) {
		t.Fatalf("list: %v %v", got, ok)
	}
	// A real tree, when the test environment names one built by this recipe.
	if dir := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, ModulesFile)); err == nil {
			got, ok := RuntimeModules(dir)
			for _, want := range []string{"json", "pandas", "docx", "weasyprint", "pyflakes", "skriptoteket_toolkit"} {
				if !ok || !slices.Contains(got, want) {
					t.Errorf("%s lists %d modules, without %s", dir, len(got), want)
				}
			}
		}
	}
}
