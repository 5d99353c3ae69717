package shim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/contract"
)

// python returns the interpreter the sandbox uses: the host's /usr/bin/python3, or
// python3 from PATH.
func python(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("/usr/bin/python3"); err == nil {
		return p
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not available: apt-get install python3")
	}
	return p
}

// run is one shim run outside a sandbox, with /work's layout in temp dirs.
type run struct {
	exit           int
	stdout, stderr string
	raw            []byte
	res            contract.Result
	input, output  string
}

type tool struct {
	script string
	files  map[string]string // input files
	inputs map[string]any
	action *contract.Action
}

// runShim runs the shim on tl the way a runner does, but with the SKRIPTOTEKET_* paths
// pointing at temp dirs, and parses result.json.
func runShim(t *testing.T, tl tool) run {
	t.Helper()
	py := python(t)
	tmp := t.TempDir()
	skrip, work, home := filepath.Join(tmp, "skrip"), filepath.Join(tmp, "work"), filepath.Join(tmp, "home")
	r := run{input: filepath.Join(work, "input"), output: filepath.Join(work, "output")}
	for _, d := range []string{r.input, r.output, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteTo(skrip); err != nil {
		t.Fatal(err)
	}
	script, result := filepath.Join(work, "script.py"), filepath.Join(work, "result.json")
	// A stale, longer result.json shows that the shim truncates what it overwrites.
	if err := os.WriteFile(result, bytes.Repeat([]byte("x"), 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(tl.script), 0o644); err != nil {
		t.Fatal(err)
	}
	var m contract.Manifest
	add := func(name string, body []byte) {
		if err := os.WriteFile(filepath.Join(r.input, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
		m.Files = append(m.Files, contract.ManifestFile{Name: name, Path: filepath.Join(r.input, name), Bytes: int64(len(body))})
	}
	for name, body := range tl.files {
		add(name, []byte(body))
	}
	if tl.action != nil {
		b, err := json.Marshal(tl.action)
		if err != nil {
			t.Fatal(err)
		}
		// In the input directory, but not in the manifest (contract.ListInputs).
		if err := os.WriteFile(filepath.Join(r.input, contract.ActionFileName), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := contract.Env(m, tl.inputs, tl.action)
	env["SKRIPTOTEKET_INPUT_DIR"] = r.input
	env["SKRIPTOTEKET_OUTPUT_DIR"] = r.output
	env["SKRIPTOTEKET_RESULT_PATH"] = result
	env["SKRIPTOTEKET_SCRIPT_PATH"] = script
	env["HOME"] = home
	env["PATH"] = os.Getenv("PATH")

	cmd := exec.Command(py, "-s", "-B", filepath.Join(skrip, "skrip_shim.py"))
	cmd.Dir = work
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.exit = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r.stdout, r.stderr = stdout.String(), stderr.String()
	if r.raw, err = os.ReadFile(result); err != nil {
		t.Fatal(err)
	}
	if r.res, err = contract.ParseResult(r.raw, contract.DefaultPolicy()); err != nil {
		t.Fatalf("result.json: %v\n%s\nstderr:\n%s", err, r.raw, r.stderr)
	}
	if r.exit != 0 {
		t.Fatalf("exit code %d with result.json written; stderr:\n%s", r.exit, r.stderr)
	}
	return r
}

func TestShim(t *testing.T) {
	tests := []struct {
		name  string
		tool  tool
		check func(t *testing.T, r run)
	}{
		{
			name: "returns str",
			tool: tool{script: "def run_tool(input_dir, output_dir):\n    return '<p>hej</p>'\n"},
			check: func(t *testing.T, r run) {
				wantSucceeded(t, r)
				if len(r.res.Outputs) != 1 || r.res.Outputs[0].Kind != contract.KindHTML || r.res.Outputs[0].HTML != "<p>hej</p>" {
					t.Errorf("outputs %+v", r.res.Outputs)
				}
				if r.res.State != nil || bytes.Contains(r.raw, []byte(`"state"`)) {
					t.Errorf("state written: %s", r.raw)
				}
			},
		},
		{
			// As in the original hub: a TypeError, with what was returned on stderr.
			name: "returns None",
			tool: tool{script: "def run_tool(input_dir, output_dir):\n    print('working')\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution failed (TypeError).")
				if !strings.Contains(r.stderr, "TypeError: run_tool returned None; return a str (HTML) or a dict") || r.stdout != "working\n" {
					t.Errorf("stderr %q, stdout %q", r.stderr, r.stdout)
				}
			},
		},
		{
			name: "returns ''",
			tool: tool{script: "def run_tool(input_dir, output_dir):\n    return ''\n"},
			check: func(t *testing.T, r run) {
				wantSucceeded(t, r)
				if len(r.res.Outputs) != 0 {
					t.Errorf("outputs %+v, want none, as in the original hub", r.res.Outputs)
				}
			},
		},
		{
			name: "returns a dict",
			tool: tool{script: `
def run_tool(input_dir, output_dir):
    return {
        "outputs": [
            {"kind": "notice", "level": "info", "message": "Klart"},
            {"kind": "table", "columns": [{"key": "n", "label": "N"}], "rows": [{"n": 1}, {"n": 2}]},
        ],
        "next_actions": [{"action_id": "convert", "label": "Konvertera till PDF", "kind": "form",
                          "fields": [{"name": "page_size", "label": "Sida", "kind": "enum",
                                      "options": [{"value": "a4", "label": "A4"}]}]}],
        "state": {"step": "preview", "html_files": ["å.html"]},
    }
`},
			check: func(t *testing.T, r run) {
				wantSucceeded(t, r)
				if len(r.res.Outputs) != 2 || r.res.Outputs[0].Message != "Klart" || len(r.res.Outputs[1].Rows) != 2 {
					t.Errorf("outputs %+v", r.res.Outputs)
				}
				if len(r.res.NextActions) != 1 || r.res.NextActions[0].Fields[0].Options[0].Value != "a4" {
					t.Errorf("next actions %+v", r.res.NextActions)
				}
				if string(r.res.State) != `{"html_files":["å.html"],"step":"preview"}` {
					t.Errorf("state %s", r.res.State)
				}
			},
		},
		{
			name: "state explicitly None",
			tool: tool{script: "def run_tool(i, o):\n    return {'outputs': None, 'state': None}\n"},
			check: func(t *testing.T, r run) {
				wantSucceeded(t, r)
				if string(r.res.State) != "null" {
					t.Errorf("state %q, want null", r.res.State)
				}
			},
		},
		{
			name: "unknown keys in the dict",
			tool: tool{script: "def run_tool(i, o):\n    return {'output': []}\n"},
			check: func(t *testing.T, r run) {
				wantSucceeded(t, r)
				if !strings.Contains(r.stderr, "ignoring key(s) 'output'") {
					t.Errorf("stderr %q", r.stderr)
				}
			},
		},
		{
			name: "ToolUserError",
			tool: tool{script: "import skrip_toolkit as tk\ndef run_tool(i, o):\n    raise tk.ToolUserError('Ladda upp minst en HTML-fil.')\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceTool, "Ladda upp minst en HTML-fil.")
				if strings.Contains(r.stderr, "Traceback") {
					t.Errorf("a traceback for a ToolUserError:\n%s", r.stderr)
				}
			},
		},
		{
			name: "ToolUserError naming a field refuses the user's input",
			tool: tool{script: "import skrip_toolkit as tk\ndef run_tool(i, o):\n    raise tk.ToolUserError('Filen saknar kolumnen Namn.', field=' klasslista ')\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceInput, "Filen saknar kolumnen Namn.")
				if r.res.ErrorField != "klasslista" {
					t.Errorf("error_field %q; want klasslista", r.res.ErrorField)
				}
			},
		},
		{
			name:  "ToolUserError with an empty field is the tool's own message",
			tool:  tool{script: "from tool_errors import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError('Fel.', field='  ')\n"},
			check: func(t *testing.T, r run) { wantFailed(t, r, contract.SourceTool, "Fel.") },
		},
		{
			name: "a Python subprocess imports the toolkits",
			tool: tool{script: "import subprocess, sys\ndef run_tool(i, o):\n    return subprocess.run([sys.executable, '-c', 'import skriptoteket_toolkit, tool_errors, pdf_helper, skrip_toolkit; print(skriptoteket_toolkit.read_inputs())'], capture_output=True, text=True, check=True).stdout\n"},
			check: func(t *testing.T, r run) {
				if r.res.Status != "succeeded" || len(r.res.Outputs) != 1 || r.res.Outputs[0].HTML != "{}\n" {
					t.Errorf("result %+v, stderr %s", r.res, r.stderr)
				}
			},
		},
		{
			name: "ToolUserError from tool_errors",
			tool: tool{script: "from tool_errors import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError('  Filtypen stöds inte.\\n')\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceTool, "Filtypen stöds inte.")
				if strings.Contains(r.stderr, "Traceback") {
					t.Errorf("a traceback for a ToolUserError:\n%s", r.stderr)
				}
			},
		},
		{
			name:  "ToolUserError without a message",
			tool:  tool{script: "import skrip_toolkit as tk\ndef run_tool(i, o):\n    raise tk.ToolUserError(' ')\n"},
			check: func(t *testing.T, r run) { wantFailed(t, r, contract.SourceTool, "Ett fel inträffade.") },
		},
		{
			name:  "ToolUserError while importing the script",
			tool:  tool{script: "import tool_errors\nraise tool_errors.ToolUserError('Verktyget är avstängt.')\ndef run_tool(i, o):\n    return ''\n"},
			check: func(t *testing.T, r run) { wantFailed(t, r, contract.SourceTool, "Verktyget är avstängt.") },
		},
		{
			name: "a subclass of ToolUserError with a broken __str__",
			tool: tool{script: `
from tool_errors import ToolUserError
class Mine(ToolUserError):
    def __str__(self):
        raise RuntimeError("no")
def run_tool(i, o):
    raise Mine("Fel i raden 3.")
`},
			check: func(t *testing.T, r run) { wantFailed(t, r, contract.SourceTool, "Fel i raden 3.") },
		},
		{
			name: "ValueError",
			tool: tool{script: "def helper():\n    raise ValueError('bad value')\n\ndef run_tool(i, o):\n    helper()\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution failed (ValueError).")
				for _, want := range []string{"Traceback (most recent call last):", "script.py\", line 5, in run_tool", "line 2, in helper", "ValueError: bad value"} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
					}
				}
				if strings.Contains(r.stderr, "skrip_shim.py") {
					t.Errorf("the traceback shows the shim's frames:\n%s", r.stderr)
				}
			},
		},
		{
			name: "error while importing",
			tool: tool{script: "import no_such_module_here\ndef run_tool(i, o):\n    return ''\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution failed (ModuleNotFoundError).")
			},
		},
		{
			name: "syntax error",
			tool: tool{script: "def run_tool(i, o)\n    return ''\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution failed (SyntaxError).")
				if !strings.Contains(r.stderr, "script.py\", line 1") {
					t.Errorf("stderr:\n%s", r.stderr)
				}
			},
		},
		{
			name: "returns 42",
			tool: tool{script: "def run_tool(i, o):\n    return 42\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution failed (TypeError).")
			},
		},
		{
			name: "returns bytes",
			tool: tool{script: "def run_tool(i, o):\n    return b'<p>'\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution failed (TypeError).")
				if !strings.Contains(r.stderr, "run_tool returned bytes;") {
					t.Errorf("stderr %q", r.stderr)
				}
			},
		},
		{
			name: "no run_tool",
			tool: tool{script: "def main(i, o):\n    return ''\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "The script defines no function run_tool(input_dir, output_dir).")
			},
		},
		{
			name: "sys.exit",
			tool: tool{script: "import sys\ndef run_tool(i, o):\n    sys.exit(3)\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution failed (SystemExit): the tool called exit(3); return from run_tool instead.")
			},
		},
		{
			name: "KeyboardInterrupt",
			tool: tool{script: "def run_tool(i, o):\n    raise KeyboardInterrupt\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution was interrupted (KeyboardInterrupt).")
			},
		},
		{
			name: "toolkit on an initial run",
			tool: tool{
				files:  map[string]string{"a.csv": "x,y\n", "bild ö.png": "PNG"},
				inputs: map[string]any{"n": 3.0, "name": "Åsa"},
				script: `
import os, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "json", "value": {
        "args": [input_dir, output_dir], "manifest": tk.manifest(), "files": sorted(f["name"] for f in tk.input_files()),
        "inputs": tk.inputs(), "action": tk.action(), "state": tk.state(),
        "content": open(os.path.join(input_dir, "a.csv")).read()}}]}
`},
			check: func(t *testing.T, r run) {
				v := jsonValue(t, r)
				if fmt.Sprint(v["args"]) != fmt.Sprint([]string{r.input, r.output}) {
					t.Errorf("args %v", v["args"])
				}
				if fmt.Sprint(v["files"]) != "[a.csv bild ö.png]" || v["content"] != "x,y\n" {
					t.Errorf("files %v, content %q", v["files"], v["content"])
				}
				if n := len(v["manifest"].(map[string]any)["files"].([]any)); n != 2 {
					t.Errorf("manifest %v", v["manifest"])
				}
				if fmt.Sprint(v["inputs"]) != "map[n:3 name:Åsa]" || v["action"] != nil || v["state"] != nil {
					t.Errorf("inputs %v, action %v, state %v", v["inputs"], v["action"], v["state"])
				}
			},
		},
		{
			name: "toolkit on an action run",
			tool: tool{
				files: map[string]string{"index.html": "<h1>x</h1>"},
				action: &contract.Action{ActionID: "convert", Input: map[string]any{"page_size": "a4"},
					State: json.RawMessage(`{"step":"preview","html_files":["index.html"]}`)},
				script: `
import json, os, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    on_disk = json.load(open(os.path.join(input_dir, "action.json")))
    return {"outputs": [{"kind": "json", "value": {
        "manifest": sorted(f["name"] for f in tk.manifest()["files"]),
        "files": [f["name"] for f in tk.input_files()],
        "action": tk.action(), "same": tk.action() == on_disk, "state": tk.state(), "inputs": tk.inputs()}}],
        "state": {"step": "done"}}
`},
			check: func(t *testing.T, r run) {
				v := jsonValue(t, r)
				if fmt.Sprint(v["manifest"]) != "[index.html]" || fmt.Sprint(v["files"]) != "[index.html]" {
					t.Errorf("manifest %v, files %v", v["manifest"], v["files"])
				}
				if v["same"] != true || fmt.Sprint(v["action"]) != "map[action_id:convert input:map[page_size:a4] state:map[html_files:[index.html] step:preview]]" {
					t.Errorf("action %v (same as action.json: %v)", v["action"], v["same"])
				}
				if fmt.Sprint(v["state"]) != "map[html_files:[index.html] step:preview]" || fmt.Sprint(v["inputs"]) != "map[]" {
					t.Errorf("state %v, inputs %v", v["state"], v["inputs"])
				}
				if string(r.res.State) != `{"step":"done"}` {
					t.Errorf("new state %s", r.res.State)
				}
			},
		},
		{
			name: "artifacts",
			tool: tool{script: `
import os
def run_tool(input_dir, output_dir):
    open(os.path.join(output_dir, "report.pdf"), "w").write("pdf")
    os.makedirs(os.path.join(output_dir, "sub", "deeper"))
    open(os.path.join(output_dir, "sub", "deeper", "b ö.png"), "w").write("png")
    os.symlink("report.pdf", os.path.join(output_dir, "link.pdf"))
    os.symlink("/etc", os.path.join(output_dir, "etc"))
    os.symlink("sub", os.path.join(output_dir, "sublink"))
    os.mkfifo(os.path.join(output_dir, "fifo"))
    os.chdir("/")
    return "<p>done</p>"
`},
			check: func(t *testing.T, r run) {
				wantSucceeded(t, r)
				if got := fmt.Sprint(r.res.Artifacts); got != "[output/report.pdf output/sub/deeper/b ö.png]" {
					t.Errorf("artifacts %s", got)
				}
			},
		},
		{
			name: "an undecodable file name",
			tool: tool{script: "import os\ndef run_tool(i, o):\n    open(os.path.join(o.encode(), b'bad\\xff.txt'), 'w').write('x')\n    return {'outputs': [{'kind': 'markdown', 'markdown': os.listdir(o)[0]}]}\n"},
			check: func(t *testing.T, r run) {
				wantSucceeded(t, r)
				if fmt.Sprint(r.res.Artifacts) != "[output/bad\ufffd.txt]" || r.res.Outputs[0].Markdown != "bad\ufffd.txt" {
					t.Errorf("artifacts %q, outputs %+v", r.res.Artifacts, r.res.Outputs)
				}
			},
		},
		{
			name: "values JSON cannot hold",
			tool: tool{script: `
import datetime, decimal, enum
class Colour(enum.IntEnum):
    RED = 1
def run_tool(i, o):
    return {"outputs": [{"kind": "json", "value": {
        "when": datetime.date(2024, 5, 1), "dec": decimal.Decimal("1.10"), "nan": float("nan"), "inf": float("-inf"),
        "set": {1}, 7: "int key", None: "none key", "tuple": (1, 2), "colour": Colour.RED, "big": 2**70}}]}
`},
			check: func(t *testing.T, r run) {
				v := jsonValue(t, r)
				want := map[string]any{"when": "2024-05-01", "dec": "1.10", "nan": nil, "inf": nil, "set": []any{1.0},
					"7": "int key", "null": "none key", "tuple": []any{1.0, 2.0}, "colour": 1.0, "big": 1180591620717411303424.0}
				if fmt.Sprint(v) != fmt.Sprint(want) {
					t.Errorf("value %v\nwant  %v", v, want)
				}
			},
		},
		{
			// As in the original: a set becomes a list sorted by its items' JSON ("10"
			// before "2", "\"x\"" before "1"), in outputs and in state alike.
			name: "sets",
			tool: tool{script: `
def run_tool(i, o):
    return {"outputs": [{"kind": "json", "value": {"n": {10, 2, 1}, "s": frozenset({"b", "a"}), "e": set(), "mixed": {"x", 1}}}],
            "state": {"valda": {"Åsa", "Bo"}}}
`},
			check: func(t *testing.T, r run) {
				if v := jsonValue(t, r); fmt.Sprint(v) != "map[e:[] mixed:[x 1] n:[1 10 2] s:[a b]]" {
					t.Errorf("value %v", v)
				}
				if string(r.res.State) != `{"valda":["Bo","Åsa"]}` {
					t.Errorf("state %s", r.res.State)
				}
			},
		},
		{
			// As in the original: a failed run lists no artifacts, whatever it wrote.
			name: "a failed run lists no artifacts",
			tool: tool{script: "import os\ndef run_tool(i, o):\n    open(os.path.join(o, 'half.csv'), 'w').write('a')\n    raise ValueError('x')\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "Tool execution failed (ValueError).")
				if len(r.res.Artifacts) != 0 || !strings.Contains(string(r.raw), `"artifacts": []`) {
					t.Errorf("artifacts %v in %s", r.res.Artifacts, r.raw)
				}
			},
		},
		{
			name: "a cycle",
			tool: tool{script: "def run_tool(i, o):\n    l = []\n    l.append(l)\n    return {'outputs': [{'kind': 'json', 'value': l}]}\n"},
			check: func(t *testing.T, r run) {
				wantFailed(t, r, contract.SourceCrash, "run_tool's outputs, next_actions or state are not JSON-serialisable (ValueError: it contains itself).")
			},
		},
		{
			name: "closes stdout",
			tool: tool{script: "import sys\ndef run_tool(i, o):\n    print('bye')\n    sys.stdout.close()\n    return 'ok'\n"},
			check: func(t *testing.T, r run) {
				wantSucceeded(t, r)
				if r.stdout != "bye\n" {
					t.Errorf("stdout %q", r.stdout)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, runShim(t, tc.tool))
		})
	}
}

func wantSucceeded(t *testing.T, r run) {
	t.Helper()
	if r.res.Status != contract.StatusSucceeded || len(r.res.Notices) != 0 {
		t.Fatalf("status %q (%s), notices %+v; stderr:\n%s", r.res.Status, r.res.ErrorSummary, r.res.Notices, r.stderr)
	}
}

// wantFailed: the run failed with summary, and result.json says its error came from
// source (contract.SourceTool for a ToolUserError, contract.SourceCrash otherwise).
func wantFailed(t *testing.T, r run, source, summary string) {
	t.Helper()
	if r.res.Status != contract.StatusFailed || r.res.ErrorSummary != summary || r.res.ErrorSource != source {
		t.Fatalf("status %q, error_summary %q, error_source %q; want failed, %q, %q; stderr:\n%s",
			r.res.Status, r.res.ErrorSummary, r.res.ErrorSource, summary, source, r.stderr)
	}
	if len(r.res.Outputs) != 0 || len(r.res.NextActions) != 0 || r.res.State != nil {
		t.Errorf("a failed run kept outputs %+v, next actions %+v, state %s", r.res.Outputs, r.res.NextActions, r.res.State)
	}
}

// jsonValue returns the value of the run's only output, a json one.
func jsonValue(t *testing.T, r run) map[string]any {
	t.Helper()
	wantSucceeded(t, r)
	if len(r.res.Outputs) != 1 || r.res.Outputs[0].Kind != contract.KindJSON {
		t.Fatalf("outputs %+v", r.res.Outputs)
	}
	b, _ := json.Marshal(r.res.Outputs[0].Value)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestShimWriteFails(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	if err := WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.py")
	os.WriteFile(script, []byte("def run_tool(i, o):\n    return 'x'\n"), 0o644)
	cmd := exec.Command(py, "-s", "-B", filepath.Join(dir, "skrip_shim.py"))
	cmd.Env = []string{"SKRIPTOTEKET_SCRIPT_PATH=" + script, "SKRIPTOTEKET_OUTPUT_DIR=" + dir,
		"SKRIPTOTEKET_RESULT_PATH=" + filepath.Join(dir, "missing", "result.json")}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "writing "+filepath.Join(dir, "missing", "result.json")+" failed") {
		t.Fatalf("err %v, output %s", err, out)
	}
}

func TestWriteTo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shim")
	for range 2 { // the second time over existing files
		if err := WriteTo(dir); err != nil {
			t.Fatal(err)
		}
	}
	// The modules are readable by all; bin/ and its commands executable too.
	var names []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		name, _ := filepath.Rel(dir, p)
		name = filepath.ToSlash(name)
		names = append(names, name)
		info, _ := e.Info()
		wantMode := os.FileMode(0o644)
		if e.IsDir() || strings.HasPrefix(name, "bin/") {
			wantMode = 0o755
		}
		if e.IsDir() {
			if info.Mode().Perm() != wantMode {
				t.Errorf("%s/: mode %v, want %v", name, info.Mode().Perm(), wantMode)
			}
			return nil
		}
		want, _ := FS.ReadFile(name)
		got, _ := os.ReadFile(p)
		if info.Mode().Perm() != wantMode || !bytes.Equal(got, want) {
			t.Errorf("%s: mode %v, %d bytes (want %v, %d bytes)", name, info.Mode().Perm(), len(got), wantMode, len(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != "[bin bin/pandoc pdf_helper.py skrip_shim.py skrip_toolkit.py skrip_warm.py skriptoteket_toolkit.py tool_errors.py]" {
		t.Errorf("files %v", names)
	}
	if Entry != "/skrip/skrip_shim.py" || fmt.Sprint(Args()) != "[-s -B /skrip/skrip_shim.py]" {
		t.Errorf("Entry %q, Args %v", Entry, Args())
	}
}

// TestEncodeIsJSONDumps checks the shim's own JSON writer (it no longer imports json, for
// start-up time) against json.dumps(ensure_ascii=False, allow_nan=False) on what
// _jsonable returns, and that the shim starts without importing json, traceback or
// importlib.util.
func TestEncodeIsJSONDumps(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	if err := WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	check := `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("shim", sys.argv[1])
shim = importlib.util.module_from_spec(spec)
spec.loader.exec_module(shim)
class S(str): pass
class I(int): pass
values = [
    None, True, False, 0, -1, 2**80, I(7), 0.1, -0.0, 1e16, 1.5e-7, 3.0, float("nan"), float("inf"),
    "", "plain", 'quote " backslash \\ slash /', "\n\r\t\b\f\x00\x01\x1f\x7f", "åäö ✓ 😀", "\udc80 lone",
    S("sub"), [], {}, [1, [2, [3, {}]]], (1, "t"), {"a": 1, "b": [True, None], "c": {"d": "e"}},
    {3, 1}, frozenset(["b", "a"]), set(),
    {1: "int key", 2.5: "float key", True: "bool key", None: "none key", (1, 2): "tuple key"},
    {"outputs": [{"kind": "html_sandboxed", "html": "<p>" + "x" * 5000 + "</p>"}], "state": {"n": 3}},
    object(),
]
for v in values:
    j = shim._jsonable(v, 0, set())
    want = json.dumps(j, ensure_ascii=False, allow_nan=False)
    out = []
    shim._dumps(j, out)
    if "".join(out) != want:
        print("MISMATCH", repr(v), "".join(out), want)
        sys.exit(1)
    if shim._encode(v) != want.encode("utf-8", "backslashreplace"):
        print("ENCODE MISMATCH", repr(v))
        sys.exit(1)
`
	out, err := exec.Command(py, "-s", "-B", "-c", check, filepath.Join(dir, "skrip_shim.py")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	script := filepath.Join(dir, "script.py")
	os.WriteFile(script, []byte("import sys\ndef run_tool(i, o):\n    return 'loaded:' + ' '.join(m for m in ('json', 'traceback', 'importlib.util', 'collections') if m in sys.modules)\n"), 0o644)
	result := filepath.Join(dir, "result.json")
	cmd := exec.Command(py, "-s", "-B", filepath.Join(dir, "skrip_shim.py"))
	cmd.Env = []string{"SKRIPTOTEKET_SCRIPT_PATH=" + script, "SKRIPTOTEKET_OUTPUT_DIR=" + dir, "SKRIPTOTEKET_RESULT_PATH=" + result}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, _ := os.ReadFile(result)
	var res contract.Result
	if err := json.Unmarshal(b, &res); err != nil || res.Status != "succeeded" || len(res.Outputs) != 1 {
		t.Fatalf("result %s: %v", b, err)
	}
	if html := res.Outputs[0].HTML; html != "loaded:" {
		t.Errorf("the shim imported %s before the tool ran", html)
	}
}
