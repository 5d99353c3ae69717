package rootfs

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// StatusFile is dpkg's database of installed packages, relative to a tree's root.
const StatusFile = "var/lib/dpkg/status"

// maxStatusBytes bounds how much of a status file is read (a full desktop's is a few MB).
const maxStatusBytes = 64 << 20

// Component is a part of the runtime tools rely on, with the version of the Debian
// package that provides it.
type Component struct {
	Name    string // what tools know it as: "Python", "python-docx", …
	Package string // the Debian package that provides it
	Version string // the package's version; "" when it is not installed
}

// components is the runtime docs/spec.md §5b promises, by the Debian package that carries each
// part.
var components = []struct{ name, pkg string }{
	{"Python", "python3"},
	{"WeasyPrint", "weasyprint"},
	{"pandoc", "pandoc"},
	{"python-docx", "python3-docx"},
	{"openpyxl", "python3-openpyxl"},
	{"pandas", "python3-pandas"},
	{"pypdf", "python3-pypdf"},
	{"Jinja2", "python3-jinja2"},
	{"pypandoc", "python3-pypandoc"},
	{"librsvg", "librsvg2-bin"},
	{"PyYAML", "python3-yaml"},
	{"pydantic", "python3-pydantic"},
	{"structlog", "python3-structlog"},
	{"Liberation fonts", "fonts-liberation"},
	{"DejaVu fonts", "fonts-dejavu-core"},
	{"FreeFont fonts", "fonts-freefont-ttf"},
	{"Noto core fonts", "fonts-noto-core"},
}

// Runtime lists the runtime's components with their versions among the installed
// packages (name → version, as Packages returns them), missing ones included.
func Runtime(installed map[string]string) []Component {
	out := make([]Component, 0, len(components))
	for _, c := range components {
		out = append(out, Component{Name: c.name, Package: c.pkg, Version: installed[c.pkg]})
	}
	return out
}

// ReadRuntime reads the runtime of the tree at root ("/" for the host) from its dpkg
// database.
func ReadRuntime(root string) ([]Component, error) {
	f, err := os.Open(filepath.Join(root, StatusFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	installed, err := Packages(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, StatusFile), err)
	}
	return Runtime(installed), nil
}

// Packages reads a dpkg status file and returns the installed packages, name → version.
// Packages that are only known (removed, half-installed, config-files) are left out.
func Packages(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(r, maxStatusBytes))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var name, version, status string
	flush := func() {
		if name != "" && strings.HasSuffix(status, " installed") && out[name] == "" {
			out[name] = version
		}
		name, version, status = "", "", ""
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // a continuation line of a multi-line field
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Package":
			name = v
		case "Version":
			version = v
		case "Status":
			status = v
		}
	}
	flush()
	return out, sc.Err()
}
