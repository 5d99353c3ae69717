package examples_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/examples"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/upload"
)

// TestToolFolders: every example folder is one `skrip tools import` takes, with schemas
// the server accepts under the default upload cap.
func TestToolFolders(t *testing.T) {
	guide, err := examples.Guide()
	if err != nil {
		t.Fatal(err)
	}
	demo, err := examples.Tools()
	if err != nil {
		t.Fatal(err)
	}
	if len(guide) < 12 {
		t.Errorf("%d guide tools, want at least 12", len(guide))
	}
	seen := map[string]string{}
	for _, ex := range append(guide, demo...) {
		if other, ok := seen[ex.Slug]; ok {
			t.Errorf("%s and %s share the slug %s", other, ex.Dir, ex.Slug)
		}
		seen[ex.Slug] = ex.Dir
		if ex.Summary == "" {
			t.Errorf("%s: tool.json has no summary", ex.Dir)
		}
		if _, err := contract.ParseInputSchema(ex.InputSchema, upload.DefaultLimits().MaxFiles); err != nil {
			t.Errorf("%s: input_schema: %v", ex.Dir, err)
		}
		if _, err := contract.ParseSettingsSchema(ex.SettingsSchema); err != nil {
			t.Errorf("%s: settings_schema: %v", ex.Dir, err)
		}
		if !strings.Contains(ex.Source, "def run_tool(input_dir") {
			t.Errorf("%s/script.py defines no run_tool(input_dir, output_dir)", ex.Dir)
		}
	}
}

// TestAuthoringGuide keeps docs/authoring.md honest: each Python block in it appears word
// for word in an example tool's script.py, each tool.json excerpt in a tool.json, every
// guide tool is linked, every relative link leads to a file, and the README links it.
func TestAuthoringGuide(t *testing.T) {
	doc := read(t, "../docs/authoring.md")
	guide, err := examples.Guide()
	if err != nil {
		t.Fatal(err)
	}
	demo, err := examples.Tools()
	if err != nil {
		t.Fatal(err)
	}
	var scripts, metas []string
	for _, ex := range guide {
		scripts = append(scripts, ex.Source)
		metas = append(metas, read(t, filepath.Join("guide", ex.Dir, "tool.json")))
		if !strings.Contains(doc, "(../examples/guide/"+ex.Dir+")") {
			t.Errorf("docs/authoring.md does not link examples/guide/%s", ex.Dir)
		}
	}
	for _, ex := range demo {
		scripts = append(scripts, ex.Source)
		metas = append(metas, read(t, filepath.Join("tools", ex.Dir, "tool.json")))
	}

	blocks := regexp.MustCompile("(?s)```(\\w*)\n(.*?)```").FindAllStringSubmatch(doc, -1)
	var python int
	for _, b := range blocks {
		lang, code := b[1], b[2]
		var in []string
		switch {
		case lang == "python":
			python++
			in = scripts
		case lang == "json" && regexp.MustCompile(`"(slug|input_schema|settings_schema)"`).MatchString(code):
			in = metas
		default:
			continue
		}
		found := false
		for _, s := range in {
			found = found || strings.Contains(s, code)
		}
		if !found {
			t.Errorf("this %s block of docs/authoring.md is in no example tool:\n%s", lang, code)
		}
	}
	if python < 10 {
		t.Errorf("docs/authoring.md has %d Python blocks; it should show the tools' code", python)
	}

	for _, m := range regexp.MustCompile(`\]\((\.\./[^)#]+)\)`).FindAllStringSubmatch(doc, -1) {
		if _, err := os.Stat(filepath.Join("../docs", m[1])); err != nil {
			t.Errorf("docs/authoring.md links %s: %v", m[1], err)
		}
	}
	if !strings.Contains(read(t, "../README.md"), "(docs/authoring.md)") {
		t.Error("README.md does not link docs/authoring.md")
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
