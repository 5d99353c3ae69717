// Package contract owns the runner contract of docs/spec.md §5 and §6: the environment and files a
// tool sees inside the sandbox (manifest, action.json), the result.json it leaves, and the
// size policy and input checks skrip applies to both.
package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Version is the contract_version a result.json must carry.
const Version = 2

// ErrViolation is wrapped by every error of ParseResult: the run broke the contract and
// fails with ViolationSummary.
var ErrViolation = errors.New("runner contract violation")

// ViolationPrefix begins the error summary of a run that broke the contract: the
// original hub's words ("Execution failed (runner contract violation)."), then what broke.
const ViolationPrefix = "Execution failed (runner contract violation)"

// NoResultSummary is the error summary of a run whose tool wrote no result.json.
func NoResultSummary(exitCode int) string {
	return fmt.Sprintf("%s: the tool wrote no result.json (exit code %d); see stderr.", ViolationPrefix, exitCode)
}

// ViolationSummary is the error summary of a run whose result.json broke the contract
// (err, from ParseResult, wraps ErrViolation).
func ViolationSummary(err error) string {
	return ViolationPrefix + ": " + strings.TrimPrefix(err.Error(), ErrViolation.Error()+": ")
}

// Paths and names inside the sandbox (docs/spec.md §5).
const (
	WorkDir        = "/work"
	InputDir       = "/work/input"
	OutputDir      = "/work/output"
	ResultPath     = "/work/result.json"
	ScriptPath     = "/work/script.py"
	Entrypoint     = "run_tool"
	Home           = "/tmp/home"
	ActionFileName = "action.json" // in InputDir on action runs
	MemoryPath     = "/work/memory.json"
)

// ManifestFile is one file of InputDir as the manifest lists it.
type ManifestFile struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// Manifest is SKRIPTOTEKET_INPUT_MANIFEST: every file in InputDir but action.json, as in
// the original hub, which passes the action only in SKRIPTOTEKET_ACTION: a tool that
// loops over its input files never picks the action up.
type Manifest struct {
	Files []ManifestFile `json:"files"`
}

// ListInputs returns the manifest of the input directory dir: its regular files, sorted
// by name, without action.json (in any case: the name is reserved).
func ListInputs(dir string) (Manifest, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{Files: []ManifestFile{}}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || strings.EqualFold(e.Name(), ActionFileName) {
			continue
		}
		m.Files = append(m.Files, FileEntry(e.Name(), info.Size()))
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Name < m.Files[j].Name })
	return m, nil
}

// FileEntry returns the manifest entry of the input file name, with its sandbox path.
func FileEntry(name string, bytes int64) ManifestFile {
	return ManifestFile{Name: name, Path: InputDir + "/" + name, Bytes: bytes}
}

// Action is action.json (and SKRIPTOTEKET_ACTION) on an action run. State is the
// server's copy of the session state.
type Action struct {
	ActionID string          `json:"action_id"`
	Input    map[string]any  `json:"input"`
	State    json.RawMessage `json:"state"`
}

// MarshalJSON writes a nil Input as {} and an empty State as {}, so a tool can always
// index action()["input"] and action()["state"].
func (a Action) MarshalJSON() ([]byte, error) {
	type plain Action
	if a.Input == nil {
		a.Input = map[string]any{}
	}
	if len(a.State) == 0 {
		a.State = json.RawMessage("{}")
	}
	return json.Marshal(plain(a))
}

// Env returns the SKRIPTOTEKET_* variables and HOME for a run with the input files of m,
// the initial form values inputs (SKRIPTOTEKET_INPUTS, "{}" when nil) and, on an action
// run, action (SKRIPTOTEKET_ACTION, absent when action is nil). Values that came from
// JSON always encode; Env panics on values that cannot (a programming error).
func Env(m Manifest, inputs map[string]any, action *Action) map[string]string {
	if m.Files == nil {
		m.Files = []ManifestFile{}
	}
	if inputs == nil {
		inputs = map[string]any{}
	}
	env := map[string]string{
		"SKRIPTOTEKET_INPUT_DIR":      InputDir,
		"SKRIPTOTEKET_INPUT_MANIFEST": mustJSON("manifest", m),
		"SKRIPTOTEKET_OUTPUT_DIR":     OutputDir,
		"SKRIPTOTEKET_RESULT_PATH":    ResultPath,
		"SKRIPTOTEKET_SCRIPT_PATH":    ScriptPath,
		"SKRIPTOTEKET_ENTRYPOINT":     Entrypoint,
		"SKRIPTOTEKET_INPUTS":         mustJSON("inputs", inputs),
		"SKRIPTOTEKET_MEMORY_PATH":    MemoryPath,
		"HOME":                        Home,
	}
	if action != nil {
		env["SKRIPTOTEKET_ACTION"] = mustJSON("action", *action)
	}
	return env
}

func mustJSON(what string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("contract.Env: %s cannot be encoded as JSON: %v", what, err))
	}
	return string(b)
}
