package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// resultJSON is a succeeded result.json with fields set (or, with absent, removed).
func resultJSON(t *testing.T, fields map[string]any) []byte {
	t.Helper()
	m := map[string]any{"contract_version": 2, "status": "succeeded", "error_summary": nil,
		"outputs": []any{}, "next_actions": []any{}, "artifacts": []any{}}
	for k, v := range fields {
		if v == absent {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var absent = &struct{ absent bool }{}

func md(s string) map[string]any { return map[string]any{"kind": "markdown", "markdown": s} }

func form(id string, fields ...any) map[string]any {
	if fields == nil {
		fields = []any{}
	}
	return map[string]any{"action_id": id, "label": "Do " + id, "kind": "form", "fields": fields}
}

func field(name, kind string, options ...string) map[string]any {
	f := map[string]any{"name": name, "label": name, "kind": kind}
	if options != nil {
		var opts []any
		for _, o := range options {
			opts = append(opts, map[string]any{"value": o, "label": strings.ToUpper(o)})
		}
		f["options"] = opts
	}
	return f
}

func TestParseResultValid(t *testing.T) {
	data := resultJSON(t, map[string]any{
		"outputs": []any{
			map[string]any{"kind": "notice", "level": "info", "message": "2 files"},
			md("# Preview"),
			map[string]any{"kind": "html_sandboxed", "html": "<h1>Hi</h1>"},
			map[string]any{"kind": "table", "title": "Files", "columns": []any{map[string]any{"key": "name", "label": "Namn"}},
				"rows": []any{map[string]any{"name": "index.html"}}},
			map[string]any{"kind": "json", "value": []any{1, "two"}},
			map[string]any{"kind": "vega_lite", "spec": map[string]any{"mark": "bar"}},
		},
		"next_actions": []any{
			map[string]any{"action_id": "convert", "label": "Konvertera till PDF", "kind": "form",
				"fields":  []any{field("page_size", "enum", "a4", "letter"), field("orientation", "enum", "portrait", "landscape")},
				"prefill": map[string]any{"page_size": "a4"}},
			map[string]any{"action_id": "reset", "label": "Börja om", "kind": "form"},
		},
		"state": map[string]any{"step": "preview", "html_files": []any{"index.html"}},
		// As the original's runner lists them, too: a tool may write result.json itself.
		"artifacts": []any{"output/a.pdf", map[string]any{"path": "output/sub/b.png", "bytes": 12}},
	})
	res, err := ParseResult(data, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusSucceeded || res.ErrorSummary != "" || len(res.Notices) != 0 {
		t.Fatalf("status %q, summary %q, notices %v", res.Status, res.ErrorSummary, res.Notices)
	}
	var kinds []string
	for _, o := range res.Outputs {
		kinds = append(kinds, o.Kind)
	}
	if got := strings.Join(kinds, ","); got != "notice,markdown,html_sandboxed,table,json,vega_lite" {
		t.Errorf("output kinds %s", got)
	}
	if res.Outputs[2].HTML != "<h1>Hi</h1>" || res.Outputs[3].Columns[0].Label != "Namn" || res.Outputs[3].Rows[0]["name"] != "index.html" {
		t.Errorf("outputs %+v", res.Outputs)
	}
	if len(res.NextActions) != 2 || res.NextActions[0].Fields[1].Options[1].Value != "landscape" ||
		res.NextActions[0].Prefill["page_size"] != "a4" || res.NextActions[1].Fields == nil {
		t.Errorf("next actions %+v", res.NextActions)
	}
	if string(res.State) != `{"html_files":["index.html"],"step":"preview"}` {
		t.Errorf("state %s", res.State)
	}
	if fmt.Sprint(res.Artifacts) != "[output/a.pdf output/sub/b.png]" {
		t.Errorf("artifacts %v", res.Artifacts)
	}

	if res.ErrorSource != "" {
		t.Errorf("a succeeded result has the error source %q", res.ErrorSource)
	}
	failed, err := ParseResult([]byte(`{"contract_version": 2.0, "status": "failed", "error_summary": "Ingen HTML-fil."}`), DefaultPolicy())
	if err != nil || failed.Status != StatusFailed || failed.ErrorSummary != "Ingen HTML-fil." || failed.Outputs != nil || failed.State != nil {
		t.Errorf("failed result: %+v, %v", failed, err)
	}
	// Without error_source (a tool writing result.json in the original's format), a
	// failed result's summary is the tool's own message.
	if failed.ErrorSource != SourceTool {
		t.Errorf("a failed result without error_source has the source %q, want %q", failed.ErrorSource, SourceTool)
	}
}

// TestParseResultErrorSource: the source the shim writes is read as it is, on failed
// results only.
func TestParseResultErrorSource(t *testing.T) {
	tests := []struct{ data, want string }{
		{`{"contract_version":2,"status":"failed","error_summary":"Tool execution failed (ValueError).","error_source":"crash"}`, SourceCrash},
		{`{"contract_version":2,"status":"failed","error_summary":"Filen saknar kolumnen 'namn'.","error_source":"tool"}`, SourceTool},
		{`{"contract_version":2,"status":"failed","error_summary":"x","error_source":null}`, SourceTool},
		{`{"contract_version":2,"status":"succeeded","error_source":"crash"}`, ""},
	}
	for _, tc := range tests {
		res, err := ParseResult([]byte(tc.data), DefaultPolicy())
		if err != nil || res.ErrorSource != tc.want {
			t.Errorf("%s: source %q, %v; want %q", tc.data, res.ErrorSource, err, tc.want)
		}
	}
}

func TestParseResultViolations(t *testing.T) {
	small := DefaultPolicy()
	small.MaxResultBytes = 100
	tests := []struct {
		name string
		data string
		p    Policy
		want string
	}{
		{"empty", "", DefaultPolicy(), "result.json is empty"},
		{"blank", " \n", DefaultPolicy(), "result.json is empty"},
		{"too large", `{"contract_version":2,"status":"succeeded","error_summary":"` + strings.Repeat("x", 100) + `"}`, small,
			"result.json is 162 bytes, over the limit of 100 bytes"},
		{"bad JSON", `{"contract_version":2,`, DefaultPolicy(), "result.json is not valid JSON"},
		{"trailing data", `{"contract_version":2,"status":"succeeded"}]`, DefaultPolicy(), "result.json is not valid JSON"},
		{"list", `[1]`, DefaultPolicy(), "result.json is a JSON list, not an object"},
		{"null", `null`, DefaultPolicy(), "result.json is null, not an object"},
		{"no version", `{"status":"succeeded"}`, DefaultPolicy(), "runner contract violation: contract_version is missing, want 2"},
		{"version 1", `{"contract_version":1,"status":"succeeded"}`, DefaultPolicy(), "runner contract violation: contract_version is 1, want 2"},
		{"version as string", `{"contract_version":"2","status":"succeeded"}`, DefaultPolicy(), `contract_version is "2", want 2`},
		{"version null", `{"contract_version":null,"status":"succeeded"}`, DefaultPolicy(), `contract_version is null, want 2`},
		{"no status", `{"contract_version":2}`, DefaultPolicy(), `status is missing, want "succeeded" or "failed"`},
		{"bad status", `{"contract_version":2,"status":"ok"}`, DefaultPolicy(), `status is "ok", want "succeeded" or "failed"`},
		{"status not a string", `{"contract_version":2,"status":true}`, DefaultPolicy(), `status is true, want`},
		{"error_summary a number", `{"contract_version":2,"status":"failed","error_summary":5}`, DefaultPolicy(), "error_summary is a JSON number, want a string"},
		{"error_source a number", `{"contract_version":2,"status":"failed","error_source":1}`, DefaultPolicy(), "error_source is a JSON number, want a string"},
		// Only the tool's side says where it failed: the runner and the policy are the
		// server's to say.
		{"error_source runner", `{"contract_version":2,"status":"failed","error_source":"runner"}`, DefaultPolicy(), `error_source is "runner", want "tool", "crash" or "input"`},
		{"error_field a number", `{"contract_version":2,"status":"failed","error_source":"input","error_field":1}`, DefaultPolicy(), "error_field is a JSON number, want a string"},
		{"artifacts a string", `{"contract_version":2,"status":"succeeded","artifacts":"output/a"}`, DefaultPolicy(), "artifacts is a JSON string, want a list of paths"},
		{"artifacts with a number", `{"contract_version":2,"status":"succeeded","artifacts":[1]}`, DefaultPolicy(), "artifacts holds a JSON number"},
		{"artifact object without a path", `{"contract_version":2,"status":"succeeded","artifacts":[{"bytes":1}]}`, DefaultPolicy(), "artifacts holds a JSON null"},
		// The original hub's schema refuses the whole result for it, and so the run.
		{"vega spec not an object", `{"contract_version":2,"status":"succeeded","outputs":[{"kind":"markdown","markdown":"x"},{"kind":"vega_lite","spec":"bar"}]}`,
			DefaultPolicy(), "output 2 (vega_lite): its spec is a JSON string, not an object"},
		{"vega spec a list", `{"contract_version":2,"status":"succeeded","outputs":[{"kind":"vega_lite","spec":[]}]}`, DefaultPolicy(), "its spec is a JSON list"},
		{"vega spec missing", `{"contract_version":2,"status":"succeeded","outputs":[{"kind":"vega_lite"}]}`, DefaultPolicy(), "its spec is a JSON null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseResult([]byte(tc.data), tc.p)
			if !errors.Is(err, ErrViolation) {
				t.Fatalf("err = %v, want ErrViolation", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "runner contract violation: ") {
				t.Fatalf("err = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseResultDrops(t *testing.T) {
	keepA, keepB := md("keep A"), md("keep B")
	many := func(n int, f func(i int) any) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = f(i)
		}
		return l
	}
	col := func(i int) any { return map[string]any{"key": fmt.Sprint("c", i), "label": "C"} }
	row := func(int) any { return map[string]any{"c0": 1} }
	tests := []struct {
		name    string
		outputs []any          // placed between keepA and keepB
		actions []any          // placed after the valid action "ok"
		set     map[string]any // replaces whole keys
		notices []string       // one substring per notice expected, in order
		cut     bool           // the output is cut to size in place, not replaced by a notice
		check   func(t *testing.T, r Result)
	}{
		{name: "markdown at its limit", outputs: []any{md(strings.Repeat("x", 64<<10))}},
		{name: "markdown over", outputs: []any{md(strings.Repeat("x", 64<<10+1))}, cut: true,
			notices: []string{"Systemmeddelande: 1 markdown-utdata kortades till 65536 byte."},
			check: func(t *testing.T, r Result) {
				if r.Outputs[1].Markdown != strings.Repeat("x", 64<<10) || r.Outputs[len(r.Outputs)-1].Message != r.Notices[0].Message {
					t.Errorf("markdown of %d bytes, outputs end with %+v", len(r.Outputs[1].Markdown), r.Outputs[len(r.Outputs)-1])
				}
			}},
		{name: "markdown over, cut at a character", outputs: []any{md(strings.Repeat("x", 64<<10-1) + "åäö"), md(strings.Repeat("y", 64<<10+5))}, cut: true,
			notices: []string{"Systemmeddelande: 2 markdown-utdata kortades till 65536 byte."},
			check: func(t *testing.T, r Result) {
				if r.Outputs[1].Markdown != strings.Repeat("x", 64<<10-1) || len(r.Outputs[2].Markdown) != 64<<10 {
					t.Errorf("markdown of %d and %d bytes", len(r.Outputs[1].Markdown), len(r.Outputs[2].Markdown))
				}
			}},
		{name: "html at its limit", outputs: []any{map[string]any{"kind": "html_sandboxed", "html": strings.Repeat("<", 96<<10)}}},
		{name: "html over", outputs: []any{map[string]any{"kind": "html_sandboxed", "html": strings.Repeat("<", 96<<10+1)}}, cut: true,
			notices: []string{"Systemmeddelande: 1 html_sandboxed-utdata kortades till 98304 byte."},
			check: func(t *testing.T, r Result) {
				if len(r.Outputs[1].HTML) != 96<<10 {
					t.Errorf("html of %d bytes", len(r.Outputs[1].HTML))
				}
			}},
		{name: "json at its limit", outputs: []any{map[string]any{"kind": "json", "value": strings.Repeat("&", 96<<10-2)}}},
		{name: "json over", outputs: []any{map[string]any{"kind": "json", "value": strings.Repeat("&", 96<<10-1)}},
			notices: []string{"Output 2 (json) was dropped: it is 98305 bytes, over the limit of 98304 bytes (96 KiB) for a json value."}},
		{name: "vega over", outputs: []any{map[string]any{"kind": "vega_lite", "spec": map[string]any{"d": strings.Repeat("x", 256<<10)}}},
			notices: []string{"over the limit of 262144 bytes (256 KiB) for a vega_lite spec"}},
		{name: "table at its limits", outputs: []any{map[string]any{"kind": "table", "columns": many(40, col), "rows": many(750, row)}}},
		{name: "table over rows", outputs: []any{map[string]any{"kind": "table", "columns": many(1, col), "rows": many(751, row)}}, cut: true,
			notices: []string{"Systemmeddelande: 1 tabeller kortades till plattformens gränser för rader, kolumner och celler."},
			check: func(t *testing.T, r Result) {
				if len(r.Outputs[1].Rows) != 750 || len(r.Outputs[1].Columns) != 1 {
					t.Errorf("table of %d rows", len(r.Outputs[1].Rows))
				}
			}},
		{name: "table over columns", outputs: []any{map[string]any{"kind": "table", "columns": many(41, col),
			"rows": []any{map[string]any{"c0": 1, "c40": 2, "other": 3}}}}, cut: true,
			notices: []string{"Systemmeddelande: 1 tabeller kortades"},
			check: func(t *testing.T, r Result) {
				if len(r.Outputs[1].Columns) != 40 || fmt.Sprint(r.Outputs[1].Rows) != "[map[c0:1]]" {
					t.Errorf("table of %d columns, rows %v", len(r.Outputs[1].Columns), r.Outputs[1].Rows)
				}
			}},
		{name: "table cell over", outputs: []any{map[string]any{"kind": "table", "columns": many(1, col),
			"rows": []any{map[string]any{"c0": strings.Repeat("é", 300)}, map[string]any{"c0": "kort"}}}}, cut: true,
			notices: []string{"Systemmeddelande: 1 tabeller kortades"},
			check: func(t *testing.T, r Result) {
				if r.Outputs[1].Rows[0]["c0"] != strings.Repeat("é", 256) || r.Outputs[1].Rows[1]["c0"] != "kort" {
					t.Errorf("rows %.80v", r.Outputs[1].Rows)
				}
			}},
		{name: "table column without key", outputs: []any{map[string]any{"kind": "table", "columns": []any{map[string]any{"label": "x"}}}},
			notices: []string{"its column 1 has no key"}},
		{name: "table column key twice", outputs: []any{map[string]any{"kind": "table", "columns": []any{col(1), col(1)}}},
			notices: []string{`it has two columns with the key "c1"`}},
		{name: "table row not an object", outputs: []any{map[string]any{"kind": "table", "columns": []any{col(1)}, "rows": []any{"x"}}},
			notices: []string{"Output 2 (table) was dropped: its rows is a JSON string, want an object."}},
		{name: "unknown kind", outputs: []any{map[string]any{"kind": "image", "src": "x.png"}},
			notices: []string{`Output 2 was dropped: its kind "image" is unknown (known kinds: notice, markdown, table, json, html_sandboxed, vega_lite).`}},
		{name: "no kind", outputs: []any{map[string]any{"markdown": "x"}}, notices: []string{"Output 2 was dropped: it has no kind."}},
		{name: "notice level", outputs: []any{map[string]any{"kind": "notice", "level": "debug", "message": "m"}},
			notices: []string{`Output 2 (notice) was dropped: its level is "debug", want "info", "warning" or "error".`}},
		{name: "output a string", outputs: []any{"hello"}, notices: []string{"Output 2 was dropped: it is a JSON string, not an object."}},
		{name: "output null", outputs: []any{nil}, notices: []string{"Output 2 was dropped: it is null."}},
		{name: "output field of the wrong type", outputs: []any{map[string]any{"kind": "markdown", "markdown": 5}},
			notices: []string{"Output 2 (markdown) was dropped: its markdown is a JSON number, want a string."}},
		{name: "two drops in place", outputs: []any{map[string]any{"kind": "json", "value": strings.Repeat("&", 96<<10)}, md("fine"), "x"},
			notices: []string{"Output 2 (json)", "Output 4 was dropped"},
			check: func(t *testing.T, r Result) {
				if len(r.Outputs) != 5 || r.Outputs[1].Kind != KindNotice || r.Outputs[2].Markdown != "fine" || r.Outputs[3].Kind != KindNotice {
					t.Errorf("outputs %+v", r.Outputs)
				}
			}},
		{name: "outputs not a list", set: map[string]any{"outputs": map[string]any{"kind": "markdown"}},
			notices: []string{"The result's outputs were dropped: they are a JSON object, not a list."}},
		{name: "next actions at their limit", actions: many(9, func(i int) any { return form(fmt.Sprint("a", i)) })},
		{name: "next actions over", actions: many(11, func(i int) any { return form(fmt.Sprint("a", i)) }),
			notices: []string{"Next actions 11 to 12 of 12 were dropped: over the limit of 10 next_actions per result."},
			check: func(t *testing.T, r Result) {
				if len(r.NextActions) != 10 || r.NextActions[9].ActionID != "a8" {
					t.Errorf("%d next actions kept", len(r.NextActions))
				}
			}},
		{name: "fields at their limit", actions: []any{form("f", many(25, func(i int) any { return field(fmt.Sprint("f", i), "string") })...)}},
		{name: "fields over", actions: []any{form("f", many(26, func(i int) any { return field(fmt.Sprint("f", i), "string") })...)},
			notices: []string{`Next action 2 ("f") was dropped: it has 26 fields, over the limit of 25 fields per action.`}},
		{name: "no action_id", actions: []any{map[string]any{"label": "x", "kind": "form"}},
			notices: []string{"Next action 2 was dropped: it has no action_id."}},
		{name: "no label", actions: []any{map[string]any{"action_id": "x", "kind": "form"}},
			notices: []string{`Next action 2 ("x") was dropped: it has no label.`}},
		{name: "kind not form", actions: []any{map[string]any{"action_id": "x", "label": "X", "kind": "modal"}},
			notices: []string{`its kind is "modal", want "form"`}},
		{name: "no kind on an action", actions: []any{map[string]any{"action_id": "x", "label": "X"}},
			notices: []string{`its kind is "", want "form"`}},
		{name: "unknown field kind", actions: []any{form("x", field("d", "date"))},
			notices: []string{`its field "d" has the kind "date" (known kinds: string, text, integer, number, boolean, enum, multi_enum)`}},
		{name: "enum without options", actions: []any{form("x", field("e", "enum"))},
			notices: []string{`its field "e" (enum) has no options`}},
		{name: "multi_enum without options", actions: []any{form("x", field("e", "multi_enum"))},
			notices: []string{`its field "e" (multi_enum) has no options`}},
		{name: "option value twice", actions: []any{form("x", field("e", "enum", "a", "a"))},
			notices: []string{`its field "e" has the option value "a" twice`}},
		{name: "field without name", actions: []any{form("x", field("", "string"))},
			notices: []string{"its field 1 has no name"}},
		{name: "field name twice", actions: []any{form("x", field("a", "string"), field("a", "text"))},
			notices: []string{`it has two fields named "a"`}},
		{name: "duplicate action_id", actions: []any{form("ok")},
			notices: []string{`Next action 2 ("ok") was dropped: an earlier action has the same action_id.`}},
		{name: "action not an object", actions: []any{"convert"},
			notices: []string{"Next action 2 was dropped: it is a JSON string, not an object."}},
		{name: "action fields of the wrong type", actions: []any{map[string]any{"action_id": "x", "label": "X", "kind": "form", "fields": "page_size"}},
			notices: []string{`Next action 2 ("x") was dropped: its fields is a JSON string, want a list.`}},
		{name: "bad prefill", actions: []any{func() any {
			a := form("p", field("n", "integer"), field("s", "string"))
			a["prefill"] = map[string]any{"n": 1.5, "s": "x"}
			return a
		}()},
			// As the original hub: only the entry that does not fit is dropped.
			notices: []string{`The prefill of next action 2 ("p") lost an entry: input field "n" (integer) must be a whole number`},
			check: func(t *testing.T, r Result) {
				if len(r.NextActions) != 2 || fmt.Sprint(r.NextActions[1].Prefill) != "map[s:x]" {
					t.Errorf("next actions %+v", r.NextActions)
				}
			}},
		{name: "prefill of an unknown field", actions: []any{func() any {
			a := form("p", field("s", "string"))
			a["prefill"] = map[string]any{"nope": "y", "s": "x"}
			return a
		}()},
			notices: []string{`The prefill of next action 2 ("p") lost an entry: input field "nope" is not a field of action "p"`},
			check: func(t *testing.T, r Result) {
				if fmt.Sprint(r.NextActions[1].Prefill) != "map[s:x]" {
					t.Errorf("prefill %v", r.NextActions[1].Prefill)
				}
			}},
		{name: "prefill with null", actions: []any{func() any {
			a := form("p", field("n", "integer"), field("s", "string"))
			a["prefill"] = map[string]any{"n": nil, "s": "x"}
			return a
		}()},
			check: func(t *testing.T, r Result) {
				if fmt.Sprint(r.NextActions[1].Prefill) != "map[s:x]" {
					t.Errorf("prefill %v", r.NextActions[1].Prefill)
				}
			}},
		{name: "next_actions not a list", set: map[string]any{"next_actions": "convert"},
			notices: []string{"The result's next_actions were dropped: they are a JSON string, not a list."}},
		{name: "state over", set: map[string]any{"state": map[string]any{"s": strings.Repeat("x", 64<<10)}},
			notices: []string{"Systemmeddelande: State kortades för att rymmas inom 65536 byte (1 nycklar togs bort)."},
			check: func(t *testing.T, r Result) {
				if string(r.State) != "{}" {
					t.Errorf("state kept: %d bytes", len(r.State))
				}
			}},
		// The original's rule: the most keys, in sorted order, that fit; "c" fits but
		// comes after "b", which does not.
		{name: "state over, keys in order", set: map[string]any{"state": map[string]any{"b": strings.Repeat("x", 64<<10), "a": 1, "c": 2}},
			notices: []string{"(2 nycklar togs bort)"},
			check: func(t *testing.T, r Result) {
				if string(r.State) != `{"a":1}` {
					t.Errorf("state kept: %.80s", r.State)
				}
			}},
		{name: "state a list", set: map[string]any{"state": []any{1}},
			notices: []string{"The result's state was dropped: it is a JSON list; state must be an object or null."}},
		{name: "bad artifacts", set: map[string]any{"artifacts": []any{"output/a.txt", "../x", "output/../x", "/etc/passwd", "output/", "output/./a", "output/a//b", "output/a/"}},
			notices: []string{`7 artifact paths listed in the result were ignored: they are not plain paths under output/ (the first is "../x").`},
			check: func(t *testing.T, r Result) {
				if fmt.Sprint(r.Artifacts) != "[output/a.txt]" {
					t.Errorf("artifacts %v", r.Artifacts)
				}
			}},
		{name: "several at once", outputs: []any{map[string]any{"kind": "image"}}, actions: []any{form("ok")},
			set:     map[string]any{"state": "x"},
			notices: []string{"Output 2 was dropped", `Next action 2 ("ok") was dropped`, "The result's state was dropped"},
			check: func(t *testing.T, r Result) {
				if len(r.Outputs) != 5 || r.Outputs[3].Message != r.Notices[1].Message {
					t.Errorf("outputs %+v", r.Outputs)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fields := map[string]any{
				"outputs":      append(append([]any{keepA}, tc.outputs...), keepB),
				"next_actions": append([]any{form("ok", field("n", "integer"))}, tc.actions...),
				"state":        map[string]any{"step": "x"},
				"artifacts":    []any{"output/a.txt"},
			}
			for k, v := range tc.set {
				fields[k] = v
			}
			res, err := ParseResult(resultJSON(t, fields), DefaultPolicy())
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Notices) != len(tc.notices) {
				t.Fatalf("%d notices, want %d: %+v", len(res.Notices), len(tc.notices), res.Notices)
			}
			for i, n := range res.Notices {
				if n.Kind != KindNotice || n.Level != LevelWarning || !strings.Contains(n.Message, tc.notices[i]) {
					t.Errorf("notice %d = %+v\nwant it to contain %q", i, n, tc.notices[i])
				}
				if !slices.ContainsFunc(res.Outputs, func(o Output) bool { return o.Kind == KindNotice && o.Message == n.Message }) {
					t.Errorf("notice %q is not among the outputs", n.Message)
				}
			}
			if _, ok := tc.set["outputs"]; !ok {
				if res.Outputs[0].Markdown != "keep A" || !slices.ContainsFunc(res.Outputs, func(o Output) bool { return o.Markdown == "keep B" }) {
					t.Errorf("the valid outputs did not survive: %+v", res.Outputs)
				}
				if len(tc.outputs) > 0 && len(tc.notices) > 0 && !tc.cut && res.Outputs[1].Kind != KindNotice {
					t.Errorf("the dropped output was not replaced in place: %+v", res.Outputs[1])
				}
				if tc.cut && res.Outputs[1].Kind == KindNotice {
					t.Errorf("the output was replaced, not cut: %+v", res.Outputs[1])
				}
			}
			if _, ok := tc.set["next_actions"]; !ok && (len(res.NextActions) == 0 || res.NextActions[0].ActionID != "ok") {
				t.Errorf("the valid next action did not survive: %+v", res.NextActions)
			}
			if _, ok := tc.set["state"]; !ok && string(res.State) != `{"step":"x"}` {
				t.Errorf("state = %s", res.State)
			}
			if len(res.Outputs) > DefaultPolicy().MaxOutputs+len(res.Notices) {
				t.Errorf("%d outputs", len(res.Outputs))
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

// TestParseResultOutputLimit pins the rule: the tool's outputs past MaxOutputs give way to
// one notice, and skrip's notices come on top: a tool never loses an output to them.
func TestParseResultOutputLimit(t *testing.T) {
	tests := []struct {
		outputs   int
		badState  bool
		wantKept  int
		wantTotal int
		overflow  string
	}{
		{outputs: 50, wantKept: 50, wantTotal: 50},
		{outputs: 51, wantKept: 50, wantTotal: 51, overflow: "Outputs 51 to 51 of 51 were dropped: over the limit of 50 outputs per result."},
		{outputs: 500, wantKept: 50, wantTotal: 51, overflow: "Outputs 51 to 500 of 500 were dropped"},
		{outputs: 49, badState: true, wantKept: 49, wantTotal: 50},
		{outputs: 50, badState: true, wantKept: 50, wantTotal: 51},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d outputs, bad state %v", tc.outputs, tc.badState), func(t *testing.T) {
			outs := make([]any, tc.outputs)
			for i := range outs {
				outs[i] = md(fmt.Sprint("o", i))
			}
			fields := map[string]any{"outputs": outs}
			if tc.badState {
				fields["state"] = 5
			}
			res, err := ParseResult(resultJSON(t, fields), DefaultPolicy())
			if err != nil {
				t.Fatal(err)
			}
			kept := 0
			for i, o := range res.Outputs {
				if o.Kind == KindMarkdown {
					if o.Markdown != fmt.Sprint("o", i) {
						t.Fatalf("output %d is %q", i, o.Markdown)
					}
					kept++
				}
			}
			if kept != tc.wantKept || len(res.Outputs) != tc.wantTotal {
				t.Fatalf("kept %d of %d outputs, want %d of %d", kept, len(res.Outputs), tc.wantKept, tc.wantTotal)
			}
			if tc.overflow != "" && !strings.Contains(res.Outputs[tc.wantKept].Message, tc.overflow) {
				t.Errorf("overflow notice %q, want %q", res.Outputs[tc.wantKept].Message, tc.overflow)
			}
		})
	}
}

func TestParseResultState(t *testing.T) {
	tests := []struct {
		name   string
		raw    string // the "state" member, or "" for none
		want   string // Result.State; "<nil>" for nil
		notice string
	}{
		{"absent", "", "<nil>", ""},
		{"null", `"state": null`, "null", ""},
		{"empty object", `"state": {}`, "{}", ""},
		{"compacted and sorted", `"state": { "b": [1, 2.50], "a": "<b>&" }`, `{"a":"<b>&","b":[1,2.50]}`, ""},
		{"at the limit", `"state": {"s":"` + strings.Repeat("x", 64<<10-8) + `"}`, `{"s":"` + strings.Repeat("x", 64<<10-8) + `"}`, ""},
		{"over the limit", `"state": {"s":"` + strings.Repeat("x", 64<<10-7) + `"}`, "{}", "State kortades för att rymmas inom 65536 byte (1 nycklar togs bort)"},
		{"a list", `"state": []`, "<nil>", "it is a JSON list; state must be an object or null"},
		{"a string", `"state": "x"`, "<nil>", "it is a JSON string"},
		{"a number", `"state": 1`, "<nil>", "it is a JSON number"},
		{"false", `"state": false`, "<nil>", "it is a JSON boolean"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := `{"contract_version": 2, "status": "succeeded"`
			if tc.raw != "" {
				data += ", " + tc.raw
			}
			res, err := ParseResult([]byte(data+"}"), DefaultPolicy())
			if err != nil {
				t.Fatal(err)
			}
			got := string(res.State)
			if res.State == nil {
				got = "<nil>"
			}
			if got != tc.want {
				t.Errorf("State = %.80s, want %.80s", got, tc.want)
			}
			switch {
			case tc.notice == "" && len(res.Notices) > 0:
				t.Errorf("notices %+v", res.Notices)
			case tc.notice != "" && (len(res.Notices) != 1 || !strings.Contains(res.Notices[0].Message, tc.notice)):
				t.Errorf("notices %+v, want one containing %q", res.Notices, tc.notice)
			}
		})
	}
}

// TestParseResultKinds: an output of a kind the policy does not allow is dropped in
// place with a notice, as the original hub's profiles drop it.
func TestParseResultKinds(t *testing.T) {
	p := DefaultPolicy()
	p.Kinds = []string{KindNotice, KindMarkdown, KindTable, KindJSON, KindHTML} // the original's "default" profile
	data := resultJSON(t, map[string]any{"outputs": []any{
		md("a"), map[string]any{"kind": "vega_lite", "spec": map[string]any{"mark": "bar"}}, md("b")}})
	res, err := ParseResult(data, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 3 || res.Outputs[1].Kind != KindNotice ||
		res.Outputs[1].Message != `Output 2 (vega_lite) was dropped: its kind "vega_lite" is not allowed by the policy (allowed: notice, markdown, table, json, html_sandboxed).` {
		t.Errorf("outputs %+v", res.Outputs)
	}
	if res, err := ParseResult(data, DefaultPolicy()); err != nil || len(res.Notices) != 0 || res.Outputs[1].Kind != KindVegaLite {
		t.Errorf("the default policy: %+v, %v", res.Outputs, err)
	}
}
