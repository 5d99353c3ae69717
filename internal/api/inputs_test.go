package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"reflect"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// inputsTool prints what it got in SKRIPTOTEKET_INPUTS, exactly, and returns it with the
// names of its files.
const inputsTool = `
import os, json, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    raw = os.environ["SKRIPTOTEKET_INPUTS"]
    print("INPUTS=" + raw)
    return {"outputs": [{"kind": "json", "value": {"inputs": json.loads(raw), "files": sorted(f["name"] for f in tk.input_files())}}]}
`

const formSchema = `[{"name":"name","label":"Name","kind":"string"},{"name":"notes","label":"Notes","kind":"text"},
	{"name":"size","label":"Group size","kind":"integer"},{"name":"ratio","label":"Ratio","kind":"number"},
	{"name":"shuffle","label":"Shuffle","kind":"boolean"},
	{"name":"paper","label":"Paper","kind":"enum","options":[{"value":"a4","label":"A4"},{"value":"letter","label":"Letter"}]},
	{"name":"docs","label":"Documents","kind":"file","accept":[".pdf",".docx"],"min":1,"max":2}]`

// createWithSchema creates a tool from inputsTool with input_schema schema as token.
func createWithSchema(t *testing.T, env *apptest.Env, token, slug, schema string, publish bool) (versionID string) {
	t.Helper()
	body := map[string]any{"slug": slug, "title": slug, "source": inputsTool, "publish": publish}
	if schema != "" {
		body["input_schema"] = json.RawMessage(schema)
	}
	a := send(t, env, "POST", "/api/v1/tools", token, "application/json", jsonBody(t, body))
	if a.status != 201 {
		t.Fatalf("create %s: %d %s", slug, a.status, a.raw)
	}
	return a.body["version"].(map[string]any)["id"].(string)
}

// runUploadTo posts files (names and bodies) and inputs as multipart to path.
func runUploadTo(t *testing.T, env *apptest.Env, token, path string, names, bodies []string, inputs string) answer {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if inputs != "" {
		mw.WriteField("inputs", inputs)
	}
	for i, n := range names {
		w, _ := mw.CreateFormFile("files", n)
		io.WriteString(w, bodies[i])
	}
	mw.Close()
	return send(t, env, "POST", path, token, mw.FormDataContentType(), &buf)
}

func TestRunInputsAgainstSchema(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, anna := env.User(t, "anna", "author")
		_, u := env.User(t, "ulla", "user")
		createWithSchema(t, env, anna.Token, "form", formSchema, true)

		// The tool sees the normalised inputs: trimmed, coerced, blanks left out.
		a := runUpload(t, env, u.Token, "form", []string{"Report.PDF"}, []string{"%PDF-1"},
			`{"name":"  Ada  ","notes":"   ","size":" 4 ","ratio":"0.5","shuffle":true,"paper":"a4"}`, "")
		if a.status != 201 || a.body["status"] != "succeeded" {
			t.Fatalf("run: %d %s", a.status, a.raw)
		}
		const want = `{"name":"Ada","paper":"a4","ratio":0.5,"shuffle":true,"size":4}`
		if stdout, _ := a.body["stdout"].(string); !strings.Contains(stdout, "INPUTS="+want+"\n") {
			t.Fatalf("the tool saw %q; want %s", stdout, want)
		}
		if got, _ := json.Marshal(a.body["inputs"]); string(got) != want {
			t.Fatalf("the run's inputs: %s, want %s", got, want)
		}
		before := sessionFiles(t, env, u.Token, "form", "default")
		if before.status != 200 || !strings.Contains(before.raw, `"name":"Report.PDF"`) {
			t.Fatalf("session files: %s", before.raw)
		}

		// Each rule refuses with a 400 naming the field and the rule, before anything is
		// stored or run: no run, the session's files as they were, no input dir left.
		refusals := []struct {
			name        string
			files       []string
			inputs      string
			field, rule string
			msg         string
		}{
			{"unknown key", []string{"a.pdf"}, `{"colour":"red"}`, "colour", "unknown_field", `input "colour" is not one this tool takes (its inputs: name, notes, size, ratio, shuffle, paper)`},
			{"file field in inputs", []string{"a.pdf"}, `{"docs":"x"}`, "docs", "file_field", "send its files as files"},
			{"string of the wrong type", []string{"a.pdf"}, `{"name":5}`, "name", "type", `input "name" (string) must be a string; got 5`},
			{"integer not a number", []string{"a.pdf"}, `{"size":"four"}`, "size", "type", `input "size" (integer) must be a whole number`},
			{"integer a fraction", []string{"a.pdf"}, `{"size":2.5}`, "size", "type", "got 2.5"},
			{"number not a number", []string{"a.pdf"}, `{"ratio":"half"}`, "ratio", "type", `input "ratio" (number) must be a number; got "half"`},
			{"boolean another string", []string{"a.pdf"}, `{"shuffle":"ja"}`, "shuffle", "type", `input "shuffle" (boolean) must be true or false`},
			// As the original hub's int(): whole, but not written as an integer.
			{"integer written 2.0", []string{"a.pdf"}, `{"size":2.0}`, "size", "type", "got 2.0"},
			{"integer a string 2.0", []string{"a.pdf"}, `{"size":"2.0"}`, "size", "type", `got "2.0"`},
			{"enum outside its options", []string{"a.pdf"}, `{"paper":"a3"}`, "paper", "enum", `input "paper" (enum) must be one of "a4", "letter"; got "a3"`},
			{"too many files", []string{"a.pdf", "b.pdf", "c.pdf"}, "", "docs", "max", `file field "docs" takes at most 2 files; 3 were sent`},
			{"extension not accepted", []string{"a.pdf", "notes.TXT"}, "", "docs", "accept", `file "notes.TXT" is not one of the types file field "docs" takes (.pdf, .docx)`},
		}
		for _, tc := range refusals {
			t.Run(tc.name, func(t *testing.T) {
				bodies := make([]string, len(tc.files))
				for i := range bodies {
					bodies[i] = "new bytes"
				}
				wantRefusal(t, runUpload(t, env, u.Token, "form", tc.files, bodies, tc.inputs, ""), tc.field, tc.rule, tc.msg)
				if list := send(t, env, "GET", "/api/v1/runs", u.Token, "", nil); list.body["count"] != float64(1) {
					t.Fatalf("a refused run was stored: %s", list.raw)
				}
				// (Reading them touches last_accessed_at: compare the files.)
				if after := sessionFiles(t, env, u.Token, "form", "default"); !reflect.DeepEqual(after.body["files"], before.body["files"]) {
					t.Fatalf("the session's files changed:\n%s\n%s", before.raw, after.raw)
				}
				if n := inputDirsLeft(t, env); n != 0 {
					t.Fatalf("%d input dirs left", n)
				}
			})
		}
		// A run that sends no files gets the session's kept files, and they are what the
		// file field counts: the user changes only the typed inputs and need not upload
		// the same file again.
		// (Its boolean comes as a string the original hub takes for one.)
		if a := runUpload(t, env, u.Token, "form", nil, nil, `{"name":"again","shuffle":" FALSE "}`, ""); a.status != 201 || a.body["status"] != "succeeded" ||
			!strings.Contains(a.raw, `"files":["Report.PDF"]`) {
			t.Fatalf("a run on the kept files: %d %s", a.status, a.raw)
		} else if got, _ := json.Marshal(a.body["inputs"]); string(got) != `{"name":"again","shuffle":false}` {
			t.Fatalf("the run's inputs: %s", got)
		}
		// Too few files: min is 1, and a user with no kept files who sends none is refused.
		_, v := env.User(t, "vera", "user")
		wantRefusal(t, runUpload(t, env, v.Token, "form", nil, nil, `{"name":"x"}`, ""), "docs", "min", `file field "docs" needs at least 1 file; none was sent`)

		// A tool whose schema has no file field refuses files; one without a schema takes
		// anything, as before schemas.
		createWithSchema(t, env, anna.Token, "nofiles", `[{"name":"name","kind":"string"}]`, true)
		wantRefusal(t, runUpload(t, env, u.Token, "nofiles", []string{"a.pdf"}, []string{"x"}, `{"name":"x"}`, ""),
			"files", "no_file_field", "this tool takes no files")
		if a := runUpload(t, env, u.Token, "nofiles", nil, nil, `{"name":" x "}`, ""); a.status != 201 || !strings.Contains(a.raw, `INPUTS={\"name\":\"x\"}`) {
			t.Fatalf("nofiles run: %d %s", a.status, a.raw)
		}
		createWithSchema(t, env, anna.Token, "free", "", true)
		if a := runUpload(t, env, u.Token, "free", []string{"x.bin"}, []string{"x"}, `{"anything":[1,"two"],"n":" 3 "}`, ""); a.status != 201 ||
			!strings.Contains(a.raw, `INPUTS={\"anything\":[1,\"two\"],\"n\":\" 3 \"}`) {
			t.Fatalf("a tool without a schema: %d %s", a.status, a.raw)
		}

		// Kept files that no longer fit the published version are left out, not held
		// against a user who sent nothing; a version without a file field gets none.
		publish := func(schema string) {
			t.Helper()
			a := send(t, env, "POST", "/api/v1/tools/form/versions", anna.Token, "application/json",
				jsonBody(t, map[string]any{"source": inputsTool, "input_schema": json.RawMessage(schema)}))
			if a.status != 201 {
				t.Fatalf("new version: %d %s", a.status, a.raw)
			}
			if p := send(t, env, "POST", "/api/v1/tool-versions/"+a.body["id"].(string)+"/publish", anna.Token, "", nil); p.status != 200 {
				t.Fatalf("publish: %d %s", p.status, p.raw)
			}
		}
		for _, schema := range []string{
			`[{"name":"name","kind":"string"},{"name":"docs","kind":"file","accept":[".txt"],"min":0,"max":2}]`,
			`[{"name":"name","kind":"string"}]`,
		} {
			publish(schema)
			if a := runUpload(t, env, u.Token, "form", nil, nil, `{"name":"x"}`, ""); a.status != 201 || a.body["status"] != "succeeded" ||
				!strings.Contains(a.raw, `"files":[]`) {
				t.Fatalf("a run without files under %s: %d %s", schema, a.status, a.raw)
			}
			if after := sessionFiles(t, env, u.Token, "form", "default"); !reflect.DeepEqual(after.body["files"], before.body["files"]) {
				t.Fatalf("the session's files changed:\n%s\n%s", before.raw, after.raw)
			}
		}

		// The editor sandbox goes through the same checks.
		vid := createWithSchema(t, env, anna.Token, "draft", formSchema, false)
		sandbox := func(inputs string, names ...string) answer {
			bodies := make([]string, len(names))
			for i := range bodies {
				bodies[i] = "x"
			}
			return runUploadTo(t, env, anna.Token, "/api/v1/editor/tool-versions/"+vid+"/run-sandbox", names, bodies, inputs)
		}
		wantRefusal(t, sandbox(`{"size":"many"}`, "a.pdf"), "size", "type", `input "size" (integer)`)
		wantRefusal(t, sandbox(`{}`, "a.odt"), "docs", "accept", `file "a.odt"`)
		if a := sandbox(`{"size":"7"}`, "a.docx"); a.status != 201 || !strings.Contains(a.raw, `INPUTS={\"size\":7}`) {
			t.Fatalf("sandbox run: %d %s", a.status, a.raw)
		}
	})
}
