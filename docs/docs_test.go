// Package docs holds the tests that keep the README and docs/ true to the repository:
// docs/architecture.md names every Go package of the module, every relative link leads to
// a file (and heading) inside the repository, and the README opens with its two commands.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's directory.
const root = ".."

// TestArchitectureNamesEveryPackage: each Go package of the module is the first cell of a
// row of docs/architecture.md, by its directory (`internal/blob/fsblob`), and every such
// row names a package that exists.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc := read(t, "architecture.md")
	listed := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	for _, m := range row.FindAllStringSubmatch(stripCode(doc), -1) {
		listed[m[1]] = true
	}
	pkgs := packages(t)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under %s: %v", len(pkgs), root, pkgs)
	}
	for _, p := range pkgs {
		if !listed[p] {
			t.Errorf("docs/architecture.md does not list the package %s: add a row | `%s` | what it owns |", p, p)
		}
		delete(listed, p)
	}
	for p := range listed {
		t.Errorf("docs/architecture.md lists %s, which is not a package of the module", p)
	}
}

// packages returns the directory, relative to the repository, of every Go package of the
// module: each directory holding a .go file, but testdata and hidden ones.
func packages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestLinksResolve: every relative link and image of the README and of the pages under
// docs/ leads to a file inside the repository, and a #fragment to a heading of the page it
// names. Documents outside the repository (../shared) are not to be cited.
func TestLinksResolve(t *testing.T) {
	pages := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		text := stripCode(read(t, page))
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				t.Fatal(err)
			}
			if abs != repo && !strings.HasPrefix(abs, repo+string(filepath.Separator)) {
				t.Errorf("%s links %s, outside the repository: copy what it cites into docs/", page, target)
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links %s: %v", page, target, err)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !slices.Contains(anchors(read(t, path)), frag) {
				t.Errorf("%s links %s: %s has no heading #%s", page, target, path, frag)
			}
		}
	}
}

// anchors returns the fragment of each heading of a markdown page as GitHub makes it:
// lower case, punctuation dropped, spaces turned to hyphens, and -1, -2 … after repeats.
func anchors(doc string) []string {
	var out []string
	count := map[string]int{}
	for _, line := range strings.Split(stripCode(doc), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		slug := b.String()
		n := count[slug]
		count[slug]++
		if n > 0 {
			slug += "-" + strconv.Itoa(n)
		}
		out = append(out, slug)
	}
	return out
}

// TestReadmeOpensWithTheCommands: the README's first code block, before any section, holds
// the two commands CI and the tests rely on, as they are: the server with the example
// tools, and every test.
func TestReadmeOpensWithTheCommands(t *testing.T) {
	readme := read(t, filepath.Join(root, "README.md"))
	fence := regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	m := fence.FindStringSubmatchIndex(readme)
	if m == nil {
		t.Fatal("README.md has no code block")
	}
	if h := strings.Index(readme, "\n## "); h >= 0 && h < m[0] {
		t.Error("README.md's first code block comes after a section heading: the two commands belong at the top")
	}
	var commands []string
	for _, line := range strings.Split(readme[m[2]:m[3]], "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			commands = append(commands, cmd)
		}
	}
	want := []string{"bash scripts/deps.sh && go run ./cmd/skrip serve --demo", "bash scripts/test.sh"}
	if !slices.Equal(commands, want) {
		t.Errorf("README.md's first code block runs\n%q\nwant\n%q", commands, want)
	}
}

// stripCode blanks fenced code blocks, so that a # comment is not a heading and a [x](y)
// in an example is not a link.
func stripCode(doc string) string {
	return regexp.MustCompile("(?s)```.*?```").ReplaceAllString(doc, "")
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
