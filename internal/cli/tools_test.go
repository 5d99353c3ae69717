package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// binary runs the real skrip binary against a server as a token's holder.
type binary struct {
	bin        string
	url, token string
}

func (b binary) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(b.bin, args...)
	cmd.Env = append(os.Environ(), "SKRIP_SERVER="+b.url, "SKRIP_TOKEN="+b.token)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

// ok runs args and fails the test unless they succeed; it returns stdout.
func (b binary) ok(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := b.run(t, args...)
	if code != 0 {
		t.Fatalf("skrip %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// fails runs args and fails the test unless they exit non-zero with want on stderr.
func (b binary) fails(t *testing.T, want string, args ...string) {
	t.Helper()
	code, out, errOut := b.run(t, args...)
	if code == 0 || !strings.Contains(errOut, want) {
		t.Fatalf("skrip %s: exit %d, stderr %q; want a failure saying %q\n%s", strings.Join(args, " "), code, errOut, want, out)
	}
}

// writeFiles writes name -> content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dirFiles reads every file under dir, by relative path.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// groupTool prints the inputs and the settings it got.
const groupTool = `import json, os
def run_tool(input_dir, output_dir):
    print("INPUTS=" + os.environ["SKRIPTOTEKET_INPUTS"])
    return "<p>Grupper & <b>namn</b></p>"
`

const groupToolJSON = `{
  "slug": "grupper",
  "title": "Gruppindelning",
  "summary": "Delar in en klass i grupper.",
  "usage_instructions": "Ladda upp **klasslistan** (<em>.csv</em>) & välj storlek.\n\n- ett\n- två\n",
  "input_schema": [
    {"name": "klasslista", "label": "Klasslista", "kind": "file", "accept": [".csv", ".txt"], "min": 1, "max": 1},
    {"name": "namn", "label": "Namn på gruppen", "kind": "string"},
    {"name": "storlek", "label": "Elever per grupp", "kind": "integer"},
    {"name": "metod", "label": "Metod", "kind": "enum", "options": [{"value": "alfabetisk", "label": "Bokstavsordning"}, {"value": "slump", "label": "Slumpvis"}]}
  ],
  "settings_schema": [
    {"name": "skola", "label": "Skolans namn", "kind": "string"},
    {"name": "per_sida", "label": "Per sida", "kind": "integer"},
    {"name": "pdf", "label": "Gör en PDF", "kind": "boolean"},
    {"name": "taggar", "label": "Taggar", "kind": "multi_enum", "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]}
  ]
}
`

func TestToolsCLI(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	envA := apptest.New(t, apptest.Backends[0])
	_, anna := envA.User(t, "anna", "author")
	_, ulf := envA.User(t, "ulf", "user")
	a := binary{bin, envA.URL, anna.Token}
	u := binary{bin, envA.URL, ulf.Token}
	dir := t.TempDir()

	t.Run("import, run, export, import elsewhere, export again: the same tool", func(t *testing.T) {
		src := filepath.Join(dir, "grupper")
		writeFiles(t, src, map[string]string{"tool.json": groupToolJSON, "script.py": groupTool, "demo/klass.csv": "Ada\nBo\n"})
		if out := a.ok(t, "tools", "import", src, "--publish"); !strings.Contains(out, "created grupper") || !strings.Contains(out, "published") {
			t.Fatalf("import: %q", out)
		}
		// `skrip run` reads --input as the schema wants: namn is text even when it looks
		// like a number; storlek is coerced by the server.
		csv := filepath.Join(dir, "klass.csv")
		writeFiles(t, dir, map[string]string{"klass.csv": "Ada\nBo\n"})
		out := u.ok(t, "run", "grupper", csv, "--input", "namn=42", "--input", "storlek=3", "--input", "metod=slump", "--json")
		if !strings.Contains(out, `INPUTS={\"metod\":\"slump\",\"namn\":\"42\",\"storlek\":3}`) {
			t.Fatalf("run: %s", out)
		}
		u.fails(t, `input "metod" (enum) must be one of "alfabetisk", "slump"; got "random"`, "run", "grupper", csv, "--input", "metod=random")
		// ulf's run kept klass.csv, so a run without files uses it; anna has none kept.
		if out := u.ok(t, "run", "grupper", "--input", "namn=Ny", "--json"); !strings.Contains(out, `\"namn\":\"Ny\"`) {
			t.Fatalf("run on the kept file: %s", out)
		}
		a.fails(t, `file field "klasslista" needs at least 1 file; none was sent`, "run", "grupper")
		if out := u.ok(t, "tools", "show", "grupper"); !strings.Contains(out, "Delar in en klass i grupper.") ||
			!strings.Contains(out, "klasslista  files: 1 to 1 of .csv .txt") || !strings.Contains(out, "metod       enum: alfabetisk, slump") ||
			!strings.Contains(out, "skola") {
			t.Fatalf("show: %s", out)
		}

		out1 := filepath.Join(dir, "out1")
		a.ok(t, "tools", "export", "grupper", "-o", out1)
		files := dirFiles(t, out1)
		if files["script.py"] != groupTool || !strings.Contains(files["tool.json"], `"usage_instructions": "Ladda upp **klasslistan** (<em>.csv</em>) & välj storlek.\n\n- ett\n- två"`) {
			t.Fatalf("exported: %v", files)
		}
		a.fails(t, "is not empty; pass --force", "tools", "export", "grupper", "-o", out1)
		a.ok(t, "tools", "export", "grupper", "-o", out1, "--force")
		u.fails(t, "only the maintainers of grupper or an admin may export it", "tools", "export", "grupper", "-o", filepath.Join(dir, "byulf"))

		envB := apptest.New(t, apptest.Backends[0])
		_, bea := envB.User(t, "bea", "author")
		b := binary{bin, envB.URL, bea.Token}
		b.ok(t, "tools", "import", out1, "--publish")
		out2 := filepath.Join(dir, "out2")
		b.ok(t, "tools", "export", "grupper", "-o", out2)
		if got := dirFiles(t, out2); got["tool.json"] != files["tool.json"] || got["script.py"] != files["script.py"] || len(got) != 2 {
			t.Fatalf("exported again:\n%s\nfirst:\n%s", got["tool.json"], files["tool.json"])
		}
		ta, _ := envA.Admin.ToolOf(context.Background(), "grupper")
		tb, _ := envB.Admin.ToolOf(context.Background(), "grupper")
		if ta.Title != tb.Title || ta.Summary != tb.Summary || ta.UsageInstructions != tb.UsageInstructions ||
			string(ta.InputSchema) != string(tb.InputSchema) || string(ta.SettingsSchema) != string(tb.SettingsSchema) {
			t.Fatalf("the two tools differ:\n%+v\n%+v", ta, tb)
		}

		// Importing again over a tool you own: a new version, and the info is the
		// directory's; the version is not published without --publish.
		edited := strings.Replace(groupToolJSON, `"title": "Gruppindelning"`, `"title": "Grupper"`, 1)
		edited = strings.Replace(edited, `"max": 1}`, `"max": 2}`, 1)
		writeFiles(t, src, map[string]string{"tool.json": edited})
		if out := a.ok(t, "tools", "import", src); !strings.Contains(out, "updated grupper: new version") || !strings.Contains(out, "not published") {
			t.Fatalf("import again: %q", out)
		}
		tool, _ := envA.Admin.ToolOf(context.Background(), "grupper")
		if tool.Title != "Grupper" || !strings.Contains(string(tool.InputSchema), `"max":1`) {
			t.Fatalf("after the second import: %+v", tool)
		}
		// Someone else's tool: refused.
		_, bo := envA.User(t, "bo", "author")
		binary{bin, envA.URL, bo.Token}.fails(t, "only the maintainers of grupper or an admin may change it", "tools", "import", src)
	})

	t.Run("bad tool directories name the file and the key", func(t *testing.T) {
		for _, tc := range []struct {
			name, toolJSON, script, want string
		}{
			{"unknown key", `{"slug":"x","title":"X","required":true}`, groupTool, `tool.json: unknown key "required"; tool.json holds slug, title,`},
			{"no slug", `{"title":"X"}`, groupTool, "tool.json: slug is missing"},
			{"no title", `{"slug":"x"}`, groupTool, "tool.json: title is missing"},
			{"not JSON", "{\n  \"slug\": \"x\",\n  \"title\": \"X\"\n  \"summary\": \"\"\n}", groupTool, "tool.json: not valid JSON at line 4, column 3"},
			{"wrong type", `{"slug":"x","title":"X","summary":5}`, groupTool, "tool.json: summary must be a string, not a JSON number"},
			{"bad schema", `{"slug":"x","title":"X","input_schema":[{"name":"f","kind":"file","min":3,"max":2}]}`, groupTool,
				`tool.json: input_schema field 1 ("f"): min 3 is more than max 2`},
			{"bad slug", `{"slug":"Not A Slug","title":"X"}`, groupTool, `tool.json: slug "Not A Slug" must be 1 to 64 lower-case letters`},
			{"file over the upload cap", `{"slug":"x","title":"X","input_schema":[{"name":"f","kind":"file","max":50}]}`, groupTool,
				"tool.json: input_schema field 1 (\"f\"): max 50 is over the upload limit of 20 files"},
			{"no script", `{"slug":"x","title":"X"}`, "", "script.py: no such file; a tool directory holds tool.json and script.py"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				d := filepath.Join(t.TempDir(), "tool")
				files := map[string]string{"tool.json": tc.toolJSON}
				if tc.script != "" {
					files["script.py"] = tc.script
				}
				writeFiles(t, d, files)
				a.fails(t, tc.want, "tools", "import", d)
			})
		}
		a.fails(t, "tool.json: no such file", "tools", "import", t.TempDir())
		// A symlink in the directory is refused, not followed: it could make the import
		// publish a secret as the tool's source, which every run's traceback would show.
		secret := filepath.Join(t.TempDir(), "secret")
		writeFiles(t, filepath.Dir(secret), map[string]string{"secret": "root:*:20228:0:99999:7:::\n"})
		for _, name := range []string{"script.py", "tool.json"} {
			d := filepath.Join(t.TempDir(), "tool")
			writeFiles(t, d, map[string]string{"tool.json": `{"slug":"x","title":"X"}`, "script.py": groupTool})
			os.Remove(filepath.Join(d, name))
			if err := os.Symlink(secret, filepath.Join(d, name)); err != nil {
				t.Fatal(err)
			}
			a.fails(t, name+" is a symbolic link; a tool directory's files must be regular files in it", "tools", "import", d)
		}
		notText := filepath.Join(t.TempDir(), "tool")
		writeFiles(t, notText, map[string]string{"tool.json": `{"slug":"x","title":"X"}`})
		os.WriteFile(filepath.Join(notText, "script.py"), []byte("def run_tool(i, o):\n    return '\xff'\n"), 0o644)
		a.fails(t, "script.py is not UTF-8 text", "tools", "import", notText)
		if _, err := envA.Admin.ToolOf(context.Background(), "x"); err == nil {
			t.Fatal("a refused import created a tool")
		}
	})

	t.Run("settings", func(t *testing.T) {
		out := u.ok(t, "tools", "settings", "grupper")
		if !strings.Contains(out, "skola     string") || !strings.Contains(out, "(not set)") {
			t.Fatalf("settings: %s", out)
		}
		out = u.ok(t, "tools", "settings", "grupper", "--set", "skola=Skolan 42", "--set", "per_sida=20", "--set", "pdf=yes", "--set", "taggar=b, a")
		for _, want := range []string{"skola     string", "Skolan 42", "per_sida  integer", "20", "pdf       boolean", "true", `["b","a"]`, "saved "} {
			if !strings.Contains(out, want) {
				t.Fatalf("settings after --set lack %q:\n%s", want, out)
			}
		}
		u.fails(t, `setting "colour" is not one this tool takes (its settings: skola, per_sida, pdf, taggar)`, "tools", "settings", "grupper", "--set", "colour=red")
		u.fails(t, `setting "per_sida" (integer) must be a whole number`, "tools", "settings", "grupper", "--set", "per_sida=many")
		// --set keeps the others; an empty value clears one.
		raw := u.ok(t, "tools", "settings", "grupper", "--set", "pdf=", "--raw")
		var s struct{ Values map[string]any }
		json.Unmarshal([]byte(raw), &s)
		if len(s.Values) != 3 || s.Values["skola"] != "Skolan 42" || s.Values["pdf"] != nil {
			t.Fatalf("after clearing pdf: %s", raw)
		}
		// --json replaces them all.
		raw = u.ok(t, "tools", "settings", "grupper", "--json", `{"skola":"Ny skola"}`, "--raw")
		s.Values = nil
		json.Unmarshal([]byte(raw), &s)
		if len(s.Values) != 1 || s.Values["skola"] != "Ny skola" {
			t.Fatalf("after --json: %s", raw)
		}

		// The editor's settings of a version are apart from production's.
		tool, _ := envA.Admin.ToolOf(context.Background(), "grupper")
		vid := *tool.PublishedVersionID
		a.ok(t, "tools", "settings", "grupper", "--set", "skola=Produktion")
		if out := a.ok(t, "tools", "settings", "--editor", vid, "--set", "skola=Sandlåda"); !strings.Contains(out, "Sandlåda") {
			t.Fatalf("editor settings: %s", out)
		}
		if out := a.ok(t, "tools", "settings", "grupper"); !strings.Contains(out, "Produktion") || strings.Contains(out, "Sandlåda") {
			t.Fatalf("production settings after the editor's: %s", out)
		}
		u.fails(t, "no tool version", "tools", "settings", "--editor", vid)
		a.fails(t, "give a tool's SLUG, or --editor VERSION_ID", "tools", "settings")
	})

	t.Run("add, push and edit with summary, usage and schemas", func(t *testing.T) {
		writeFiles(t, dir, map[string]string{
			"hej.py":        "def run_tool(i, o):\n    return 'hej'\n",
			"usage.md":      "# Hej\n\nSäg hej.\n",
			"input.json":    `[{"name":"namn","label":"Namn","kind":"string"}]`,
			"settings.json": `[{"name":"ton","kind":"enum","options":[{"value":"glad"}]}]`,
			"bad.json":      `[{"name":"namn","kind":"date"}]`,
		})
		a.fails(t, filepath.Join(dir, "bad.json")+`: input_schema field 1 ("namn") has the kind "date"`,
			"tools", "add", filepath.Join(dir, "hej.py"), "--slug", "hej", "--input-schema", filepath.Join(dir, "bad.json"))
		a.ok(t, "tools", "add", filepath.Join(dir, "hej.py"), "--slug", "hej", "--title", "Hej", "--summary", "Säger hej.",
			"--usage-file", filepath.Join(dir, "usage.md"), "--input-schema", filepath.Join(dir, "input.json"),
			"--settings-schema", filepath.Join(dir, "settings.json"), "--publish")
		tool, err := envA.Admin.ToolOf(context.Background(), "hej")
		if err != nil || tool.Summary != "Säger hej." || tool.UsageInstructions != "# Hej\n\nSäg hej." ||
			!strings.Contains(string(tool.InputSchema), `"name":"namn"`) || !strings.Contains(string(tool.SettingsSchema), `"value":"glad"`) {
			t.Fatalf("added: %+v, %v", tool, err)
		}
		// push keeps the published schemas unless told otherwise.
		if out := a.ok(t, "tools", "push", "hej", filepath.Join(dir, "hej.py"), "--publish"); !strings.Contains(out, "kept the published version's input_schema and settings_schema") {
			t.Fatalf("push: %q", out)
		}
		tool, _ = envA.Admin.ToolOf(context.Background(), "hej")
		if !strings.Contains(string(tool.InputSchema), `"name":"namn"`) {
			t.Fatalf("after push: %+v", tool)
		}
		a.ok(t, "tools", "push", "hej", filepath.Join(dir, "hej.py"), "--input-schema=", "--publish")
		tool, _ = envA.Admin.ToolOf(context.Background(), "hej")
		if tool.InputSchema != nil || tool.SettingsSchema == nil {
			t.Fatalf("after push --input-schema=: %s %s", tool.InputSchema, tool.SettingsSchema)
		}
		a.ok(t, "tools", "edit", "hej", "--summary", "Säger hej till alla.", "--title", "Hej!")
		tool, _ = envA.Admin.ToolOf(context.Background(), "hej")
		if tool.Summary != "Säger hej till alla." || tool.Title != "Hej!" || tool.UsageInstructions != "# Hej\n\nSäg hej." {
			t.Fatalf("after edit: %+v", tool)
		}
		a.fails(t, "nothing to change", "tools", "edit", "hej")
		u.fails(t, "only the maintainers of hej or an admin may change it", "tools", "edit", "hej", "--title", "Mine")
	})
}

// TestToolsImportChecksBeforeSending: a tool.json whose slug is not a slug, or whose
// strings are not UTF-8, is refused by the CLI with a message naming the file and the
// key, before it sends any request; so is a path piece of . or .. in other verbs. The
// server sees no request (counted in front of it); a good directory still imports.
func TestToolsImportChecksBeforeSending(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	var requests atomic.Int64
	target, _ := url.Parse(env.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	cli := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		vars := map[string]string{"SKRIP_SERVER": front.URL, "SKRIP_TOKEN": env.AdminToken}
		code := Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
		return code, errOut.String()
	}
	const script = "def run_tool(input_dir, output_dir):\n    return 'ok'\n"
	tests := []struct {
		name, toolJSON string
		want           []string
	}{
		{"slug with dots and slashes", `{"slug": "../../x", "title": "T", "summary": "", "usage_instructions": ""}`,
			[]string{"tool.json", "slug", `"../../x"`, catalog.SlugRule}},
		{"upper-case slug", `{"slug": "MyTool", "title": "T", "summary": "", "usage_instructions": ""}`,
			[]string{"tool.json", "slug", catalog.SlugRule}},
		{"title not UTF-8", "{\"slug\": \"ok\", \"title\": \"Gr\xf6na\", \"summary\": \"\", \"usage_instructions\": \"\"}",
			[]string{"tool.json", "title is not UTF-8"}},
		{"summary not UTF-8", "{\"slug\": \"ok\", \"title\": \"T\", \"summary\": \"\xff\xfe\", \"usage_instructions\": \"\"}",
			[]string{"tool.json", "summary is not UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"tool.json": tt.toolJSON, "script.py": script})
			before := requests.Load()
			code, errOut := cli("tools", "import", dir)
			if code == 0 {
				t.Fatalf("imported: %q", errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("message %q lacks %q", errOut, w)
				}
			}
			if n := requests.Load() - before; n != 0 {
				t.Fatalf("the CLI sent %d requests before refusing", n)
			}
		})
	}
	for _, args := range [][]string{{"tools", "export", "..", "-o", t.TempDir() + "/x"}, {"tools", "show", ".."}, {"run", ".."}, {"session", "show", "."}} {
		before := requests.Load()
		if code, errOut := cli(args...); code == 0 || !strings.Contains(errOut, "never . or ..") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
		if n := requests.Load() - before; n != 0 {
			t.Errorf("%v: the CLI sent %d requests", args, n)
		}
	}
	// A good directory is imported through the same front.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"tool.json": `{"slug": "ok", "title": "Gröna", "summary": "", "usage_instructions": ""}`, "script.py": script})
	if code, errOut := cli("tools", "import", dir); code != 0 || requests.Load() == 0 {
		t.Fatalf("good import: %d %q", code, errOut)
	}
}
