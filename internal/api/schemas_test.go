package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// jsonBody marshals v for a request body.
func jsonBody(t *testing.T, v any) *strings.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReader(string(b))
}

// wantRefusal checks that a is a 400 invalid_request whose details name field and rule
// and whose message holds msg.
func wantRefusal(t *testing.T, a answer, field, rule, msg string) {
	t.Helper()
	e, _ := a.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	if a.status != 400 || a.errCode() != "invalid_request" || d["field"] != field || d["rule"] != rule {
		t.Fatalf("got %d %s; want 400 invalid_request with field %q and rule %q", a.status, a.raw, field, rule)
	}
	if !strings.Contains(a.errMessage(), msg) {
		t.Fatalf("message %q lacks %q", a.errMessage(), msg)
	}
}

const greetInputSchema = `[{"name":"name","label":"Name","kind":"string"},{"name":"size","label":"Group size","kind":"integer"},
	{"name":"paper","label":"Paper","kind":"enum","options":[{"value":"a4","label":"A4"},{"value":"letter","label":"Letter"}]},
	{"name":"docs","label":"Documents","kind":"file","accept":[".pdf",".docx"],"min":1,"max":2}]`

const greetSettingsSchema = `[{"name":"signature","label":"Signature","kind":"string"},{"name":"per_page","label":"Per page","kind":"integer"},
	{"name":"tone","label":"Tone","kind":"enum","options":[{"value":"formal","label":"Formal"},{"value":"casual","label":"Casual"}]}]`

func TestToolSchemasAndInfo(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, anna := env.User(t, "anna", "author")
		_, bob := env.User(t, "bob", "author")
		_, ulf := env.User(t, "ulf", "user")
		ctx := context.Background()

		create := map[string]any{"slug": "greet", "title": " Greet ", "summary": "Greets a group.", "usage_instructions": "# Use\n\nUpload a **PDF**.\n",
			"source": "def run_tool(i, o):\n    return 'hi'\n", "input_schema": json.RawMessage(greetInputSchema),
			"settings_schema": json.RawMessage(greetSettingsSchema), "publish": true}
		a := send(t, env, "POST", "/api/v1/tools", anna.Token, "application/json", jsonBody(t, create))
		if a.status != 201 {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		var created struct {
			Tool    map[string]any `json:"tool"`
			Version struct {
				ID             string          `json:"id"`
				InputSchema    json.RawMessage `json:"input_schema"`
				SettingsSchema json.RawMessage `json:"settings_schema"`
			} `json:"version"`
		}
		json.Unmarshal([]byte(a.raw), &created)
		if created.Tool["title"] != "Greet" || created.Tool["summary"] != "Greets a group." || created.Tool["usage_instructions"] != "# Use\n\nUpload a **PDF**." {
			t.Fatalf("tool: %v", created.Tool)
		}
		// The version holds the schemas in canonical form: min kept, options as given.
		if !strings.Contains(string(created.Version.InputSchema), `"accept":[".pdf",".docx"],"min":1,"max":2`) ||
			!strings.Contains(string(created.Version.SettingsSchema), `{"value":"casual","label":"Casual"}`) {
			t.Fatalf("version schemas: %s %s", created.Version.InputSchema, created.Version.SettingsSchema)
		}

		// Anyone who may run it sees what the published version asks for.
		got := send(t, env, "GET", "/api/v1/tools/greet", ulf.Token, "", nil)
		if got.status != 200 || got.body["summary"] != "Greets a group." || !strings.Contains(got.raw, `"input_schema":[{"name":"name"`) ||
			!strings.Contains(got.raw, `"settings_schema":[{"name":"signature"`) {
			t.Fatalf("GET tool: %d %s", got.status, got.raw)
		}
		list := send(t, env, "GET", "/api/v1/tools", ulf.Token, "", nil)
		if !strings.Contains(list.raw, `"summary":"Greets a group."`) {
			t.Fatalf("list: %s", list.raw)
		}
		if v := send(t, env, "GET", "/api/v1/tool-versions/"+created.Version.ID, anna.Token, "", nil); !strings.Contains(v.raw, `"input_schema":[`) {
			t.Fatalf("GET version: %s", v.raw)
		}

		// A tool without schemas shows null for both.
		plain := send(t, env, "POST", "/api/v1/tools", anna.Token, "application/json",
			strings.NewReader(`{"slug":"plain","title":"Plain","source":"def run_tool(i, o):\n    return 'x'\n","publish":true}`))
		if plain.status != 201 || !strings.Contains(plain.raw, `"input_schema":null,"settings_schema":null`) {
			t.Fatalf("plain: %d %s", plain.status, plain.raw)
		}
		if g := send(t, env, "GET", "/api/v1/tools/plain", ulf.Token, "", nil); !strings.Contains(g.raw, `"input_schema":null,"settings_schema":null`) {
			t.Fatalf("GET plain: %s", g.raw)
		}

		// Every schema rule is refused with a 400 naming the field and the rule, and
		// nothing is stored: no tool, no version.
		tool, err := env.App.Store.Tool(ctx, "greet")
		if err != nil {
			t.Fatal(err)
		}
		bad := []struct {
			name, input, settings, rule, msg string
		}{
			{"not a list", `{"name":"x"}`, "", "json", "input_schema must be a JSON list of fields"},
			{"no name", `[{"kind":"string"}]`, "", "name", "input_schema field 1 has no name"},
			{"names twice", `[{"name":"a","kind":"string"},{"name":"a","kind":"text"}]`, "", "unique", `two fields named "a"`},
			{"unknown kind", `[{"name":"d","kind":"date"}]`, "", "kind", `has the kind "date"`},
			{"two file fields", `[{"name":"a","kind":"file","max":1},{"name":"b","kind":"file","max":1}]`, "", "one_file_field", "two file fields"},
			{"min over max", `[{"name":"f","kind":"file","min":2,"max":1}]`, "", "min", "min 2 is more than max 1"},
			{"max 0", `[{"name":"f","kind":"file","max":0}]`, "", "max", "max is 0; it must be at least 1"},
			{"max over the upload cap", `[{"name":"f","kind":"file","max":21}]`, "", "max", "over the upload limit of 20 files per run (SKRIP_UPLOAD_MAX_FILES)"},
			{"enum without options", `[{"name":"e","kind":"enum"}]`, "", "options", "has no options"},
			{"accept not an extension", `[{"name":"f","kind":"file","max":1,"accept":["pdf"]}]`, "", "accept", `accept entry "pdf" is not a file extension`},
			{"settings with a file", "", `[{"name":"f","kind":"file","max":1}]`, "kind", `settings_schema field 1 ("f") has the kind "file"`},
			{"settings multi_enum without options", "", `[{"name":"m","kind":"multi_enum"}]`, "options", "(multi_enum) has no options"},
		}
		for _, tc := range bad {
			t.Run(tc.name, func(t *testing.T) {
				body := map[string]any{"slug": "bad", "title": "Bad", "source": "def run_tool(i, o):\n    return 'x'\n"}
				vbody := map[string]any{"source": "def run_tool(i, o):\n    return 'y'\n"}
				field := "input_schema"
				if tc.input != "" {
					body["input_schema"], vbody["input_schema"] = json.RawMessage(tc.input), json.RawMessage(tc.input)
				} else {
					body["settings_schema"], vbody["settings_schema"] = json.RawMessage(tc.settings), json.RawMessage(tc.settings)
					field = "settings_schema"
				}
				wantRefusal(t, send(t, env, "POST", "/api/v1/tools", anna.Token, "application/json", jsonBody(t, body)), field, tc.rule, tc.msg)
				if _, err := env.App.Store.Tool(ctx, "bad"); err == nil {
					t.Fatal("a refused tool was stored")
				}
				wantRefusal(t, send(t, env, "POST", "/api/v1/tools/greet/versions", anna.Token, "application/json", jsonBody(t, vbody)), field, tc.rule, tc.msg)
				if vs, err := env.App.Store.Versions(ctx, tool.ID); err != nil || len(vs) != 1 {
					t.Fatalf("versions after a refused one: %d, %v", len(vs), err)
				}
			})
		}

		// A new version carries its own schemas.
		nv := send(t, env, "POST", "/api/v1/tools/greet/versions", anna.Token, "application/json",
			strings.NewReader(`{"source":"def run_tool(i, o):\n    return 'v2'\n","input_schema":[]}`))
		if nv.status != 201 || !strings.Contains(nv.raw, `"input_schema":[],"settings_schema":null`) {
			t.Fatalf("new version: %d %s", nv.status, nv.raw)
		}

		// PATCH changes what it is given and keeps the rest; only the owner may.
		p := send(t, env, "PATCH", "/api/v1/tools/greet", anna.Token, "application/json", strings.NewReader(`{"summary":"Greets anyone.","usage_instructions":"Just run it."}`))
		if p.status != 200 || p.body["summary"] != "Greets anyone." || p.body["usage_instructions"] != "Just run it." || p.body["title"] != "Greet" {
			t.Fatalf("PATCH: %d %s", p.status, p.raw)
		}
		if g := send(t, env, "GET", "/api/v1/tools/greet", ulf.Token, "", nil); g.body["summary"] != "Greets anyone." {
			t.Fatalf("after PATCH: %s", g.raw)
		}
		wantRefusal(t, send(t, env, "PATCH", "/api/v1/tools/greet", anna.Token, "application/json", strings.NewReader(`{"title":"  "}`)),
			"title", "required", "title is empty")
		wantRefusal(t, send(t, env, "PATCH", "/api/v1/tools/greet", anna.Token, "application/json", jsonBody(t, map[string]string{"summary": strings.Repeat("s", 2001)})),
			"summary", "max_length", "summary is 2001 bytes; the limit is 2000 bytes")
		if a := send(t, env, "PATCH", "/api/v1/tools/greet", bob.Token, "application/json", strings.NewReader(`{"title":"Mine"}`)); a.status != 403 {
			t.Fatalf("PATCH by another author: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "PATCH", "/api/v1/tools/greet", ulf.Token, "application/json", strings.NewReader(`{"title":"Mine"}`)); a.status != 403 {
			t.Fatalf("PATCH by a user: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "PATCH", "/api/v1/tools/greet", anna.Token, "application/json", strings.NewReader(`{"slug":"other"}`)); a.status != 400 {
			t.Fatalf("PATCH of the slug: %d %s", a.status, a.raw)
		}
		if g := send(t, env, "GET", "/api/v1/tools/greet", ulf.Token, "", nil); g.body["title"] != "Greet" {
			t.Fatalf("a refused PATCH changed the tool: %s", g.raw)
		}
	})
}

// settingsAnswer is the JSON of a settings endpoint.
type settingsAnswer struct {
	SettingsSchema []map[string]any `json:"settings_schema"`
	Values         map[string]any   `json:"values"`
	UpdatedAt      *string          `json:"updated_at"`
}

func settingsOf(t *testing.T, a answer) settingsAnswer {
	t.Helper()
	if a.status != 200 {
		t.Fatalf("settings: %d %s", a.status, a.raw)
	}
	var s settingsAnswer
	if err := json.Unmarshal([]byte(a.raw), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestToolSettings(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, anna := env.User(t, "anna", "author")
		_, ulf := env.User(t, "ulf", "user")
		_, olle := env.User(t, "olle", "user")
		a := send(t, env, "POST", "/api/v1/tools", anna.Token, "application/json", jsonBody(t, map[string]any{"slug": "greet", "title": "Greet",
			"source": "def run_tool(i, o):\n    return 'hi'\n", "settings_schema": json.RawMessage(greetSettingsSchema), "publish": true}))
		if a.status != 201 {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		v1 := a.body["version"].(map[string]any)["id"].(string)
		path := "/api/v1/tools/greet/settings"

		s := settingsOf(t, send(t, env, "GET", path, ulf.Token, "", nil))
		if len(s.SettingsSchema) != 3 || len(s.Values) != 0 || s.UpdatedAt != nil {
			t.Fatalf("fresh settings: %+v", s)
		}
		put := func(token, p, body string) answer {
			return send(t, env, "PUT", p, token, "application/json", strings.NewReader(body))
		}
		s = settingsOf(t, put(ulf.Token, path, `{"values":{"signature":"  Ulf ","per_page":"20","tone":"casual"}}`))
		if s.Values["signature"] != "Ulf" || s.Values["per_page"] != float64(20) || s.Values["tone"] != "casual" || s.UpdatedAt == nil {
			t.Fatalf("saved settings: %+v", s)
		}
		// Refusals name the field and the rule and change nothing.
		wantRefusal(t, put(ulf.Token, path, `{"values":{"colour":"red"}}`), "colour", "unknown_field", `setting "colour" is not one this tool takes (its settings: signature, per_page, tone)`)
		wantRefusal(t, put(ulf.Token, path, `{"values":{"per_page":"many"}}`), "per_page", "type", `setting "per_page" (integer) must be a whole number`)
		wantRefusal(t, put(ulf.Token, path, `{"values":{"tone":"rude"}}`), "tone", "enum", `must be one of "formal", "casual"`)
		if a := put(ulf.Token, path, `{"values":{"signature":"x"},"extra":1}`); a.status != 400 {
			t.Fatalf("an unknown body field: %d %s", a.status, a.raw)
		}
		// values is required and must be an object: a body without it, or with null, does
		// not wipe what was saved.
		wantRefusal(t, put(ulf.Token, path, `{}`), "values", "required", `values is required`)
		for body, kind := range map[string]string{`{"values":null}`: "null", `{"values":[]}`: "an array", `{"values":"x"}`: "a string", `{"values":7}`: "a number"} {
			wantRefusal(t, put(ulf.Token, path, body), "values", "type", "values must be a JSON object of setting names and values, not "+kind)
		}
		// A number too large for a float64 is refused naming its key, in the settings' words.
		for body, field := range map[string]string{`{"values":{"per_page":1e400}}`: "per_page", `{"values":{"k":-1e400}}`: "k"} {
			a := put(ulf.Token, path, body)
			wantRefusal(t, a, field, map[string]string{"per_page": "type", "k": "unknown_field"}[field], `setting "`+field+`"`)
			for _, internal := range []string{"float64", "json:", "Go value", "values."} {
				if strings.Contains(a.errMessage(), internal) {
					t.Errorf("%s: the message %q shows %q", body, a.errMessage(), internal)
				}
			}
		}
		if got := settingsOf(t, send(t, env, "GET", path, ulf.Token, "", nil)); got.Values["signature"] != "Ulf" || len(got.Values) != 3 {
			t.Fatalf("settings after refusals: %+v", got)
		}
		// {"values": {}} clears them.
		settingsOf(t, put(olle.Token, path, `{"values":{"signature":"Olle"}}`))
		if got := settingsOf(t, put(olle.Token, path, `{"values":{}}`)); len(got.Values) != 0 {
			t.Fatalf("olle's settings after {}: %+v", got.Values)
		}
		// Each user has their own.
		if got := settingsOf(t, send(t, env, "GET", path, olle.Token, "", nil)); len(got.Values) != 0 {
			t.Fatalf("olle sees %+v", got.Values)
		}

		// The editor's settings for a version are apart from production's.
		epath := "/api/v1/editor/tool-versions/" + v1 + "/settings"
		settingsOf(t, put(anna.Token, path, `{"values":{"signature":"Anna in production"}}`))
		if got := settingsOf(t, send(t, env, "GET", epath, anna.Token, "", nil)); len(got.Values) != 0 || len(got.SettingsSchema) != 3 {
			t.Fatalf("editor settings before any: %+v", got)
		}
		settingsOf(t, put(anna.Token, epath, `{"values":{"signature":"Anna in the editor","tone":"casual"}}`))
		if got := settingsOf(t, send(t, env, "GET", path, anna.Token, "", nil)); got.Values["signature"] != "Anna in production" || got.Values["tone"] != nil {
			t.Fatalf("production after an editor save: %+v", got)
		}
		wantRefusal(t, put(anna.Token, epath, `{"values":{"tone":5}}`), "tone", "type", `setting "tone" (enum) must be one of`)
		wantRefusal(t, put(anna.Token, epath, `{"values":null}`), "values", "type", "values must be a JSON object")
		wantRefusal(t, put(anna.Token, epath, `{}`), "values", "required", "values is required")
		wantRefusal(t, put(anna.Token, epath, `{"values":{"tone":1e400}}`), "tone", "type", `setting "tone"`)
		if got := settingsOf(t, send(t, env, "GET", epath, anna.Token, "", nil)); got.Values["tone"] != "casual" {
			t.Fatalf("editor settings after refusals: %+v", got)
		}
		for _, tok := range []string{ulf.Token} {
			if a := send(t, env, "GET", epath, tok, "", nil); a.status != 404 {
				t.Fatalf("editor settings of someone else's version: %d %s", a.status, a.raw)
			}
			if a := put(tok, epath, `{"values":{}}`); a.status != 404 {
				t.Fatalf("PUT editor settings of someone else's version: %d %s", a.status, a.raw)
			}
		}

		// A new published schema: signature is gone, per_page became an enum of strings,
		// tone lost "formal". What no longer fits is dropped field by field; tone stays.
		v2 := send(t, env, "POST", "/api/v1/tools/greet/versions", anna.Token, "application/json", jsonBody(t, map[string]any{
			"source": "def run_tool(i, o):\n    return 'v2'\n", "settings_schema": json.RawMessage(`[{"name":"per_page","kind":"enum","options":[{"value":"10"},{"value":"20"}]},
				{"name":"tone","kind":"enum","options":[{"value":"casual"}]},{"name":"footer","kind":"text"}]`)}))
		if v2.status != 201 {
			t.Fatalf("v2: %d %s", v2.status, v2.raw)
		}
		if p := send(t, env, "POST", "/api/v1/tool-versions/"+v2.body["id"].(string)+"/publish", anna.Token, "", nil); p.status != 200 {
			t.Fatalf("publish v2: %d %s", p.status, p.raw)
		}
		got := settingsOf(t, send(t, env, "GET", path, ulf.Token, "", nil))
		if len(got.Values) != 1 || got.Values["tone"] != "casual" {
			// per_page was saved as the number 20: the enum wants the string "20".
			t.Fatalf("ulf's settings under v2: %+v", got.Values)
		}
		settingsOf(t, put(ulf.Token, path, `{"values":{"per_page":"20","tone":"casual","footer":"Bye"}}`))
		if got := settingsOf(t, send(t, env, "GET", path, ulf.Token, "", nil)); got.Values["per_page"] != "20" || got.Values["footer"] != "Bye" {
			t.Fatalf("ulf's settings saved under v2: %+v", got.Values)
		}
		// The editor settings of v1 still answer to v1's schema.
		if got := settingsOf(t, send(t, env, "GET", epath, anna.Token, "", nil)); got.Values["signature"] != "Anna in the editor" {
			t.Fatalf("v1's editor settings: %+v", got)
		}

		// A tool with nothing published has no production settings yet.
		if a := send(t, env, "POST", "/api/v1/tools", anna.Token, "application/json", strings.NewReader(`{"slug":"draft","title":"Draft","source":"def run_tool(i, o):\n    return 'x'\n"}`)); a.status != 201 {
			t.Fatalf("draft: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/tools/draft/settings", anna.Token, "", nil); a.status != 409 || a.errCode() != "conflict" {
			t.Fatalf("settings of a draft: %d %s", a.status, a.raw)
		}
	})
}
