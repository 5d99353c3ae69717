package contract

import (
	"encoding/json"
	"testing"
)

func TestEnv(t *testing.T) {
	m := Manifest{Files: []ManifestFile{FileEntry("a.csv", 8), FileEntry(ActionFileName, 40)}}
	tests := []struct {
		name   string
		m      Manifest
		inputs map[string]any
		action *Action
		want   map[string]string
	}{
		{
			name: "initial run, nothing given",
			want: map[string]string{
				"SKRIPTOTEKET_INPUT_MANIFEST": `{"files":[]}`,
				"SKRIPTOTEKET_INPUTS":         `{}`,
			},
		},
		{
			name:   "initial run with files and inputs",
			m:      Manifest{Files: m.Files[:1]},
			inputs: map[string]any{"n": 3.0, "s": "ö"},
			want: map[string]string{
				"SKRIPTOTEKET_INPUT_MANIFEST": `{"files":[{"name":"a.csv","path":"/work/input/a.csv","bytes":8}]}`,
				"SKRIPTOTEKET_INPUTS":         `{"n":3,"s":"ö"}`,
			},
		},
		{
			name:   "action run",
			m:      m,
			action: &Action{ActionID: "convert", Input: map[string]any{"page_size": "a4"}, State: json.RawMessage(`{"step":"preview"}`)},
			want: map[string]string{
				"SKRIPTOTEKET_INPUT_MANIFEST": `{"files":[{"name":"a.csv","path":"/work/input/a.csv","bytes":8},{"name":"action.json","path":"/work/input/action.json","bytes":40}]}`,
				"SKRIPTOTEKET_INPUTS":         `{}`,
				"SKRIPTOTEKET_ACTION":         `{"action_id":"convert","input":{"page_size":"a4"},"state":{"step":"preview"}}`,
			},
		},
		{
			name:   "action run with nothing in it",
			action: &Action{ActionID: "reset"},
			want: map[string]string{
				"SKRIPTOTEKET_INPUT_MANIFEST": `{"files":[]}`,
				"SKRIPTOTEKET_INPUTS":         `{}`,
				"SKRIPTOTEKET_ACTION":         `{"action_id":"reset","input":{},"state":{}}`,
			},
		},
	}
	fixed := map[string]string{
		"SKRIPTOTEKET_INPUT_DIR":   "/work/input",
		"SKRIPTOTEKET_OUTPUT_DIR":  "/work/output",
		"SKRIPTOTEKET_RESULT_PATH": "/work/result.json",
		"SKRIPTOTEKET_SCRIPT_PATH": "/work/script.py",
		"SKRIPTOTEKET_ENTRYPOINT":  "run_tool",
		"SKRIPTOTEKET_MEMORY_PATH": "/work/memory.json",
		"HOME":                     "/tmp/home",
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Env(tc.m, tc.inputs, tc.action)
			for k, v := range fixed {
				tc.want[k] = v
			}
			if len(got) != len(tc.want) {
				t.Errorf("Env has %d variables, want %d: %v", len(got), len(tc.want), got)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestEnvPanicsOnUnencodableInputs(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Env accepted inputs that are not JSON")
		}
	}()
	Env(Manifest{}, map[string]any{"c": make(chan int)}, nil)
}

// TestSummaries: a run that broke the contract fails in the original hub's words, then
// says what broke.
func TestSummaries(t *testing.T) {
	if got := NoResultSummary(3); got != "Execution failed (runner contract violation): the tool wrote no result.json (exit code 3); see stderr." {
		t.Errorf("NoResultSummary: %q", got)
	}
	_, err := ParseResult([]byte(`{"contract_version": 1, "status": "succeeded"}`), DefaultPolicy())
	if got := ViolationSummary(err); got != "Execution failed (runner contract violation): contract_version is 1, want 2" {
		t.Errorf("ViolationSummary: %q", got)
	}
}
