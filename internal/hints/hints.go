// Package hints is what the web editor offers while an author types (docs/authoring.md
// "Checks as you type"): the toolkit functions with their help text, taken from
// docs/authoring.md at build time (toolkit.json, `go generate`), and the runtime's
// importable modules, which build-rootfs.sh lists into the runner's root filesystem.
package hints

import (
	"bufio"
	"bytes"
	_ "embed" // toolkit.json
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

//go:generate go run ./gen ../../docs/authoring.md toolkit.json

// Function is one function (or class) of a helper module, with its help text.
type Function struct {
	Module    string `json:"module"`    // "skriptoteket_toolkit"
	Name      string `json:"name"`      // "read_inputs"
	Signature string `json:"signature"` // "read_inputs()"
	Help      string `json:"help"`      // what the guide says it returns or does
}

//go:embed toolkit.json
var toolkitJSON []byte

// Modules are the helper modules whose functions the guide describes, in its order.
var Modules = []string{"skriptoteket_toolkit", "tool_errors", "pdf_helper", "skrip_toolkit"}

// Toolkit returns the helper modules' functions with their help, as generated from the
// guide.
func Toolkit() []Function {
	var out []Function
	if err := json.Unmarshal(toolkitJSON, &out); err != nil {
		panic("hints: toolkit.json: " + err.Error())
	}
	return out
}

// ModulesFile is where build-rootfs.sh lists the runtime's importable top-level modules
// (a JSON array of names), relative to the tree's root.
const ModulesFile = "usr/share/skrip/modules.json"

// maxModulesBytes bounds how much of the list is read (Debian's Python with the runner's
// packages lists about 400 names, 6 kB).
const maxModulesBytes = 1 << 20

var moduleName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// RuntimeModules returns the importable top-level modules of the runtime whose root is
// root (the runner's root filesystem), with the helper modules among them, sorted. When
// root is "" (the host's /usr) or its tree has no list (built before the list was), it
// returns the helper modules only, and false.
func RuntimeModules(root string) ([]string, bool) {
	names := slices.Clone(Modules)
	found := false
	if root != "" {
		if f, err := os.Open(filepath.Join(root, ModulesFile)); err == nil {
			var list []string
			if json.NewDecoder(io.LimitReader(f, maxModulesBytes)).Decode(&list) == nil {
				found = true
				for _, n := range list {
					if moduleName.MatchString(n) {
						names = append(names, n)
					}
				}
			}
			f.Close()
		}
	}
	slices.Sort(names)
	return slices.Compact(names), found
}

// ParseGuide reads the helper modules' functions from docs/authoring.md: the "### `module`"
// sections of "## 3. The helper modules". A section's table rows (| `name()` | help |) are
// its functions; a section without a table gives the paragraph that opens with
// `signature`: help.
func ParseGuide(md []byte) []Function {
	var out []Function
	module := ""
	inHelpers := false
	row := regexp.MustCompile("^\\| `([A-Za-z_][A-Za-z0-9_]*)(\\([^`]*\\))?` \\| (.+) \\|$")
	para := regexp.MustCompile("^`([A-Za-z_][A-Za-z0-9_]*)(\\([^`]*\\)[^`]*)`:? (.+)$")
	sc := bufio.NewScanner(bytes.NewReader(md))
	var paragraph []string
	flush := func() {
		if module == "" || len(paragraph) == 0 {
			paragraph = nil
			return
		}
		text := strings.Join(paragraph, " ")
		paragraph = nil
		if m := para.FindStringSubmatch(text); m != nil && !has(out, module, m[1]) {
			out = append(out, Function{Module: module, Name: m[1], Signature: m[1] + m[2], Help: plain(m[3])})
		}
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			flush()
			inHelpers = strings.Contains(line, "helper modules")
			module = ""
			continue
		case !inHelpers:
			continue
		case strings.HasPrefix(line, "### "):
			flush()
			module = strings.Trim(strings.TrimPrefix(line, "### "), "` ")
			if !slices.Contains(Modules, module) {
				module = ""
			}
			continue
		case module == "":
			continue
		case strings.HasPrefix(line, "|"):
			flush()
			if m := row.FindStringSubmatch(line); m != nil && !has(out, module, m[1]) {
				out = append(out, Function{Module: module, Name: m[1], Signature: m[1] + m[2], Help: plain(m[3])})
			}
		case line == "" || strings.HasPrefix(line, "```") || strings.HasPrefix(line, "["):
			flush()
		default:
			paragraph = append(paragraph, line)
		}
	}
	flush()
	return out
}

func has(fs []Function, module, name string) bool {
	return slices.ContainsFunc(fs, func(f Function) bool { return f.Module == module && f.Name == name })
}

// plain drops the guide's Markdown from a help text: code marks, links' targets, bold.
func plain(s string) string {
	s = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(s, "$1")
	s = strings.NewReplacer("`", "", "**", "").Replace(s)
	return strings.TrimSpace(s)
}

// Encode writes fs as toolkit.json holds them: indented, with < and > as they are.
func Encode(fs []Function) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(fs); err != nil {
		panic(err)
	}
	return b.Bytes()
}
