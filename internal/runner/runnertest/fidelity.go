package runnertest

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
)

// The cases where a tool written for the original hub must see and give what it sees and
// gives there (issue 30): each one was seen to differ once.

// runFidelity runs the fidelity cases; Run calls it.
func runFidelity(t *testing.T, r runner.Runner) {
	t.Run("action.json left out of the manifest", func(t *testing.T) { testActionNotInManifest(t, r) })
	t.Run("outputs cut to size", func(t *testing.T) { testOutputsCut(t, r) })
	t.Run("return values", func(t *testing.T) { testReturnValues(t, r) })
	t.Run("vega_lite spec not an object", func(t *testing.T) { testVegaSpec(t, r) })
	t.Run("result.json in the original's format", func(t *testing.T) { testOriginalResult(t, r) })
	t.Run("no result", func(t *testing.T) { testNoResult(t, r) })
	t.Run("memory.json not UTF-8", func(t *testing.T) { testMemoryNotUTF8(t, r) })
	t.Run("save_as_pdf ./x.pdf", func(t *testing.T) { testSaveAsPDFDot(t, r) })
}

// testActionNotInManifest: on an action run action.json is in /work/input, but neither
// the manifest nor list_input_files() lists it; the action is in SKRIPTOTEKET_ACTION.
func testActionNotInManifest(t *testing.T, r runner.Runner) {
	o := ExecJob(t, r, Job{Script: `
import json, os, skriptoteket_toolkit as st, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "json", "value": {
        "dir": sorted(os.listdir(input_dir)),
        "manifest": [f["name"] for f in json.loads(os.environ["SKRIPTOTEKET_INPUT_MANIFEST"])["files"]],
        "files": [f["name"] for f in st.list_input_files()],
        "skrip": [f["name"] for f in tk.manifest()["files"]],
        "action": st.get_action_parts()[0]}}]}
`, Files: map[string]string{"elever.csv": "namn\n"}, Action: &contract.Action{ActionID: "next"}, Limits: Limits()})
	v := jsonValue(t, o)
	if got := fmt.Sprintf("%v %v %v %v %v", v["dir"], v["manifest"], v["files"], v["skrip"], v["action"]); got != "[action.json elever.csv] [elever.csv] [elever.csv] [elever.csv] next" {
		t.Errorf("input dir, manifest, list_input_files(), manifest(), action: %s", got)
	}
}

// testOutputsCut: markdown, html and tables over their limits are cut to size with the
// original's notices (in Swedish), and a tool's 50 outputs all stay beside them.
func testOutputsCut(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
def run_tool(input_dir, output_dir):
    outs = [{"kind": "markdown", "markdown": "å" * 40000},
            {"kind": "html_sandboxed", "html": "<p>" + "x" * 100000},
            {"kind": "table", "columns": [{"key": "n", "label": "N"}], "rows": [{"n": i} for i in range(800)]}]
    outs += [{"kind": "notice", "level": "info", "message": str(i)} for i in range(47)]
    return {"outputs": outs, "state": {"a": 1, "b": "x" * 70000, "c": 2}}
`, nil, nil, Limits())
	p := contract.DefaultPolicy()
	outs := o.Parsed.Outputs
	if o.Parsed.Status != contract.StatusSucceeded || len(outs) != 54 {
		t.Fatalf("status %q (%s), %d outputs", o.Parsed.Status, o.Parsed.ErrorSummary, len(outs))
	}
	if len(outs[0].Markdown) != p.MaxMarkdownBytes || len(outs[1].HTML) != p.MaxHTMLBytes || len(outs[2].Rows) != p.MaxTableRows || outs[49].Message != "46" {
		t.Errorf("markdown %d bytes, html %d bytes, table %d rows, output 50 %+v", len(outs[0].Markdown), len(outs[1].HTML), len(outs[2].Rows), outs[49])
	}
	var notices []string
	for _, n := range outs[50:] {
		notices = append(notices, n.Message)
	}
	want := []string{
		"Systemmeddelande: 1 markdown-utdata kortades till 65536 byte.",
		"Systemmeddelande: 1 html_sandboxed-utdata kortades till 98304 byte.",
		"Systemmeddelande: 1 tabeller kortades till plattformens gränser för rader, kolumner och celler.",
		"Systemmeddelande: State kortades för att rymmas inom 65536 byte (2 nycklar togs bort).",
	}
	if strings.Join(notices, "\n") != strings.Join(want, "\n") {
		t.Errorf("notices:\n%s\nwant:\n%s", strings.Join(notices, "\n"), strings.Join(want, "\n"))
	}
	if string(o.Parsed.State) != `{"a":1}` {
		t.Errorf("state %.80s, want the keys before the one that does not fit", o.Parsed.State)
	}
}

// testReturnValues: what run_tool returns gives what it gives in the original.
func testReturnValues(t *testing.T, r runner.Runner) {
	o := Exec(t, r, "def run_tool(i, o):\n    pass\n", nil, nil, Limits())
	if o.Parsed.Status != contract.StatusFailed || o.Parsed.ErrorSummary != "Tool execution failed (TypeError)." {
		t.Errorf("return None: %q, %q", o.Parsed.Status, o.Parsed.ErrorSummary)
	}
	o = Exec(t, r, "def run_tool(i, o):\n    return ''\n", nil, nil, Limits())
	if o.Parsed.Status != contract.StatusSucceeded || len(o.Parsed.Outputs) != 0 {
		t.Errorf("return '': %q, outputs %+v", o.Parsed.Status, o.Parsed.Outputs)
	}
	o = Exec(t, r, "def run_tool(i, o):\n    return {'state': {'valda': {'Bo', 'Åsa', 'Al'}, 'n': frozenset({10, 2})}}\n", nil, nil, Limits())
	if string(o.Parsed.State) != `{"n":[10,2],"valda":["Al","Bo","Åsa"]}` {
		t.Errorf("sets in state: %s", o.Parsed.State)
	}
	o = Exec(t, r, "import os\ndef run_tool(i, o):\n    open(os.path.join(o, 'halv.csv'), 'w').write('a')\n    raise ValueError('x')\n", nil, nil, Limits())
	if o.Parsed.Status != contract.StatusFailed || len(o.Parsed.Artifacts) != 0 {
		t.Errorf("a failed run: %q, artifacts %v", o.Parsed.Status, o.Parsed.Artifacts)
	}
}

// testVegaSpec: a vega_lite output whose spec is not an object fails the run, as the
// original's schema refuses the whole result for it.
func testVegaSpec(t *testing.T, r runner.Runner) {
	o := ExecJob(t, r, Job{Script: "def run_tool(i, o):\n    return {'outputs': [{'kind': 'vega_lite', 'spec': 'bar'}]}\n", Limits: Limits(), Unparsed: true})
	_, err := contract.ParseResult(o.Result.ResultJSON, contract.DefaultPolicy())
	if !errors.Is(err, contract.ErrViolation) {
		t.Fatalf("ParseResult: %v", err)
	}
	if got := contract.ViolationSummary(err); got != "Execution failed (runner contract violation): output 1 (vega_lite): its spec is a JSON string, not an object" {
		t.Errorf("summary %q", got)
	}
}

// testOriginalResult: a tool that writes result.json itself, as the original's runner
// writes it (artifacts as {"path", "bytes"}), and exits before the shim can.
func testOriginalResult(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
import json, os
def run_tool(input_dir, output_dir):
    open(os.path.join(output_dir, "r.txt"), "w").write("r")
    with open(os.environ["SKRIPTOTEKET_RESULT_PATH"], "w") as f:
        json.dump({"contract_version": 2, "status": "succeeded", "error_summary": None,
                   "outputs": [{"kind": "markdown", "markdown": "klart"}], "next_actions": [], "state": None,
                   "artifacts": [{"path": "output/r.txt", "bytes": 1}]}, f)
    os._exit(0)
`, nil, nil, Limits())
	if o.Parsed.Status != contract.StatusSucceeded || fmt.Sprint(o.Parsed.Artifacts) != "[output/r.txt]" ||
		len(o.Parsed.Outputs) != 1 || o.Parsed.Outputs[0].Markdown != "klart" || len(o.Parsed.Notices) != 0 {
		t.Errorf("status %q, artifacts %v, outputs %+v", o.Parsed.Status, o.Parsed.Artifacts, o.Parsed.Outputs)
	}
}

// testNoResult: a tool that exits without a result fails in the original's words.
func testNoResult(t *testing.T, r runner.Runner) {
	o := ExecJob(t, r, Job{Script: "import os\ndef run_tool(i, o):\n    os._exit(3)\n", Limits: Limits(), Unparsed: true})
	var summary string
	if o.Result.ResultJSON == nil {
		summary = contract.NoResultSummary(o.Result.ExitCode)
	} else if _, err := contract.ParseResult(o.Result.ResultJSON, contract.DefaultPolicy()); err != nil {
		summary = contract.ViolationSummary(err)
	}
	if !strings.HasPrefix(summary, contract.ViolationPrefix+": ") {
		t.Errorf("summary %q (result.json %q, exit %d)", summary, o.Result.ResultJSON, o.Result.ExitCode)
	}
}

// testMemoryNotUTF8: read_memory() raises on a memory.json that is not UTF-8, as the
// original's does, so the run fails as it does there.
func testMemoryNotUTF8(t *testing.T, r runner.Runner) {
	o := ExecJob(t, r, Job{Script: "import skriptoteket_toolkit as st\ndef run_tool(i, o):\n    return str(st.read_settings())\n",
		Memory: []byte("{\"settings\": {\"skola\": \"Byskolan \xe5\"}}"), Limits: Limits()})
	if o.Parsed.Status != contract.StatusFailed || o.Parsed.ErrorSummary != "Tool execution failed (UnicodeDecodeError)." {
		t.Errorf("status %q, %q; stderr:\n%s", o.Parsed.Status, o.Parsed.ErrorSummary, o.Result.Stderr)
	}
}

// testSaveAsPDFDot: save_as_pdf("./x.pdf") writes x.pdf, as the original's does.
func testSaveAsPDFDot(t *testing.T, r runner.Runner) {
	requirePDF(t, r)
	o := ExecJob(t, r, Job{Script: `
from pdf_helper import save_as_pdf
def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "json", "value": {"path": save_as_pdf("<p>x</p>", output_dir, "./x.pdf")}}]}
`, Limits: pdfLimits(), KeepOutput: true})
	if v := jsonValue(t, o); v["path"] != "/work/output/x.pdf" || fmt.Sprint(o.Parsed.Artifacts) != "[output/x.pdf]" {
		t.Fatalf("save_as_pdf returned %v, artifacts %v", v["path"], o.Parsed.Artifacts)
	}
	pdfText(t, filepath.Join(o.Output, "x.pdf"))
}
