// Package examples holds skrip's own example tools, embedded in the binary: the demo set
// in tools/ (with demo files; `skrip serve --demo` loads it into a fresh server) and the
// author guide's tools in guide/ (docs/authoring.md; examples_test.go runs every one).
//
// Each tool is a directory in the format `skrip tools import DIR` reads: tool.json
// ({slug, title, summary, usage_instructions, input_schema, settings_schema}, and
// optionally description) and script.py, with optional demo files in demo/.
package examples

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
)

//go:embed tools guide
var files embed.FS

// Tool is one example tool.
type Tool struct {
	Dir               string            `json:"-"`
	Slug              string            `json:"slug"`
	Title             string            `json:"title"`
	Description       string            `json:"description,omitempty"`
	Summary           string            `json:"summary"`
	UsageInstructions string            `json:"usage_instructions"`
	InputSchema       json.RawMessage   `json:"input_schema,omitempty"`    // nil: the tool has none
	SettingsSchema    json.RawMessage   `json:"settings_schema,omitempty"` // nil: the tool has none
	Source            string            `json:"-"`
	Demo              map[string][]byte `json:"-"` // demo file name -> content
}

// Tools returns the demo tools, by slug.
func Tools() ([]Tool, error) { return load("tools") }

// Guide returns the author guide's tools, by slug.
func Guide() ([]Tool, error) { return load("guide") }

func load(root string) ([]Tool, error) {
	dirs, err := fs.ReadDir(files, root)
	if err != nil {
		return nil, err
	}
	var out []Tool
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		t, err := Load(files, path.Join(root, d.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}

// Load reads the tool directory dir of fsys: tool.json, script.py and demo/.
func Load(fsys fs.FS, dir string) (Tool, error) {
	meta, err := fs.ReadFile(fsys, path.Join(dir, "tool.json"))
	if err != nil {
		return Tool{}, err
	}
	t := Tool{Dir: path.Base(dir), Demo: map[string][]byte{}}
	dec := json.NewDecoder(bytes.NewReader(meta))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Tool{}, fmt.Errorf("%s/tool.json: %w", dir, err)
	}
	if t.Slug == "" || t.Title == "" {
		return Tool{}, fmt.Errorf("%s/tool.json: slug and title are required", dir)
	}
	t.InputSchema = nilIfNull(t.InputSchema)
	t.SettingsSchema = nilIfNull(t.SettingsSchema)
	src, err := fs.ReadFile(fsys, path.Join(dir, "script.py"))
	if err != nil {
		return Tool{}, err
	}
	t.Source = string(src)
	demo, err := fs.ReadDir(fsys, path.Join(dir, "demo"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Tool{}, err
	}
	for _, f := range demo {
		b, err := fs.ReadFile(fsys, path.Join(dir, "demo", f.Name()))
		if err != nil {
			return Tool{}, err
		}
		t.Demo[f.Name()] = b
	}
	return t, nil
}

func nilIfNull(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return raw
}
