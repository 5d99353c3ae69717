package api_test

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/config"
	"github.com/skrip-dev/skrip/internal/hints"
	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// lintConfig is a server on the runner rootfs the test environment names
// (SKRIP_TEST_RUNNER_ROOTFS), which must be of a recipe with the linter: pyflakes and the
// list of modules.
func lintConfig(t *testing.T, b apptest.Backend) config.Config {
	t.Helper()
	dir := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if dir == "" {
		testutil.Missing(t, "bwrap", "SKRIP_TEST_RUNNER_ROOTFS is empty", "bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
	}
	if _, err := os.Stat(filepath.Join(dir, hints.ModulesFile)); err != nil {
		testutil.Missing(t, "bwrap", dir+" predates the editor's linter (no "+hints.ModulesFile+")", "rebuild it: bash scripts/runner-image.sh "+dir)
	}
	cfg := apptest.Config(t, b)
	cfg.BwrapRootfs = dir
	return cfg
}

type lintAnswer struct {
	Diagnostics []struct {
		Line     int
		Column   int
		Message  string
		Severity string
	}
}

// POST /api/v1/editor/lint runs pyflakes in the sandbox: an undefined name is an error
// and an unused import a warning, each on its line; clean code has none; a syntax error
// is one error on its line. Users are refused (403), a source over the limit too (413),
// and a body without source (400). The same on a cluster's API node, whose lints run on
// its own runner as syntax checks do.
func TestEditorLint(t *testing.T) {
	apptest.EachOf(t, append(slices.Clone(apptest.Backends), apptest.ClusterBackend), func(t *testing.T, b apptest.Backend) {
		env := apptest.Start(t, lintConfig(t, b))
		_, anna := env.User(t, "anna", "author")
		_, ulf := env.User(t, "ulf", "user")
		lint := func(token, src string) (answer, lintAnswer) {
			t.Helper()
			body, _ := json.Marshal(map[string]string{"source": src})
			a := send(t, env, "POST", "/api/v1/editor/lint", token, "application/json", strings.NewReader(string(body)))
			var out lintAnswer
			if a.status == 200 {
				if err := json.Unmarshal([]byte(a.raw), &out); err != nil || !strings.Contains(a.raw, `"diagnostics":[`) {
					t.Fatalf("lint answer %s: %v", a.raw, err)
				}
			}
			return a, out
		}

		src := "import os\nimport json\n\n\ndef run_tool(input_dir, output_dir):\n    return json.dumps(nimn)\n"
		a, out := lint(anna.Token, src)
		if a.status != 200 || len(out.Diagnostics) != 2 {
			t.Fatalf("lint: %d %s; want two diagnostics", a.status, a.raw)
		}
		d := out.Diagnostics
		if d[0].Line != 1 || d[0].Column != 1 || d[0].Severity != "warning" || !strings.Contains(d[0].Message, "'os' imported but unused") {
			t.Errorf("the unused import: %+v", d[0])
		}
		if d[1].Line != 6 || d[1].Column != 23 || d[1].Severity != "error" || !strings.Contains(d[1].Message, "undefined name 'nimn'") {
			t.Errorf("the undefined name: %+v", d[1])
		}

		// Clean code, the toolkit imported as tools do: nothing.
		clean := "from skriptoteket_toolkit import read_inputs\n\n\ndef run_tool(input_dir, output_dir):\n    return str(read_inputs())\n"
		if a, out := lint(env.AdminToken, clean); a.status != 200 || len(out.Diagnostics) != 0 {
			t.Fatalf("clean code (admin): %d %s; want no diagnostics", a.status, a.raw)
		}
		if a, out := lint(anna.Token, ""); a.status != 200 || len(out.Diagnostics) != 0 {
			t.Fatalf("an empty source: %d %s; want no diagnostics", a.status, a.raw)
		}

		// A syntax error: one error, on its line; the code is never run.
		a, out = lint(anna.Token, "import sys\nsys.exit(3)\ndef run_tool(i, o)\n    return 1\n")
		if a.status != 200 || len(out.Diagnostics) != 1 || out.Diagnostics[0].Line != 3 || out.Diagnostics[0].Severity != "error" {
			t.Fatalf("a syntax error: %d %s; want one error on line 3", a.status, a.raw)
		}

		// Refusals.
		if a, _ := lint(ulf.Token, src); a.status != 403 || a.errCode() != "forbidden" {
			t.Fatalf("lint by a user: %d %s; want 403", a.status, a.raw)
		}
		if a, _ := lint(anna.Token, strings.Repeat("x = 1\n", 100_000)); a.status != 413 || a.reason() != "lint_too_large" {
			t.Fatalf("lint of 600 kB: %d %.300s; want 413 lint_too_large", a.status, a.raw)
		}
		if a := send(t, env, "POST", "/api/v1/editor/lint", anna.Token, "application/json", strings.NewReader(`{}`)); a.status != 400 || a.errCode() != "invalid_request" {
			t.Fatalf("lint without source: %d %s; want 400", a.status, a.raw)
		}
		if a := send(t, env, "POST", "/api/v1/editor/lint", "", "application/json", strings.NewReader(`{"source":"x"}`)); a.status != 401 {
			t.Fatalf("lint without a credential: %d %s; want 401", a.status, a.raw)
		}
	})
}

// Where the runtime has no pyflakes (here the host's /usr, SKRIP_BWRAP_ROOTFS=host), the
// route says so plainly: 503 lint_unavailable, naming the fix.
func TestEditorLintUnavailable(t *testing.T) {
	if _, err := os.Stat("/usr/lib/python3/dist-packages/pyflakes"); err == nil {
		t.Skip("the host's Python has pyflakes")
	}
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.BwrapRootfs = "host"
	env := apptest.Start(t, cfg)
	a := send(t, env, "POST", "/api/v1/editor/lint", env.AdminToken, "application/json", strings.NewReader(`{"source":"import os\n"}`))
	if a.status != 503 || a.reason() != "lint_unavailable" || !strings.Contains(a.errMessage(), "runner-image") {
		t.Fatalf("lint without pyflakes: %d %s; want 503 lint_unavailable", a.status, a.raw)
	}
	// The completions fall back to the helper modules.
	h := send(t, env, "GET", "/api/v1/editor/hints", env.AdminToken, "", nil)
	var out struct {
		Modules            []string
		ModulesFromRuntime bool `json:"modules_from_runtime"`
	}
	if h.status != 200 || json.Unmarshal([]byte(h.raw), &out) != nil || out.ModulesFromRuntime || !slices.Equal(out.Modules, []string{"pdf_helper", "skrip_toolkit", "skriptoteket_toolkit", "tool_errors"}) {
		t.Fatalf("hints on the host: %d %s", h.status, h.raw)
	}
}

// GET /api/v1/editor/hints: the runtime's modules from the rootfs's list with the
// helper modules, and every helper function with its help; refused to users.
func TestEditorHints(t *testing.T) {
	env := apptest.Start(t, lintConfig(t, apptest.Backends[0]))
	_, anna := env.User(t, "anna", "author")
	_, ulf := env.User(t, "ulf", "user")
	a := send(t, env, "GET", "/api/v1/editor/hints", anna.Token, "", nil)
	var out struct {
		Modules            []string
		ModulesFromRuntime bool `json:"modules_from_runtime"`
		Functions          []struct{ Module, Name, Signature, Help string }
	}
	if a.status != 200 || json.Unmarshal([]byte(a.raw), &out) != nil {
		t.Fatalf("hints: %d %.500s", a.status, a.raw)
	}
	for _, m := range []string{"json", "pandas", "docx", "openpyxl", "skriptoteket_toolkit", "skrip_toolkit"} {
		if !slices.Contains(out.Modules, m) {
			t.Errorf("modules lack %s: %v", m, out.Modules)
		}
	}
	if !out.ModulesFromRuntime {
		t.Error("modules_from_runtime is false on a rootfs with the list")
	}
	found := false
	for _, f := range out.Functions {
		if f.Module == "skriptoteket_toolkit" && f.Name == "read_inputs" && f.Signature == "read_inputs()" && strings.Contains(f.Help, "form values") {
			found = true
		}
	}
	if !found {
		t.Errorf("no help for skriptoteket_toolkit.read_inputs: %+v", out.Functions)
	}
	if a := send(t, env, "GET", "/api/v1/editor/hints", ulf.Token, "", nil); a.status != 403 {
		t.Fatalf("hints for a user: %d %s; want 403", a.status, a.raw)
	}
}

// The Docker runner lints too: its image is made from the same rootfs
// (SKRIP_TEST_RUNNER_IMAGE, or this build's default image).
func TestEditorLintDocker(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.Runner = "docker"
	cfg.RunnerImage = cmp.Or(os.Getenv("SKRIP_TEST_RUNNER_IMAGE"), docker.DefaultImage())
	env := apptest.Start(t, cfg)
	a := send(t, env, "POST", "/api/v1/editor/lint", env.AdminToken, "application/json",
		strings.NewReader(`{"source":"import os\n\nprint(nimn)\n"}`))
	if a.status == 503 && a.reason() == "lint_unavailable" {
		t.Fatalf("the image %s has no pyflakes: rebuild it (bash scripts/runner-image.sh DIR %s) or name one in SKRIP_TEST_RUNNER_IMAGE", cfg.RunnerImage, cfg.RunnerImage)
	}
	var out lintAnswer
	if a.status != 200 || json.Unmarshal([]byte(a.raw), &out) != nil || len(out.Diagnostics) != 2 ||
		out.Diagnostics[0].Line != 1 || out.Diagnostics[0].Severity != "warning" || out.Diagnostics[1].Line != 3 || out.Diagnostics[1].Severity != "error" {
		t.Fatalf("lint on docker: %d %s; want a warning on line 1 and an error on line 3", a.status, a.raw)
	}
}
