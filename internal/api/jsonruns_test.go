package api_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// stage PUTs body under key as token's file, named name when not "".
func stage(t *testing.T, env *apptest.Env, token, key, name, body string) {
	t.Helper()
	path := "/api/v1/files/" + key
	if name != "" {
		path += "?filename=" + url.QueryEscape(name)
	}
	if a := send(t, env, "PUT", path, token, "", strings.NewReader(body)); a.status != 201 {
		t.Fatalf("stage %s: %d %s", key, a.status, a.raw)
	}
}

// postJSONRun posts body as an application/json run to path.
func postJSONRun(t *testing.T, env *apptest.Env, token, path, body string) answer {
	t.Helper()
	return send(t, env, "POST", path, token, "application/json", strings.NewReader(body))
}

// runValue is the json output of an inputsTool run: its inputs and its files' names.
func runValue(t *testing.T, a answer) (map[string]any, []string) {
	t.Helper()
	if a.status != 201 || a.body["status"] != "succeeded" {
		t.Fatalf("run: %d %s", a.status, a.raw)
	}
	out := a.body["outputs"].([]any)[0].(map[string]any)["value"].(map[string]any)
	var files []string
	for _, f := range out["files"].([]any) {
		files = append(files, f.(string))
	}
	return out["inputs"].(map[string]any), files
}

// sessionNames lists the names of token's session files of slug in the default context.
func sessionNames(t *testing.T, env *apptest.Env, token, slug string) []string {
	t.Helper()
	a := send(t, env, "GET", "/api/v1/tools/"+slug+"/session-files?context=default", token, "", nil)
	if a.status == 404 {
		return nil
	}
	if a.status != 200 {
		t.Fatalf("session files: %d %s", a.status, a.raw)
	}
	var names []string
	for _, f := range a.body["files"].([]any) {
		names = append(names, f.(map[string]any)["name"].(string))
	}
	sort.Strings(names)
	return names
}

// TestJSONRuns runs a tool with application/json: inputs alone, and staged files named
// by key, which the run takes as uploaded files (docs/api.md "Runs"): the same checks
// (names, the schema's file rules, the caps) and the same session files afterwards. A key
// is looked up in the caller's own files only.
func TestJSONRuns(t *testing.T) {
	apptest.EachOf(t, []apptest.Backend{apptest.BlobBackends[0], apptest.BlobBackends[1]}, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.UploadMaxFiles = 3
		cfg.UploadMaxFileBytes = 100
		cfg.UploadMaxTotalBytes = 150
		env := apptest.Start(t, cfg)
		_, anna := env.User(t, "anna", "author")
		_, ulf := env.User(t, "ulf", "user")
		const schema = `[{"name":"size","label":"Size","kind":"integer"},
			{"name":"docs","label":"Documents","kind":"file","accept":[".csv",".txt",".json"],"min":0,"max":3}]`
		createWithSchema(t, env, anna.Token, "jsonrun", schema, true)
		runs := "/api/v1/tools/jsonrun/runs"

		// Inputs alone: no multipart needed, and numbers are kept as written.
		inputs, files := runValue(t, postJSONRun(t, env, ulf.Token, runs, `{"inputs": {"size": 3}}`))
		if inputs["size"] != float64(3) || len(files) != 0 {
			t.Fatalf("inputs-only JSON run: inputs %v, files %v", inputs, files)
		}
		if a := postJSONRun(t, env, ulf.Token, runs, `{"inputs": {"size": 2.5}}`); a.status != 400 {
			t.Fatalf("a JSON run with an input the schema refuses: %d %s", a.status, a.raw)
		}
		if a := postJSONRun(t, env, ulf.Token, runs, `{"inputs": [1]}`); a.status != 400 || !strings.Contains(a.errMessage(), "inputs") {
			t.Fatalf("inputs that are not an object: %d %s", a.status, a.raw)
		}
		if a := postJSONRun(t, env, ulf.Token, runs, `{"files": ["files/a.csv"]}`); a.status != 400 || !strings.Contains(a.errMessage(), "files") {
			t.Fatalf("an unknown field: %d %s", a.status, a.raw)
		}

		// Staged files by key: copied in under their names, and they become the session's files.
		stage(t, env, ulf.Token, "files/a.csv", "", "a,b\n1,2\n")
		stage(t, env, ulf.Token, "files/notes", "Anteckningar ö.txt", "hej")
		inputs, files = runValue(t, postJSONRun(t, env, ulf.Token, runs, `{"inputs": {"size": 1}, "file_keys": ["files/a.csv", "files/notes"]}`))
		if !reflect.DeepEqual(files, []string{"Anteckningar ö.txt", "a.csv"}) || inputs["size"] != float64(1) {
			t.Fatalf("a run of staged files saw %v, inputs %v", files, inputs)
		}
		if got := sessionNames(t, env, ulf.Token, "jsonrun"); !reflect.DeepEqual(got, []string{"Anteckningar ö.txt", "a.csv"}) {
			t.Fatalf("session files after a run of staged files: %v", got)
		}
		// The staged files are copied, not moved.
		if got := bytesOf(t, env, ulf.Token, "files/a.csv"); got != "a,b\n1,2\n" {
			t.Fatalf("the staged file after the run: %q", got)
		}
		// A JSON run naming no files keeps the session's files, as a multipart one does.
		if _, files = runValue(t, postJSONRun(t, env, ulf.Token, runs, `{}`)); !reflect.DeepEqual(files, []string{"Anteckningar ö.txt", "a.csv"}) {
			t.Fatalf("a JSON run without files saw %v, want the session's", files)
		}

		// Every refusal below leaves the session's files as they were.
		before := sessionNames(t, env, ulf.Token, "jsonrun")
		stage(t, env, anna.Token, "files/secret.csv", "", "anna's")
		stage(t, env, ulf.Token, "files/big.csv", "", strings.Repeat("x", 101))
		stage(t, env, ulf.Token, "files/b1.csv", "", strings.Repeat("b", 80))
		stage(t, env, ulf.Token, "files/b2.csv", "", strings.Repeat("c", 80))
		stage(t, env, ulf.Token, "files/x/a.csv", "A.CSV", "other a")
		stage(t, env, ulf.Token, "files/act", "action.json", "{}")
		stage(t, env, ulf.Token, "files/page.html", "", "<p>")
		for _, tc := range []struct {
			name, body string
			status     int
			code, has  string
		}{
			{"another user's key", `{"file_keys": ["files/secret.csv"]}`, 404, "not_found", "files/secret.csv"},
			{"a key with no file", `{"file_keys": ["files/a.csv", "files/none.csv"]}`, 404, "not_found", "files/none.csv"},
			{"a key outside the grammar", `{"file_keys": ["../etc/passwd"]}`, 400, "invalid_key", ""},
			{"a file over the per-file cap", `{"file_keys": ["files/big.csv"]}`, 413, "too_large", "files/big.csv"},
			{"files over the total cap", `{"file_keys": ["files/b1.csv", "files/b2.csv"]}`, 413, "too_large", "files/b2.csv"},
			{"more files than the cap", `{"file_keys": ["files/a.csv", "files/notes", "files/b1.csv", "files/x/a.csv"]}`, 413, "too_large", "at most 3"},
			{"two names equal but for case", `{"file_keys": ["files/a.csv", "files/x/a.csv"]}`, 400, "invalid_upload", "rename"},
			{"action.json", `{"file_keys": ["files/act"]}`, 400, "invalid_upload", "action.json"},
			{"a type the schema refuses", `{"file_keys": ["files/page.html"]}`, 400, "invalid_request", "page.html"},
		} {
			a := postJSONRun(t, env, ulf.Token, runs, tc.body)
			if a.status != tc.status || a.errCode() != tc.code || !strings.Contains(a.errMessage(), tc.has) {
				t.Errorf("%s: %d %s, want %d %s naming %q", tc.name, a.status, a.raw, tc.status, tc.code, tc.has)
			}
			if got := sessionNames(t, env, ulf.Token, "jsonrun"); !reflect.DeepEqual(got, before) {
				t.Fatalf("%s changed the session's files: %v, was %v", tc.name, got, before)
			}
		}

		// The editor's run-sandbox takes the same body.
		vid := createWithSchema(t, env, anna.Token, "jsonedit", "", false)
		stage(t, env, anna.Token, "files/e.txt", "", "e")
		if _, files := runValue(t, postJSONRun(t, env, anna.Token, "/api/v1/editor/tool-versions/"+vid+"/run-sandbox", `{"file_keys": ["files/e.txt"]}`)); !reflect.DeepEqual(files, []string{"e.txt"}) {
			t.Fatalf("a JSON run-sandbox saw %v", files)
		}

		// The client sends it too.
		rn, err := env.Client(t, ulf.Token).RunJSON(context.Background(), "jsonrun", map[string]any{"size": 2}, []string{"files/a.csv"}, time.Minute)
		if err != nil || rn.Status != "succeeded" || len(rn.InputManifest.Files) != 1 || rn.InputManifest.Files[0].Name != "a.csv" {
			b, _ := json.Marshal(rn)
			t.Fatalf("client RunJSON: %v %s", err, b)
		}
	})
}

// TestJSONRunAtCapCopiesNothing: a user at their runs' cap is refused a JSON run before
// the server copies any of its staged files (a request of a few bytes must not make it
// write megabytes for a run it then refuses): here a file whose stored bytes are damaged
// would fail the copy, and the answer is the cap's 429 instead.
func TestJSONRunAtCapCopiesNothing(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.RunsPerUser = 1
	env := apptest.Start(t, cfg)
	publish(t, env, "sleep", sleepTool)
	_, ada := env.User(t, "ada", "user")
	if a := runUpload(t, env, ada.Token, "sleep", nil, nil, `{"s": 60}`, "?wait=0s"); a.status != 202 {
		t.Fatalf("the run that fills the cap: %d %s", a.status, a.raw)
	}
	stage(t, env, ada.Token, "files/stor.csv", "", "a,b\n1,2\n")
	// Damage the stored bytes: a copy would now fail its checksum.
	damaged := 0
	filepath.WalkDir(env.Config.DataDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, "blobs") {
			if b, _ := os.ReadFile(p); string(b) == "a,b\n1,2\n" {
				os.WriteFile(p, []byte("x,y\n9,9\n"), 0o644)
				damaged++
			}
		}
		return nil
	})
	if damaged != 1 {
		t.Fatalf("found %d stored copies of the file to damage", damaged)
	}
	a := postJSONRun(t, env, ada.Token, "/api/v1/tools/sleep/runs?wait=0s", `{"inputs": {"s": 1}, "file_keys": ["files/stor.csv"]}`)
	if a.status != 429 || !strings.Contains(a.raw, "runs_per_user") {
		t.Fatalf("a JSON run at the cap: %d %s; want 429 before any copy", a.status, a.raw)
	}
}
