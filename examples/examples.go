// Package examples holds skrip's own example tools with their demo files, embedded in
// the binary; `skrip serve --demo` loads them into a fresh server.
package examples

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
)

//go:embed tools
var files embed.FS

// Tool is one example tool.
type Tool struct {
	Dir         string            `json:"-"`
	Slug        string            `json:"slug"`
	Title       string            `json:"title"`
	Description string            `json:"description"`
	Source      string            `json:"-"`
	Demo        map[string][]byte `json:"-"` // demo file name -> content
}

// Tools returns every example tool, by slug.
func Tools() ([]Tool, error) {
	dirs, err := fs.ReadDir(files, "tools")
	if err != nil {
		return nil, err
	}
	var out []Tool
	for _, d := range dirs {
		dir := path.Join("tools", d.Name())
		meta, err := files.ReadFile(path.Join(dir, "tool.json"))
		if err != nil {
			return nil, err
		}
		t := Tool{Dir: d.Name(), Demo: map[string][]byte{}}
		if err := json.Unmarshal(meta, &t); err != nil {
			return nil, fmt.Errorf("%s/tool.json: %w", dir, err)
		}
		src, err := files.ReadFile(path.Join(dir, "tool.py"))
		if err != nil {
			return nil, err
		}
		t.Source = string(src)
		demo, _ := fs.ReadDir(files, path.Join(dir, "demo"))
		for _, f := range demo {
			b, err := files.ReadFile(path.Join(dir, "demo", f.Name()))
			if err != nil {
				return nil, err
			}
			t.Demo[f.Name()] = b
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}
