package runnertest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// The original hub's runtime inside the sandbox (docs/spec.md §5b): its three modules, and the
// user's settings in a read-only /work/memory.json.

// OriginalTool is a tool written only against the original hub's documented API.
//
//go:embed original_tool.py
var OriginalTool string

// runRuntime runs the cases of the original runtime; Run calls it.
func runRuntime(t *testing.T, r runner.Runner) {
	t.Run("original modules", func(t *testing.T) { testOriginalModules(t, r) })
	t.Run("memory.json", func(t *testing.T) { testMemoryFile(t, r) })
	t.Run("memory.json default", func(t *testing.T) { testMemoryDefault(t, r) })
	t.Run("ToolUserError", func(t *testing.T) { testToolUserError(t, r) })
	t.Run("save_as_pdf", func(t *testing.T) { testSaveAsPDF(t, r) })
	t.Run("original tool", func(t *testing.T) { testOriginalTool(t, r) })
	t.Run("XDG_CACHE_HOME", func(t *testing.T) { testCacheHome(t, r) })
	t.Run("commands first on PATH", func(t *testing.T) { testShimCommands(t, r) })
}

// testCacheHome: XDG_CACHE_HOME is a directory under HOME that the tool can write to, as
// libraries that keep caches (fontconfig, matplotlib) expect.
func testCacheHome(t *testing.T, r runner.Runner) {
	v := jsonValue(t, Exec(t, r, `
import os
def run_tool(input_dir, output_dir):
    cache = os.environ["XDG_CACHE_HOME"]
    os.makedirs(os.path.join(cache, "lib"), exist_ok=True)
    with open(os.path.join(cache, "lib", "x.cache"), "w") as f:
        f.write("cached")
    with open(os.path.join(cache, "top.cache"), "w") as f:
        f.write("top")
    return {"outputs": [{"kind": "json", "value": {"cache": cache, "home": os.environ["HOME"],
        "read": open(os.path.join(cache, "lib", "x.cache")).read() + open(os.path.join(cache, "top.cache")).read()}}]}
`, nil, nil, Limits()))
	if v["home"] != "/tmp/home" || v["cache"] != "/tmp/home/.cache" || v["read"] != "cachedtop" {
		t.Errorf("HOME %v, XDG_CACHE_HOME %v, written and read back %q", v["home"], v["cache"], v["read"])
	}
}

// testShimCommands: the shim's commands (the pandoc wrapper) are found first on PATH and
// run as the tool's user, whatever the runtime holds.
func testShimCommands(t *testing.T, r runner.Runner) {
	v := jsonValue(t, Exec(t, r, `
import os, shutil
def run_tool(input_dir, output_dir):
    p = shutil.which("pandoc")
    return {"outputs": [{"kind": "json", "value": {"which": p, "first": os.environ["PATH"].split(":")[0],
        "exec": bool(p) and os.access(p, os.X_OK), "head": open(p).readline() if p else ""}}]}
`, nil, nil, Limits()))
	which, _ := v["which"].(string)
	if which == "" || filepath.Dir(which) != v["first"] || v["exec"] != true || v["head"] != "#!/bin/sh\n" {
		t.Errorf("pandoc is %q (executable %v, first line %q), PATH starts with %v; want the wrapper in the first directory",
			which, v["exec"], v["head"], v["first"])
	}
}

func testOriginalModules(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
import skriptoteket_toolkit, tool_errors, pdf_helper, skrip_toolkit
def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "json", "value": {
        "toolkit": sorted(skriptoteket_toolkit.__all__),
        "same": skrip_toolkit.ToolUserError is tool_errors.ToolUserError,
        "pdf": callable(pdf_helper.save_as_pdf),
        "files": skriptoteket_toolkit.list_input_files(),
        "inputs": skriptoteket_toolkit.read_inputs(),
        "parts": skriptoteket_toolkit.get_action_parts()}}]}
`, map[string]string{"a.csv": "x\n"}, map[string]any{"n": 3}, Limits())
	v := jsonValue(t, o)
	if fmt.Sprint(v["toolkit"]) != "[ActionPayload JsonValue ManifestFile get_action_parts list_input_files read_action read_input_manifest read_inputs read_memory read_settings]" {
		t.Errorf("skriptoteket_toolkit.__all__ = %v", v["toolkit"])
	}
	if v["same"] != true || v["pdf"] != true {
		t.Errorf("ToolUserError the same class: %v; save_as_pdf callable: %v", v["same"], v["pdf"])
	}
	if fmt.Sprint(v["files"]) != "[map[bytes:2 name:a.csv path:/work/input/a.csv]]" || fmt.Sprint(v["inputs"]) != "map[n:3]" || fmt.Sprint(v["parts"]) != "[<nil> map[] map[]]" {
		t.Errorf("files %v, inputs %v, action parts %v", v["files"], v["inputs"], v["parts"])
	}
}

// memoryProbe reports what the tool sees of memory.json and whether it can change it.
const memoryProbe = `
import os, stat, skriptoteket_toolkit as st
def attempt(f):
    try:
        f()
        return "done"
    except OSError as e:
        return type(e).__name__
def write():
    with open("/work/memory.json", "w") as f:
        f.write("{}")
def run_tool(input_dir, output_dir):
    p = os.environ["SKRIPTOTEKET_MEMORY_PATH"]
    st_ = os.stat(p)
    return {"outputs": [{"kind": "json", "value": {
        "path": p, "content": open(p).read(), "memory": st.read_memory(), "settings": st.read_settings(),
        "uid": os.getuid(), "regular": stat.S_ISREG(st_.st_mode),
        "access_w": os.access(p, os.W_OK),
        "write": attempt(write), "append": attempt(lambda: open(p, "a").close()),
        "unlink": attempt(lambda: os.unlink(p)), "rename": attempt(lambda: os.rename(p, "/work/m.json")),
        "chmod": attempt(lambda: os.chmod(p, 0o666)),
        "after": open(p).read()}}]}
`

func testMemoryFile(t *testing.T, r runner.Runner) {
	memory := `{"settings":{"skola":"Skolan i Byn","antal":3,"färg":"#ff0000"}}`
	o := ExecJob(t, r, Job{Script: memoryProbe, Memory: []byte(memory), Limits: Limits()})
	v := jsonValue(t, o)
	if v["path"] != contract.MemoryPath || v["content"] != memory || v["after"] != memory || v["regular"] != true {
		t.Errorf("SKRIPTOTEKET_MEMORY_PATH %v holds %q (after the attempts %q), regular file: %v; want %s holding %s",
			v["path"], v["content"], v["after"], v["regular"], contract.MemoryPath, memory)
	}
	if fmt.Sprint(v["settings"]) != "map[antal:3 färg:#ff0000 skola:Skolan i Byn]" {
		t.Errorf("read_settings() = %v, read_memory() = %v", v["settings"], v["memory"])
	}
	if v["uid"] != 65534.0 || v["access_w"] != false {
		t.Errorf("uid %v, memory.json writable by access(): %v", v["uid"], v["access_w"])
	}
	for _, k := range []string{"write", "append", "unlink", "rename", "chmod"} {
		if v[k] == "done" {
			t.Errorf("%s of memory.json succeeded in the sandbox", k)
		}
	}
}

// testMemoryDefault: without memory, memory.json is "{}" and the settings are empty.
func testMemoryDefault(t *testing.T, r runner.Runner) {
	for _, memory := range [][]byte{nil, {}} {
		v := jsonValue(t, ExecJob(t, r, Job{Script: memoryProbe, Memory: memory, Limits: Limits()}))
		if v["content"] != "{}" || fmt.Sprint(v["memory"], v["settings"]) != "map[] map[]" {
			t.Errorf("Memory %q: memory.json holds %q, read_memory() %v, read_settings() %v", memory, v["content"], v["memory"], v["settings"])
		}
	}
}

func testToolUserError(t *testing.T, r runner.Runner) {
	for _, tc := range []struct{ script, want string }{
		{"from tool_errors import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError('  Filtypen stöds inte. ')\n", "Filtypen stöds inte."},
		{"import skrip_toolkit\ndef run_tool(i, o):\n    raise skrip_toolkit.ToolUserError('Ladda upp en fil.')\n", "Ladda upp en fil."},
		{"import tool_errors\ndef run_tool(i, o):\n    raise tool_errors.ToolUserError('')\n", "Ett fel inträffade."},
	} {
		o := Exec(t, r, tc.script, nil, nil, Limits())
		if o.Parsed.Status != contract.StatusFailed || o.Parsed.ErrorSummary != tc.want {
			t.Errorf("status %q, error_summary %q; want failed, %q; stderr:\n%s", o.Parsed.Status, o.Parsed.ErrorSummary, tc.want, o.Result.Stderr)
		}
		if strings.Contains(string(o.Result.Stderr), "Traceback") {
			t.Errorf("a traceback for a ToolUserError:\n%s", o.Result.Stderr)
		}
	}
}

// pdfLimits are the suite's limits with room for WeasyPrint.
func pdfLimits() runner.Limits {
	l := Limits()
	l.WallTime, l.MemoryBytes, l.TmpBytes = 60*time.Second, 1<<30, 256<<20
	return l
}

// requirePDF skips unless the sandbox's Python has WeasyPrint and the host has poppler's
// pdfinfo and pdftotext.
func requirePDF(t *testing.T, r runner.Runner) {
	t.Helper()
	const install = "the runner root filesystem (SKRIP_BWRAP_ROOTFS), or apt-get install weasyprint poppler-utils"
	for _, tool := range []string{"pdfinfo", "pdftotext"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.Missing(t, "weasyprint", tool+" not found on the host", install)
		}
	}
	o := Exec(t, r, "import weasyprint\ndef run_tool(i, o):\n    return ''\n", nil, nil, pdfLimits())
	if o.Parsed.Status != contract.StatusSucceeded {
		testutil.Missing(t, "weasyprint", "the sandbox cannot import weasyprint: "+o.Parsed.ErrorSummary, install)
	}
}

// pdfText checks that pdfinfo accepts the PDF at path and returns its text.
func pdfText(t *testing.T, path string) string {
	t.Helper()
	if out, err := exec.Command("pdfinfo", path).CombinedOutput(); err != nil {
		t.Fatalf("pdfinfo %s: %v\n%s", path, err, out)
	}
	out, err := exec.Command("pdftotext", path, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext %s: %v", path, err)
	}
	return string(out)
}

func testSaveAsPDF(t *testing.T, r runner.Runner) {
	requirePDF(t, r)
	o := ExecJob(t, r, Job{Script: `
from pdf_helper import save_as_pdf
from tool_errors import ToolUserError
def run_tool(input_dir, output_dir):
    res = {"path": save_as_pdf("<link rel='stylesheet' href='input/stil.css'><h1>Rapport</h1>", output_dir, "klass 7B/Rapport.PDF")}
    for name in ["../x.pdf", "/abs.pdf", "x.txt", "/work/output/y.pdf"]:
        try:
            res[name] = save_as_pdf("<p>x</p>", output_dir, name)
        except ToolUserError as e:
            res[name] = "refused: " + str(e)
    return {"outputs": [{"kind": "json", "value": res}]}
`, Files: map[string]string{"stil.css": `h1::after { content: " med stilmall"; }`}, Limits: pdfLimits(), KeepOutput: true})
	v := jsonValue(t, o)
	if v["path"] != "/work/output/klass 7B/Rapport.PDF" {
		t.Fatalf("save_as_pdf returned %v", v["path"])
	}
	if text := pdfText(t, filepath.Join(o.Output, "klass 7B", "Rapport.PDF")); !strings.Contains(text, "Rapport med stilmall") {
		t.Errorf("the PDF's text %q lacks what input/stil.css adds: the base URL is not /work/", text)
	}
	if fmt.Sprint(o.Parsed.Artifacts) != "[output/klass 7B/Rapport.PDF]" {
		t.Errorf("artifacts %v, output %v", o.Parsed.Artifacts, o.Files)
	}
	for name, want := range map[string]string{
		"../x.pdf":           "Ogiltigt filnamn. Filnamnet får inte innehålla '..' eller '.'.",
		"/abs.pdf":           "Ogiltigt filnamn. Filnamnet måste vara relativt under output.",
		"x.txt":              "Ogiltigt filnamn. Filnamnet måste sluta med .pdf.",
		"/work/output/y.pdf": "Ogiltigt filnamn. Filnamnet måste vara relativt under output.",
	} {
		if v[name] != "refused: "+want {
			t.Errorf("save_as_pdf(%q): %v, want the original's refusal %q", name, v[name], want)
		}
	}
}

// testOriginalTool runs OriginalTool as a user of the original hub would: without a file
// (it refuses), with a CSV, a form value and saved settings, then its "Skapa PDF" action.
func testOriginalTool(t *testing.T, r runner.Runner) {
	requirePDF(t, r)
	memory := []byte(`{"settings":{"skola":"Byskolan"}}`)

	o := ExecJob(t, r, Job{Script: OriginalTool, Files: map[string]string{"anteckningar.txt": "x"}, Memory: memory, Limits: pdfLimits()})
	if o.Parsed.Status != contract.StatusFailed || o.Parsed.ErrorSummary != "Ingen CSV-fil uppladdad." || strings.Contains(string(o.Result.Stderr), "Traceback") {
		t.Fatalf("without a CSV: status %q, error_summary %q; stderr:\n%s", o.Parsed.Status, o.Parsed.ErrorSummary, o.Result.Stderr)
	}

	o = ExecJob(t, r, Job{Script: OriginalTool, Files: map[string]string{"elever.csv": "\ufeffnamn\nÅsa\nBo\n"},
		Inputs: map[string]any{"klass": "8A"}, Memory: memory, Limits: pdfLimits()})
	if o.Parsed.Status != contract.StatusSucceeded {
		t.Fatalf("initial run: %q (%s); stderr:\n%s", o.Parsed.Status, o.Parsed.ErrorSummary, o.Result.Stderr)
	}
	table := o.Parsed.Outputs[0]
	if table.Kind != contract.KindTable || table.Title != "Byskolan, 8A" || fmt.Sprint(table.Rows) != "[map[namn:Åsa] map[namn:Bo]]" {
		t.Errorf("table %+v", table)
	}
	if v := jsonValue(t, o); fmt.Sprint(v) != "map[action:<nil> manifest:[elever.csv] memory:map[settings:map[skola:Byskolan]]]" {
		t.Errorf("diagnostics %v", v)
	}
	if len(o.Parsed.NextActions) != 1 || o.Parsed.NextActions[0].ActionID != "skapa_pdf" || fmt.Sprint(o.Parsed.NextActions[0].Prefill) != "map[klass:8A]" {
		t.Errorf("next actions %+v", o.Parsed.NextActions)
	}
	var state map[string]any
	if err := json.Unmarshal(o.Parsed.State, &state); err != nil || fmt.Sprint(state) != "map[klass:8A namn:[Åsa Bo]]" {
		t.Fatalf("state %s (%v)", o.Parsed.State, err)
	}

	o = ExecJob(t, r, Job{Script: OriginalTool, Files: map[string]string{"stil.css": `h1::after { content: " (stilmall)"; }`},
		Action: &contract.Action{ActionID: "skapa_pdf", Input: map[string]any{"klass": "8A"}, State: o.Parsed.State},
		Memory: memory, Limits: pdfLimits(), KeepOutput: true})
	if o.Parsed.Status != contract.StatusSucceeded {
		t.Fatalf("action run: %q (%s); stderr:\n%s", o.Parsed.Status, o.Parsed.ErrorSummary, o.Result.Stderr)
	}
	if len(o.Parsed.Outputs) != 2 || o.Parsed.Outputs[1].Markdown != "Ladda ner **8A.pdf** ovan." || string(o.Parsed.State) != "null" {
		t.Errorf("outputs %+v, state %s", o.Parsed.Outputs, o.Parsed.State)
	}
	text := pdfText(t, filepath.Join(o.Output, "rapporter", "8A.pdf"))
	for _, want := range []string{"Byskolan: 8A (stilmall)", "Åsa", "Bo"} {
		if !strings.Contains(text, want) {
			t.Errorf("the PDF's text lacks %q:\n%s", want, text)
		}
	}
}
