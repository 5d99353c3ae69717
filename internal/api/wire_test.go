package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"reflect"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/wire"
)

// wireTool shows every kind of output, offers an action with options and a prefill,
// leaves an artifact and prints, so its run answers fill every field of a run.
const wireTool = `
import os, skrip_toolkit as tk
ACTIONS = [{"action_id": "again", "label": "Again", "kind": "form", "prefill": {"n": 2, "tone": "glad"},
            "fields": [{"name": "n", "label": "N", "kind": "integer"},
                       {"name": "tone", "label": "Tone", "kind": "enum", "options": [{"value": "glad", "label": "Glad"}]}]}]
def run_tool(input_dir, output_dir):
    print("to stdout")
    open(os.path.join(output_dir, "out.txt"), "w").write("out")
    return {"outputs": [
        {"kind": "notice", "level": "info", "message": "hej"},
        {"kind": "markdown", "markdown": "# Rubrik"},
        {"kind": "table", "title": "T", "columns": [{"key": "a", "label": "A"}], "rows": [{"a": 1}]},
        {"kind": "json", "title": "J", "value": {"inputs": tk.inputs()}},
        {"kind": "html_sandboxed", "html": "<p>hej</p>"},
        {"kind": "vega_lite", "spec": {"mark": "bar"}},
    ], "next_actions": ACTIONS, "state": {"n": 1}}
`

// TestAnswersMatchWire decodes a real answer of every main route into its wire type,
// refusing unknown fields, and writes it back: the API and the client share one
// definition, so a field the API writes that the wire does not declare, or one the wire
// declares that the API leaves out, fails here.
func TestAnswersMatchWire(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	tok := env.AdminToken
	runCT, runBody := formBody(t, map[string]string{"inputs": `{"n": 1}`}, "files", "a.csv", "x,y\n")
	fileCT, fileBody := formBody(t, map[string]string{"key": "files/in.txt", "ttl": "1h"}, "file", "in.txt", "hej")
	ids := map[string]string{}
	tests := []struct {
		name         string
		method, path string
		ctype, body  string
		accept       string
		status       int
		into         any         // a pointer to the wire type of the answer
		keep         func(v any) // records the ids later rows name in their paths
	}{
		{name: "me", method: "GET", path: "/api/v1/me", status: 200, into: new(wire.Me)},
		{name: "create user", method: "POST", path: "/api/v1/users", body: `{"name":"ulla","role":"user","password":"hemligt-lösen-1"}`,
			status: 201, into: new(wire.CreatedUser), keep: func(v any) { ids["user"] = v.(*wire.CreatedUser).ID }},
		{name: "users", method: "GET", path: "/api/v1/users", status: 200, into: new(wire.UserList)},
		{name: "set role", method: "PATCH", path: "/api/v1/users/{user}", body: `{"role":"author"}`, status: 200, into: new(wire.User)},
		{name: "issue token", method: "POST", path: "/api/v1/users/{user}/tokens", body: `{"name":"ci"}`, status: 201, into: new(wire.IssuedToken)},
		{name: "create tool", method: "POST", path: "/api/v1/tools", status: 201, into: new(wire.CreatedTool),
			body: mustJSON(t, wire.NewTool{Slug: "wired", Title: "Wired", Source: wireTool, Publish: true,
				InputSchema:    json.RawMessage(`[{"name":"n","label":"N","kind":"integer"},{"name":"docs","label":"Docs","kind":"file","max":2}]`),
				SettingsSchema: json.RawMessage(`[{"name":"tone","label":"Tone","kind":"enum","options":[{"value":"glad","label":"Glad"}]}]`)}),
			keep: func(v any) { ids["tool"] = v.(*wire.CreatedTool).Tool.ID }},
		{name: "tools", method: "GET", path: "/api/v1/tools", status: 200, into: new(wire.ToolList)},
		{name: "tool", method: "GET", path: "/api/v1/tools/wired", status: 200, into: new(wire.ToolDetail)},
		{name: "update tool", method: "PATCH", path: "/api/v1/tools/wired", body: `{"summary":"Kort"}`, status: 200, into: new(wire.Tool)},
		{name: "add version", method: "POST", path: "/api/v1/tools/wired/versions", body: mustJSON(t, wire.NewVersion{Source: wireTool}),
			status: 201, into: new(wire.Version), keep: func(v any) { ids["version"] = v.(*wire.Version).ID }},
		{name: "version", method: "GET", path: "/api/v1/tool-versions/{version}", status: 200, into: new(wire.Version)},
		{name: "tool versions", method: "GET", path: "/api/v1/tools/wired/versions", status: 200, into: new(wire.VersionList),
			keep: func(v any) { ids["first"] = v.(*wire.VersionList).Versions[1].ID }},
		{name: "diff", method: "GET", path: "/api/v1/tool-versions/{version}/diff?against={first}", status: 200, into: new(wire.VersionDiff)},
		{name: "restore", method: "POST", path: "/api/v1/tool-versions/{first}/restore", status: 201, into: new(wire.Version)},
		{name: "settings", method: "PUT", path: "/api/v1/tools/wired/settings", body: `{"values":{"tone":"glad"}}`, status: 200, into: new(wire.Settings)},
		{name: "run", method: "POST", path: "/api/v1/tools/wired/runs", ctype: runCT, body: runBody, status: 201, into: new(wire.Run),
			keep: func(v any) { r := v.(*wire.Run); ids["run"], ids["rev"] = r.RunID, fmt.Sprint(*r.StateRev) }},
		{name: "run", method: "GET", path: "/api/v1/runs/{run}", status: 200, into: new(wire.Run)},
		{name: "runs", method: "GET", path: "/api/v1/runs?limit=1", status: 200, into: new(wire.RunList)},
		{name: "action", method: "POST", path: "/api/v1/start_action", status: 201, into: new(wire.ActionResult),
			body: `{"tool_id":"wired","context":"default","action_id":"again","input":{"n":3},"expected_state_rev":{rev}}`},
		{name: "session", method: "GET", path: "/api/v1/tools/wired/sessions/default", status: 200, into: new(wire.Session)},
		{name: "session files", method: "GET", path: "/api/v1/tools/wired/session-files?context=default", status: 200, into: new(wire.SessionFiles)},
		{name: "upload", method: "POST", path: "/api/v1/files", ctype: fileCT, body: fileBody, status: 201, into: new(wire.FileInfo)},
		{name: "files", method: "GET", path: "/api/v1/files?limit=1", status: 200, into: new(wire.FileList)},
		{name: "versions", method: "GET", path: "/api/v1/files/files/in.txt/versions", status: 200, into: new(wire.FileVersionList)},
		{name: "create sandbox", method: "POST", path: "/api/v1/sandboxes", body: `{"limits":{"pids":64},"idle_timeout":"10m"}`,
			status: 201, into: new(wire.Sandbox), keep: func(v any) { ids["box"] = v.(*wire.Sandbox).SandboxID }},
		{name: "sandboxes", method: "GET", path: "/api/v1/sandboxes", status: 200, into: new(wire.SandboxList)},
		{name: "exec", method: "POST", path: "/api/v1/sandboxes/{box}/exec", body: `{"cmd":["sh","-c","echo ut; echo fel >&2"]}`,
			status: 200, into: new(wire.ExecResult)},
		{name: "exec stream", method: "POST", path: "/api/v1/sandboxes/{box}/exec", body: `{"cmd":["sh","-c","echo ut; echo fel >&2"]}`,
			accept: wire.ExecNDJSON, status: 200, into: new(wire.ExecMessage)},
		{name: "write", method: "PUT", path: "/api/v1/sandboxes/{box}/fs/ut.txt", ctype: "application/octet-stream", body: "ut",
			status: 201, into: new(wire.Written)},
		{name: "stage", method: "POST", path: "/api/v1/sandboxes/{box}/stage", body: `{"file_key":"files/in.txt","destination":"in.txt"}`,
			status: 200, into: new(wire.Staged)},
		{name: "publish", method: "POST", path: "/api/v1/sandboxes/{box}/publish", body: `{"source":"ut.txt","file_key":"files/ut.txt","ttl":"1h"}`,
			status: 200, into: new(wire.Published)},
		{name: "cleanup", method: "POST", path: "/api/v1/admin/cleanup", status: 200, into: new(wire.Cleanup)},
		{name: "error", method: "GET", path: "/api/v1/runs/r_nope", status: 404, into: new(wire.ErrorBody)},
	}
	for _, tc := range tests {
		path, body := tc.path, tc.body
		for k, v := range ids {
			path, body = strings.ReplaceAll(path, "{"+k+"}", v), strings.ReplaceAll(body, "{"+k+"}", v)
		}
		ctype := tc.ctype
		if ctype == "" && body != "" {
			ctype = "application/json"
		}
		var hdr []string
		if tc.accept != "" {
			hdr = []string{"Accept", tc.accept}
		}
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		a := send(t, env, tc.method, path, tok, ctype, rd, hdr...)
		if a.status != tc.status {
			t.Fatalf("%s: %s %s: %d %s", tc.name, tc.method, path, a.status, a.raw)
		}
		lines := []string{a.raw}
		if tc.accept == wire.ExecNDJSON {
			lines = strings.Split(strings.TrimSuffix(a.raw, "\n"), "\n")
		}
		for _, line := range lines {
			v := reflect.New(reflect.TypeOf(tc.into).Elem()).Interface()
			sameAfterDecoding(t, tc.name, line, v)
			if tc.keep != nil {
				tc.keep(v)
			}
		}
	}
}

// sameAfterDecoding decodes raw into v, refusing unknown fields, and checks that v
// written back is the JSON raw holds: no field the API wrote was lost or changed, and
// none was added.
func sameAfterDecoding(t *testing.T, what, raw string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: the answer does not fit %T: %v\n%s", what, v, err, raw)
		return
	}
	back, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	json.Unmarshal([]byte(raw), &want)
	json.Unmarshal(back, &got)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: %T does not write back what the API wrote:\nAPI  %s\nwire %s", what, v, strings.TrimSpace(raw), back)
	}
}

// formBody is a multipart form of fields and one file.
func formBody(t *testing.T, fields map[string]string, fileField, name, content string) (ctype, body string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	w, _ := mw.CreateFormFile(fileField, name)
	w.Write([]byte(content))
	mw.Close()
	return mw.FormDataContentType(), buf.String()
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
