package runner

import (
	"bufio"
	"bytes"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Warm starts (docs/runner-contract.md "Warm starts"): a runner parks sandboxes ahead of
// runs with Python started and the modules recent tools import already imported
// (shim/skrip_warm.py). Each serves one run and dies; a run only gets one whose modules
// its own script imports, so it holds no memory the run would not have held anyway.

// Preloadable are the modules a warm interpreter may import ahead of a run: the
// runtime's heavy packages and the toolkits, none of which reads the environment, the
// working directory or any file of a run when it is imported. A module a script imports
// that is not listed is imported by the tool, as in a cold start.
var Preloadable = []string{
	// The toolkits the shim's directory holds.
	"skriptoteket_toolkit", "pdf_helper", "skrip_toolkit",
	// The runtime's heavy packages (internal/runner/rootfs).
	"pandas", "numpy", "weasyprint", "docx", "openpyxl", "pypdf", "jinja2", "pypandoc",
	"yaml", "pydantic", "structlog", "markdown", "PIL", "lxml", "bs4", "matplotlib",
	// The standard library's slower imports.
	"json", "csv", "datetime", "decimal", "statistics", "random", "zipfile", "html",
	"dataclasses", "typing", "pathlib", "textwrap", "difflib", "unicodedata", "tempfile",
}

// importLine matches an import statement's start: "import a, b as c" or "from a.b import".
var importLine = regexp.MustCompile(`(?m)^[ \t]*(?:import[ \t]+([^\n#;]+)|from[ \t]+([A-Za-z_][\w.]*)[ \t]+import)`)

// Imports returns the preloadable top-level modules that script imports anywhere
// (inside functions too), sorted: the modules a warm interpreter for it preloads.
func Imports(script []byte) []string {
	var found []string
	add := func(name string) {
		name, _, _ = strings.Cut(strings.TrimSpace(name), ".")
		if slices.Contains(Preloadable, name) && !slices.Contains(found, name) {
			found = append(found, name)
		}
	}
	for _, m := range importLine.FindAllSubmatch(script, -1) {
		if len(m[2]) > 0 {
			add(string(m[2]))
			continue
		}
		for _, part := range strings.Split(string(m[1]), ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), " ")
			add(name)
		}
	}
	slices.Sort(found)
	return found
}

// Covers reports whether a warm interpreter that preloaded have may serve a run whose
// script imports want: everything it imported, the run would have imported too.
func Covers(want, have []string) bool {
	for _, m := range have {
		if !slices.Contains(want, m) {
			return false
		}
	}
	return true
}

// WarmStats is what a runner's parked interpreters hold now, for metrics and doctor.
type WarmStats struct {
	Parked int   // interpreters parked and ready
	Coming int   // interpreters being started or importing their modules
	Bytes  int64 // the memory they hold (their cgroups' usage)
	Budget int64 // what they may hold (SKRIP_RUNNER_WARM_MEMORY)
	Warm   int64 // runs served by a parked interpreter since start
	Cold   int64 // runs that found none and started Python themselves
}

// Warmer is a Runner that parks interpreters.
type Warmer interface {
	WarmStats() WarmStats
	// Prime parks interpreters, in the background, for runs under l of the scripts
	// given (the tools run lately, at start), as their runs would have left.
	Prime(scripts []string, l Limits)
}

// MemoryAvailable is MemAvailable of /proc/meminfo: a runner parks no interpreter while
// it is below what they would hold twice over (memory pressure).
func MemoryAvailable() (int64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// WarmSets is how many module sets a runner remembers (when each was last wanted, what
// an interpreter of it held): one entry per distinct set a run imported would otherwise
// grow without end.
const WarmSets = 256

// ForgetOld drops from wanted and sizes the sets wanted longest ago, beyond the WarmSets
// wanted last, except those inUse (parked or being parked).
func ForgetOld(wanted map[string]time.Time, sizes map[string]int64, inUse func(key string) bool) {
	if len(wanted) <= WarmSets {
		return
	}
	keys := make([]string, 0, len(wanted))
	for k := range wanted {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return wanted[a].Compare(wanted[b]) })
	for _, k := range keys[:len(keys)-WarmSets] {
		if !inUse(k) {
			delete(wanted, k)
			delete(sizes, k)
		}
	}
}
