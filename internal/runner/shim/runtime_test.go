package shim

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// The original hub's modules (docs/spec.md §5b), called straight from Python with a given
// environment: every function with good and with malformed values.

// pyEval runs code with the shim's directory on sys.path and only env as environment
// (plus PATH), and returns the JSON of the variable result that code sets.
func pyEval(t *testing.T, env map[string]string, code string) string {
	t.Helper()
	py := python(t)
	dir := filepath.Join(t.TempDir(), "skrip")
	if err := WriteTo(dir); err != nil {
		t.Fatal(err)
	}
	prog := "import json, sys\nsys.path.insert(0, " + pyStr(dir) + ")\n" + code + "\nprint(json.dumps(result, sort_keys=True))\n"
	cmd := exec.Command(py, "-s", "-B", "-c", prog)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s\nstderr:\n%s", err, code, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// pyStr quotes s as a Python string literal (JSON's escapes are Python's).
func pyStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestOriginalToolkit(t *testing.T) {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000) // under the 128 KiB an env var may hold
	goodManifest := `{"files":[{"name":"a.csv","path":"/work/input/a.csv","bytes":4},{"name":"action.json","path":"/work/input/action.json","bytes":60}]}`
	tests := []struct {
		name string
		env  map[string]string
		// memory, when set, is written to a file SKRIPTOTEKET_MEMORY_PATH names
		// (unless env names one itself).
		memory *string
		expr   string
		want   string
	}{
		// read_inputs
		{name: "inputs", env: map[string]string{"SKRIPTOTEKET_INPUTS": `{"namn":"Åsa","n":3,"x":null}`}, expr: "read_inputs()", want: `{"n": 3, "namn": "\u00c5sa", "x": null}`},
		{name: "inputs missing", expr: "read_inputs()", want: `{}`},
		{name: "inputs empty", env: map[string]string{"SKRIPTOTEKET_INPUTS": ""}, expr: "read_inputs()", want: `{}`},
		{name: "inputs blank", env: map[string]string{"SKRIPTOTEKET_INPUTS": " \n "}, expr: "read_inputs()", want: `{}`},
		{name: "inputs not JSON", env: map[string]string{"SKRIPTOTEKET_INPUTS": "{namn: Åsa"}, expr: "read_inputs()", want: `{}`},
		{name: "inputs a list", env: map[string]string{"SKRIPTOTEKET_INPUTS": "[1, 2]"}, expr: "read_inputs()", want: `{}`},
		{name: "inputs a string", env: map[string]string{"SKRIPTOTEKET_INPUTS": `"x"`}, expr: "read_inputs()", want: `{}`},
		{name: "inputs null", env: map[string]string{"SKRIPTOTEKET_INPUTS": "null"}, expr: "read_inputs()", want: `{}`},
		{name: "inputs nested too deep", env: map[string]string{"SKRIPTOTEKET_INPUTS": deep}, expr: "read_inputs()", want: `{}`},

		// read_input_manifest
		{name: "manifest", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": goodManifest}, expr: "read_input_manifest()",
			want: `{"files": [{"bytes": 4, "name": "a.csv", "path": "/work/input/a.csv"}, {"bytes": 60, "name": "action.json", "path": "/work/input/action.json"}]}`},
		{name: "manifest missing", expr: "read_input_manifest()", want: `{"files": []}`},
		{name: "manifest not JSON", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": "files"}, expr: "read_input_manifest()", want: `{"files": []}`},
		{name: "manifest a list", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": "[]"}, expr: "read_input_manifest()", want: `{"files": []}`},
		{name: "manifest nested too deep", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": deep}, expr: "read_input_manifest()", want: `{"files": []}`},

		// list_input_files
		{name: "files", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": goodManifest}, expr: "list_input_files()",
			want: `[{"bytes": 4, "name": "a.csv", "path": "/work/input/a.csv"}, {"bytes": 60, "name": "action.json", "path": "/work/input/action.json"}]`},
		{name: "files missing", expr: "list_input_files()", want: `[]`},
		{name: "files not JSON", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": "{"}, expr: "list_input_files()", want: `[]`},
		{name: "files not a list", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": `{"files":{"name":"a"}}`}, expr: "list_input_files()", want: `[]`},
		{name: "files without files", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": `{}`}, expr: "list_input_files()", want: `[]`},
		{name: "files keeps only well-formed entries", env: map[string]string{"SKRIPTOTEKET_INPUT_MANIFEST": `{"files":[
			{"name":"ok.txt","path":"/work/input/ok.txt","bytes":0,"extra":"dropped"},
			{"name":1,"path":"/work/input/1","bytes":1},
			{"name":"nopath","bytes":1},
			{"name":"p","path":null,"bytes":1},
			{"name":"bool","path":"/work/input/bool","bytes":true},
			{"name":"float","path":"/work/input/float","bytes":1.0},
			{"name":"str","path":"/work/input/str","bytes":"1"},
			"a.csv", null, [1],
			{"name":"big.bin","path":"/work/input/big.bin","bytes":20000000}]}`},
			expr: "list_input_files()",
			want: `[{"bytes": 0, "name": "ok.txt", "path": "/work/input/ok.txt"}, {"bytes": 20000000, "name": "big.bin", "path": "/work/input/big.bin"}]`},

		// read_action and get_action_parts
		{name: "action", env: map[string]string{"SKRIPTOTEKET_ACTION": `{"action_id":" convert ","input":{"page":"a4"},"state":{"step":2}}`},
			expr: "[read_action(), get_action_parts()]",
			want: `[{"action_id": "convert", "input": {"page": "a4"}, "state": {"step": 2}}, ["convert", {"page": "a4"}, {"step": 2}]]`},
		{name: "action missing", expr: "[read_action(), get_action_parts()]", want: `[null, [null, {}, {}]]`},
		{name: "action empty", env: map[string]string{"SKRIPTOTEKET_ACTION": ""}, expr: "[read_action(), get_action_parts()]", want: `[null, [null, {}, {}]]`},
		{name: "action not JSON", env: map[string]string{"SKRIPTOTEKET_ACTION": "{action"}, expr: "[read_action(), get_action_parts()]", want: `[null, [null, {}, {}]]`},
		{name: "action a list", env: map[string]string{"SKRIPTOTEKET_ACTION": `["convert"]`}, expr: "[read_action(), get_action_parts()]", want: `[null, [null, {}, {}]]`},
		{name: "action without an id", env: map[string]string{"SKRIPTOTEKET_ACTION": `{"input":{},"state":{}}`}, expr: "[read_action(), get_action_parts()]", want: `[null, [null, {}, {}]]`},
		{name: "action id not a string", env: map[string]string{"SKRIPTOTEKET_ACTION": `{"action_id":7}`}, expr: "[read_action(), get_action_parts()]", want: `[null, [null, {}, {}]]`},
		{name: "action id blank", env: map[string]string{"SKRIPTOTEKET_ACTION": `{"action_id":"  "}`}, expr: "[read_action(), get_action_parts()]", want: `[null, [null, {}, {}]]`},
		{name: "action input and state not objects", env: map[string]string{"SKRIPTOTEKET_ACTION": `{"action_id":"go","input":[1],"state":null}`},
			expr: "[read_action(), get_action_parts()]", want: `[{"action_id": "go", "input": {}, "state": {}}, ["go", {}, {}]]`},
		{name: "action without input and state", env: map[string]string{"SKRIPTOTEKET_ACTION": `{"action_id":"go"}`},
			expr: "get_action_parts()", want: `["go", {}, {}]`},
		{name: "action nested too deep", env: map[string]string{"SKRIPTOTEKET_ACTION": deep}, expr: "get_action_parts()", want: `[null, {}, {}]`},

		// read_memory and read_settings
		{name: "memory", memory: ptr(`{"settings":{"theme_color":"#ff0000","n":2},"other":1}`),
			expr: "[read_memory(), read_settings()]", want: `[{"other": 1, "settings": {"n": 2, "theme_color": "#ff0000"}}, {"n": 2, "theme_color": "#ff0000"}]`},
		{name: "memory empty object", memory: ptr(`{}`), expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		{name: "memory path unset", expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		{name: "memory path blank", env: map[string]string{"SKRIPTOTEKET_MEMORY_PATH": "  "}, expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		{name: "memory file missing", env: map[string]string{"SKRIPTOTEKET_MEMORY_PATH": "/nonexistent/memory.json"}, expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		{name: "memory path a directory", env: map[string]string{"SKRIPTOTEKET_MEMORY_PATH": "/"}, expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		{name: "memory empty file", memory: ptr(""), expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		{name: "memory not JSON", memory: ptr(`{"settings": `), expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		// The original reads memory.json as UTF-8 and lets the error through.
		{name: "memory not UTF-8", memory: ptr("{\"settings\":{\"a\":\"\xff\"}}"),
			expr: "[]\nfor f in (read_memory, read_settings):\n    try:\n        f()\n    except UnicodeDecodeError as e:\n        result.append(type(e).__name__)",
			want: `["UnicodeDecodeError", "UnicodeDecodeError"]`},
		{name: "memory a list", memory: ptr(`[{"settings":{}}]`), expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		{name: "memory nested too deep", memory: ptr(deep), expr: "[read_memory(), read_settings()]", want: `[{}, {}]`},
		{name: "settings not an object", memory: ptr(`{"settings":["a"]}`), expr: "[read_memory(), read_settings()]", want: `[{"settings": ["a"]}, {}]`},
		{name: "settings null", memory: ptr(`{"settings":null}`), expr: "read_settings()", want: `{}`},
		{name: "settings missing", memory: ptr(`{"theme":"x"}`), expr: "read_settings()", want: `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = v
			}
			if tc.memory != nil {
				p := filepath.Join(t.TempDir(), "memory.json")
				if err := os.WriteFile(p, []byte(*tc.memory), 0o444); err != nil {
					t.Fatal(err)
				}
				env["SKRIPTOTEKET_MEMORY_PATH"] = " " + p + " " // stripped, as in the original
			}
			got := pyEval(t, env, "from skriptoteket_toolkit import *\nresult = "+tc.expr)
			if got != tc.want {
				t.Errorf("%s\n got %s\nwant %s", tc.expr, got, tc.want)
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestOriginalToolkitNames: the original's public names are all there, and its type
// names work in annotations.
func TestOriginalToolkitNames(t *testing.T) {
	got := pyEval(t, nil, `
import skriptoteket_toolkit as st, tool_errors, pdf_helper, skrip_toolkit
def f(x: "st.JsonValue") -> "list[st.ManifestFile]":
    return []
a: st.ActionPayload = {"action_id": "a", "input": {}, "state": {}}
result = {"all": sorted(st.__all__), "callable": all(callable(getattr(st, n)) for n in st.__all__),
          "same": skrip_toolkit.ToolUserError is tool_errors.ToolUserError,
          "save_as_pdf": callable(pdf_helper.save_as_pdf)}
`)
	want := `{"all": ["ActionPayload", "JsonValue", "ManifestFile", "get_action_parts", "list_input_files", "read_action", "read_input_manifest", "read_inputs", "read_memory", "read_settings"], "callable": true, "same": true, "save_as_pdf": true}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestToolUserErrorMessage(t *testing.T) {
	got := pyEval(t, nil, `
from tool_errors import ToolUserError, GENERIC_MESSAGE
result = [[str(e), e.safe_message, list(e.args)] for e in (
    ToolUserError("  Filtypen stöds inte.\n"), ToolUserError(""), ToolUserError("   "), ToolUserError(), ToolUserError(None), ToolUserError(42))]
result.append(GENERIC_MESSAGE)
`)
	const g = `"Ett fel intr\u00e4ffade."` // the original's words
	want := `[["Filtypen st\u00f6ds inte.", "Filtypen st\u00f6ds inte.", ["Filtypen st\u00f6ds inte."]], [` + g + `, ` + g + `, [` + g + `]], [` + g + `, ` + g + `, [` + g + `]], [` + g + `, ` + g + `, [` + g + `]], [` + g + `, ` + g + `, [` + g + `]], ["42", "42", ["42"]], ` + g + `]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// requirePDF skips unless the interpreter the shim tests use has WeasyPrint and the host
// has poppler's pdfinfo.
func requirePDF(t *testing.T) {
	t.Helper()
	const install = "apt-get install weasyprint poppler-utils"
	if _, err := exec.LookPath("pdfinfo"); err != nil {
		testutil.Missing(t, "weasyprint", "pdfinfo not found", install)
	}
	if out, err := exec.Command(python(t), "-c", "import weasyprint").CombinedOutput(); err != nil {
		testutil.Missing(t, "weasyprint", "import weasyprint: "+strings.TrimSpace(string(out)), install)
	}
}

// pdfCase is one call of save_as_pdf(html, out, filename), where html and filename are
// Python expressions and out a fresh directory (the cwd is its parent). setup, when set,
// is Python run first, with out in the variable out.
type pdfCase struct{ setup, html, filename string }

// pdfCalls makes every call in one Python process (WeasyPrint takes a second to import)
// and returns, for each, its out and what happened: {"path": ...} or {"error": message}.
func pdfCalls(t *testing.T, cases []pdfCase) ([]string, []map[string]string) {
	t.Helper()
	var code strings.Builder
	code.WriteString("import os, sys\nfrom pdf_helper import save_as_pdf\nfrom tool_errors import ToolUserError\nresult = []\n")
	outs := make([]string, len(cases))
	for i, c := range cases {
		outs[i] = filepath.Join(t.TempDir(), "output")
		code.WriteString("def case():\n    out = " + pyStr(outs[i]) + "\n    os.chdir(os.path.dirname(out))\n")
		for _, line := range strings.Split(c.setup, "\n") {
			code.WriteString("    " + line + "\n")
		}
		code.WriteString("    try:\n        return {\"path\": save_as_pdf(" + c.html + ", out, " + c.filename + ")}\n" +
			"    except ToolUserError as e:\n        return {\"error\": str(e)}\n" +
			"result.append(case())\n")
	}
	var res []map[string]string
	if err := json.Unmarshal([]byte(pyEval(t, nil, code.String())), &res); err != nil || len(res) != len(cases) {
		t.Fatalf("%v: %d results for %d calls", err, len(res), len(cases))
	}
	return outs, res
}

func pdfinfo(t *testing.T, path string) {
	t.Helper()
	if out, err := exec.Command("pdfinfo", path).CombinedOutput(); err != nil {
		t.Errorf("pdfinfo %s: %v\n%s", path, err, out)
	}
}

func TestSaveAsPDF(t *testing.T) {
	requirePDF(t)
	const html = `"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body><h1>Rapport åäö</h1></body></html>"`
	tests := []struct {
		name, setup, html, filename string
		want                        string // the path under out
	}{
		{name: "plain", html: html, filename: `"rapport.pdf"`, want: "rapport.pdf"},
		{name: "sub-folders are created", html: html, filename: `"a/b/Rapport ö.PDF"`, want: "a/b/Rapport ö.PDF"},
		{name: "spaces around are stripped", html: html, filename: `"  r.Pdf "`, want: "r.Pdf"},
		{name: "backslashes separate folders", html: html, filename: `"sub\\r.pdf"`, want: "sub/r.pdf"},
		{name: "a pathlib path", setup: "import pathlib", html: html, filename: `pathlib.Path("p/r.pdf")`, want: "p/r.pdf"},
		{name: "bytes of HTML", html: `b"<p>hej</p>"`, filename: `"b.pdf"`, want: "b.pdf"},
		{name: "over an existing file", setup: "os.makedirs(out)\nopen(os.path.join(out, 'r.pdf'), 'w').write('old')", html: html, filename: `"r.pdf"`, want: "r.pdf"},
		{name: "output_dir relative", setup: "out = 'output'", html: html, filename: `"r.pdf"`, want: "r.pdf"},
		// The original reads the name as a POSIX path, where "." segments fall away.
		{name: "a dot segment", html: html, filename: `"./x.pdf"`, want: "x.pdf"},
		{name: "a dot segment inside", html: html, filename: `"a/./y.pdf"`, want: "a/y.pdf"},
		{name: "a slash after", html: html, filename: `"z.pdf/"`, want: "z.pdf"},
	}
	var cases []pdfCase
	for _, tc := range tests {
		cases = append(cases, pdfCase{tc.setup, tc.html, tc.filename})
	}
	outs, results := pdfCalls(t, cases)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, res := outs[i], results[i]
			want := filepath.Join(out, tc.want)
			if res["path"] != want {
				t.Fatalf("save_as_pdf: %v; want the path %s", res, want)
			}
			pdfinfo(t, want)
		})
	}
}

// TestSaveAsPDFRefuses: save_as_pdf refuses as the original hub's does, in its words.
func TestSaveAsPDFRefuses(t *testing.T) {
	requirePDF(t)
	const (
		html         = `"<p>x</p>"`
		badSuffix    = "Ogiltigt filnamn. Filnamnet måste sluta med .pdf."
		dotSegment   = "Ogiltigt filnamn. Filnamnet får inte innehålla '..' eller '.'."
		renderFailed = "PDF-rendering misslyckades. Kontrollera att HTML/CSS är giltig och att filnamnet slutar med .pdf."
	)
	tests := []struct {
		name, setup, html, filename string
		want                        string // the error message
	}{
		{name: "parent", html: html, filename: `"../x.pdf"`, want: dotSegment},
		{name: "parent inside", html: html, filename: `"a/../../x.pdf"`, want: dotSegment},
		{name: "parent with backslashes", html: html, filename: `"..\\x.pdf"`, want: dotSegment},
		{name: "absolute", html: html, filename: `"/abs.pdf"`, want: "Ogiltigt filnamn. Filnamnet måste vara relativt under output."},
		{name: "not .pdf", html: html, filename: `"x.txt"`, want: badSuffix},
		{name: "only .pdf", html: html, filename: `".pdf"`, want: badSuffix},
		{name: "only a dot", html: html, filename: `"./"`, want: badSuffix},
		{name: "empty", html: html, filename: `"  "`, want: badSuffix},
		{name: "NUL", html: html, filename: `"x\x00.pdf"`, want: "Ogiltigt filnamn. Filnamnet innehåller ogiltiga tecken."},
		{name: "not text", html: html, filename: `42`, want: badSuffix},
		{name: "bytes", html: html, filename: `b"x.pdf"`, want: badSuffix},
		{name: "a long name", html: html, filename: `"x" * 300 + ".txt"`, want: badSuffix},
		{name: "through a symlink out", setup: "os.makedirs(out)\nos.symlink(os.path.dirname(out), os.path.join(out, 'up'))", html: html, filename: `"up/x.pdf"`,
			want: "Ogiltigt filnamn. PDF måste sparas under output-katalogen."},
		{name: "HTML not text", html: `None`, filename: `"x.pdf"`, want: renderFailed},
		{name: "output_dir not a path", setup: "out = 7", html: html, filename: `"x.pdf"`, want: "Kunde inte skapa output-katalogen för PDF."},
		{name: "output_dir a file", setup: "open(out, 'w').write('')", html: html, filename: `"x.pdf"`, want: "Kunde inte skapa output-katalogen för PDF."},
		{name: "a folder by that name", setup: "os.makedirs(os.path.join(out, 'x.pdf'))", html: html, filename: `"x.pdf"`, want: renderFailed},
		{name: "a folder by that name, deeper", setup: "os.makedirs(os.path.join(out, 'a', 'x.PDF'))", html: html, filename: `"a/x.PDF"`, want: renderFailed},
		{name: "name too long", html: html, filename: `"x" * 300 + ".pdf"`, want: renderFailed},
		{name: "folder name too long", html: html, filename: `"d" * 300 + "/x.pdf"`, want: "Kunde inte skapa undermappar för PDF-utdata."},
		// Last: it hides WeasyPrint from the process for good.
		{name: "WeasyPrint missing", setup: "sys.modules['weasyprint'] = None", html: html, filename: `"x.pdf"`, want: renderFailed},
	}
	var cases []pdfCase
	for _, tc := range tests {
		cases = append(cases, pdfCase{tc.setup, tc.html, tc.filename})
	}
	outs, results := pdfCalls(t, cases)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, res := outs[i], results[i]
			if res["error"] != tc.want {
				t.Fatalf("save_as_pdf: %q\nwant the error %q", res, tc.want)
			}
			// Nothing was written: no PDF anywhere in the work directory.
			filepath.Walk(filepath.Dir(out), func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() && strings.HasSuffix(strings.ToLower(p), ".pdf") {
					t.Errorf("%s was written", p)
				}
				return nil
			})
		})
	}
}
