package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/errs"
)

// wantErr checks that err is an *errs.Error of kind whose details carry field and rule
// and whose message holds msg.
func wantErr(t *testing.T, err, kind error, field, rule, msg string) {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) || !errors.Is(err, kind) {
		t.Fatalf("error = %#v, want an *errs.Error of %v", err, kind)
	}
	if e.Details["field"] != field || e.Details["rule"] != rule {
		t.Fatalf("details = %v, want field %q and rule %q", e.Details, field, rule)
	}
	if !strings.Contains(e.Message, msg) {
		t.Fatalf("message %q\nwant it to contain %q", e.Message, msg)
	}
}

func TestParseInputSchema(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		maxFiles int
		want     string // canonical JSON when valid
		rule     string // else the rule broken
		field    string // and the schema_field named ("": none)
		msg      string // and a part of the message
	}{
		{name: "absent", raw: "", want: "null"},
		{name: "null", raw: " null ", want: "null"},
		{name: "empty list", raw: "[]", want: "[]"},
		{name: "every kind", maxFiles: 20,
			raw: `[{"name":" title ","label":" Title ","kind":"string"},{"name":"body","label":"Body","kind":"text"},
				{"name":"n","label":"N","kind":"integer"},{"name":"x","label":"X","kind":"number"},{"name":"ok","label":"OK","kind":"boolean"},
				{"name":"size","label":"Size","kind":"enum","options":[{"value":" a4 ","label":"A4"},{"value":"letter","label":"Letter"}]},
				{"name":"docs","label":"Documents","kind":"file","accept":[".pdf"," .DOCX",".docx",".tar.gz"],"min":1,"max":20}]`,
			want: `[{"name":"title","label":"Title","kind":"string"},{"name":"body","label":"Body","kind":"text"},{"name":"n","label":"N","kind":"integer"},` +
				`{"name":"x","label":"X","kind":"number"},{"name":"ok","label":"OK","kind":"boolean"},` +
				`{"name":"size","label":"Size","kind":"enum","options":[{"value":"a4","label":"A4"},{"value":"letter","label":"Letter"}]},` +
				`{"name":"docs","label":"Documents","kind":"file","accept":[".pdf",".DOCX",".tar.gz"],"min":1,"max":20}]`},
		{name: "min defaults to 0", raw: `[{"name":"f","kind":"file","max":3}]`, maxFiles: 20,
			want: `[{"name":"f","label":"","kind":"file","min":0,"max":3}]`},
		{name: "no cap for stored schemas", raw: `[{"name":"f","kind":"file","min":0,"max":500}]`, maxFiles: 0,
			want: `[{"name":"f","label":"","kind":"file","min":0,"max":500}]`},

		{name: "not JSON", raw: `[{`, rule: RuleJSON, msg: "input_schema must be a JSON list of fields"},
		{name: "an object", raw: `{"name":"x"}`, rule: RuleJSON, msg: "it is a JSON object"},
		{name: "a list of strings", raw: `["title"]`, rule: RuleJSON, msg: "input_schema field 1 must be a JSON object"},
		{name: "null field", raw: `[null]`, rule: RuleJSON, msg: "input_schema field 1 must be a JSON object"},
		{name: "name a number", raw: `[{"name":5,"kind":"string"}]`, rule: RuleJSON, msg: `input_schema field 1: "name" must be a string; it is 5`},
		{name: "min a string", raw: `[{"name":"f","kind":"file","min":"1","max":2}]`, maxFiles: 20, rule: RuleJSON, field: "f", msg: `"min" must be a whole number; it is "1"`},
		{name: "max a fraction", raw: `[{"name":"f","kind":"file","max":1.5}]`, maxFiles: 20, rule: RuleJSON, field: "f", msg: `"max" must be a whole number`},
		{name: "no name", raw: `[{"label":"Title","kind":"string"}]`, rule: RuleName, msg: "input_schema field 1 has no name"},
		{name: "blank name", raw: `[{"name":"  ","kind":"string"}]`, rule: RuleName, msg: "has no name"},
		{name: "long name", raw: `[{"name":"` + strings.Repeat("n", 101) + `","kind":"string"}]`, rule: RuleName, field: strings.Repeat("n", 60) + "…", msg: "the name is 101 bytes; the limit is 100"},
		{name: "control character in name", raw: `[{"name":"a\u0007b","kind":"string"}]`, rule: RuleName, field: "a\ab", msg: "control characters"},
		{name: "twice the same name", raw: `[{"name":"a","kind":"string"},{"name":" a","kind":"integer"}]`, rule: RuleUnique, field: "a", msg: `input_schema has two fields named "a"`},
		{name: "unknown kind", raw: `[{"name":"d","kind":"date"}]`, rule: RuleKind, field: "d", msg: `input_schema field 1 ("d") has the kind "date"; input_schema kinds are string, text, integer, number, boolean, enum, file`},
		{name: "no kind", raw: `[{"name":"d"}]`, rule: RuleKind, field: "d", msg: `has the kind ""`},
		{name: "multi_enum is no input kind", raw: `[{"name":"m","kind":"multi_enum","options":[{"value":"a"}]}]`, rule: RuleKind, field: "m", msg: "input_schema kinds are"},
		{name: "unknown key", raw: `[{"name":"t","kind":"string","required":true}]`, rule: RuleUnknownKey, field: "t", msg: `has the unknown key "required"; a field has name, label, kind, options`},
		{name: "accept on a string", raw: `[{"name":"t","kind":"string","accept":[".pdf"]}]`, rule: RuleFileOnly, field: "t", msg: `has "accept", which only the file field may have`},
		{name: "two file fields", raw: `[{"name":"a","kind":"file","max":1},{"name":"b","kind":"file","max":1}]`, maxFiles: 20, rule: RuleOneFileField, field: "b", msg: `two file fields, "a" and "b"`},
		{name: "enum without options", raw: `[{"name":"e","kind":"enum"}]`, rule: RuleOptions, field: "e", msg: `input_schema field 1 ("e") (enum) has no options`},
		{name: "options on a string", raw: `[{"name":"s","kind":"string","options":[{"value":"a"}]}]`, rule: RuleOptions, field: "s", msg: "only enum and multi_enum fields do"},
		{name: "empty option value", raw: `[{"name":"e","kind":"enum","options":[{"value":" "}]}]`, rule: RuleOptions, field: "e", msg: "option 1 has an empty value"},
		{name: "repeated option value", raw: `[{"name":"e","kind":"enum","options":[{"value":"a"},{"value":"a "}]}]`, rule: RuleOptions, field: "e", msg: `the option value "a" twice`},
		{name: "no max", raw: `[{"name":"f","kind":"file","min":1}]`, maxFiles: 20, rule: RuleMax, field: "f", msg: "needs max"},
		{name: "negative min", raw: `[{"name":"f","kind":"file","min":-1,"max":1}]`, maxFiles: 20, rule: RuleMin, field: "f", msg: "min is -1; it must be 0 or more"},
		{name: "max 0", raw: `[{"name":"f","kind":"file","min":0,"max":0}]`, maxFiles: 20, rule: RuleMax, field: "f", msg: "max is 0; it must be at least 1"},
		{name: "min over max", raw: `[{"name":"f","kind":"file","min":3,"max":2}]`, maxFiles: 20, rule: RuleMin, field: "f", msg: "min 3 is more than max 2"},
		{name: "max over the upload cap", raw: `[{"name":"f","kind":"file","max":21}]`, maxFiles: 20, rule: RuleMax, field: "f", msg: "max 21 is over the upload limit of 20 files per run (SKRIP_UPLOAD_MAX_FILES)"},
		{name: "accept a MIME type", raw: `[{"name":"f","kind":"file","max":1,"accept":["application/pdf"]}]`, maxFiles: 20, rule: RuleAccept, field: "f", msg: `accept entry "application/pdf" is not a file extension like ".pdf"`},
		{name: "accept without dot", raw: `[{"name":"f","kind":"file","max":1,"accept":["pdf"]}]`, maxFiles: 20, rule: RuleAccept, field: "f", msg: `accept entry "pdf"`},
		{name: "accept a bare dot", raw: `[{"name":"f","kind":"file","max":1,"accept":["."]}]`, maxFiles: 20, rule: RuleAccept, field: "f", msg: `accept entry "."`},
		{name: "accept a wildcard", raw: `[{"name":"f","kind":"file","max":1,"accept":[".*"]}]`, maxFiles: 20, rule: RuleAccept, field: "f", msg: `accept entry ".*"`},
		{name: "too many fields", raw: "[" + strings.Repeat(`{"name":"x","kind":"string"},`, MaxSchemaFields) + `{"name":"y","kind":"string"}]`, rule: RuleTooLarge, msg: "input_schema has 51 fields; the limit is 50"},
		{name: "too many bytes", raw: `[{"name":"x","label":"` + strings.Repeat("l", MaxSchemaBytes) + `","kind":"string"}]`, rule: RuleTooLarge, msg: "the limit is 65536 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseInputSchema(json.RawMessage(tc.raw), tc.maxFiles)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("ParseInputSchema = %v", err)
				}
				got, _ := json.Marshal(s)
				if string(got) != tc.want {
					t.Fatalf("schema\n%s\nwant\n%s", got, tc.want)
				}
				again, err := ParseInputSchema(got, tc.maxFiles)
				if err != nil || !reflect.DeepEqual(again, s) {
					t.Fatalf("the canonical schema parses to %+v, %v; want it unchanged", again, err)
				}
				return
			}
			wantErr(t, err, ErrInvalidSchema, "input_schema", tc.rule, tc.msg)
			var e *errs.Error
			errors.As(err, &e)
			if name, _ := e.Details["schema_field"].(string); name != tc.field {
				t.Fatalf("schema_field = %q, want %q", name, tc.field)
			}
		})
	}
}

func TestParseSettingsSchema(t *testing.T) {
	s, err := ParseSettingsSchema(json.RawMessage(`[{"name":"tone","label":"Tone","kind":"enum","options":[{"value":"formal","label":"Formal"},{"value":"casual","label":"Casual"}]},
		{"name":"tags","label":"Tags","kind":"multi_enum","options":[{"value":"a","label":"A"}]},{"name":"signature","label":"Signature","kind":"text"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 3 || s[1].Kind != FieldMultiEnum || s[0].Options[1].Value != "casual" {
		t.Fatalf("schema %+v", s)
	}
	if s, err := ParseSettingsSchema(nil); s != nil || err != nil {
		t.Fatalf("nil schema = %v, %v", s, err)
	}
	for _, tc := range []struct{ raw, rule, msg string }{
		{`[{"name":"f","kind":"file","max":1}]`, RuleKind, `settings_schema field 1 ("f") has the kind "file"; settings_schema kinds are string, text, integer, number, boolean, enum, multi_enum`},
		{`[{"name":"m","kind":"multi_enum"}]`, RuleOptions, "(multi_enum) has no options"},
		{`[{"name":"a","kind":"string","min":1}]`, RuleFileOnly, `has "min", which only the file field may have`},
		{`{}`, RuleJSON, "settings_schema must be a JSON list"},
	} {
		_, err := ParseSettingsSchema(json.RawMessage(tc.raw))
		wantErr(t, err, ErrInvalidSchema, "settings_schema", tc.rule, tc.msg)
	}
}

// testSchema is an input_schema with one field of every kind and a file field taking 1
// to 3 PDFs or Word files.
func testSchema(t *testing.T) InputSchema {
	t.Helper()
	s, err := ParseInputSchema(json.RawMessage(`[{"name":"name","label":"Name","kind":"string"},{"name":"notes","label":"Notes","kind":"text"},
		{"name":"size","label":"Group size","kind":"integer"},{"name":"ratio","label":"Ratio","kind":"number"},{"name":"shuffle","label":"Shuffle","kind":"boolean"},
		{"name":"paper","label":"Paper","kind":"enum","options":[{"value":"a4","label":"A4"},{"value":"letter","label":"Letter"}]},
		{"name":"docs","label":"Documents","kind":"file","accept":[".pdf",".DOCX"],"min":1,"max":3}]`), 20)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNormalizeInputs(t *testing.T) {
	s := testSchema(t)
	pdf := []string{"a.pdf"}
	tests := []struct {
		name   string
		inputs map[string]any
		files  []string
		want   map[string]any // when valid
		field  string         // else the field named
		rule   string         // and the rule broken
		msg    string
	}{
		{name: "nothing but a file", files: pdf, want: map[string]any{}},
		{name: "every kind", files: []string{"A.PDF", "b.docx", "c.Docx"},
			inputs: map[string]any{"name": "  Ada ", "notes": "line\n", "size": 4.0, "ratio": 0.5, "shuffle": true, "paper": "letter"},
			want:   map[string]any{"name": "Ada", "notes": "line", "size": int64(4), "ratio": 0.5, "shuffle": true, "paper": "letter"}},
		{name: "numeric strings are coerced", files: pdf,
			inputs: map[string]any{"size": " 12 ", "ratio": "-1.5e2"},
			want:   map[string]any{"size": int64(12), "ratio": -150.0}},
		{name: "integer as json.Number", files: pdf, inputs: map[string]any{"size": json.Number("9007199254740991")},
			want: map[string]any{"size": int64(9007199254740991)}},
		{name: "integer with a sign", files: pdf, inputs: map[string]any{"size": " +3 "}, want: map[string]any{"size": int64(3)}},
		{name: "number given a whole number", files: pdf, inputs: map[string]any{"ratio": 2}, want: map[string]any{"ratio": 2.0}},
		{name: "null and empty strings are left out", files: pdf,
			inputs: map[string]any{"name": nil, "notes": "   ", "size": "", "ratio": nil, "shuffle": nil, "paper": " "},
			want:   map[string]any{}},
		{name: "enum trimmed", files: pdf, inputs: map[string]any{"paper": " a4 "}, want: map[string]any{"paper": "a4"}},
		// The strings the original hub takes for a boolean.
		{name: "boolean yes", files: pdf, inputs: map[string]any{"shuffle": "yes"}, want: map[string]any{"shuffle": true}},
		{name: "boolean on", files: pdf, inputs: map[string]any{"shuffle": "On"}, want: map[string]any{"shuffle": true}},
		{name: "boolean 1", files: pdf, inputs: map[string]any{"shuffle": "1"}, want: map[string]any{"shuffle": true}},
		{name: "boolean true", files: pdf, inputs: map[string]any{"shuffle": "TRUE"}, want: map[string]any{"shuffle": true}},
		{name: "boolean off", files: pdf, inputs: map[string]any{"shuffle": "off"}, want: map[string]any{"shuffle": false}},
		{name: "boolean FALSE with spaces", files: pdf, inputs: map[string]any{"shuffle": " FALSE "}, want: map[string]any{"shuffle": false}},
		{name: "boolean no and 0", files: pdf, inputs: map[string]any{"shuffle": "no"}, want: map[string]any{"shuffle": false}},
		{name: "boolean 0", files: pdf, inputs: map[string]any{"shuffle": "0"}, want: map[string]any{"shuffle": false}},
		{name: "boolean blank", files: pdf, inputs: map[string]any{"shuffle": "  "}, want: map[string]any{}},

		{name: "unknown key", files: pdf, inputs: map[string]any{"colour": "red"}, field: "colour", rule: RuleUnknownField,
			msg: `input "colour" is not one this tool takes (its inputs: name, notes, size, ratio, shuffle, paper)`},
		{name: "the file field in inputs", files: pdf, inputs: map[string]any{"docs": "a.pdf"}, field: "docs", rule: RuleFileField,
			msg: `input "docs" is the tool's file field; send its files as files, not in inputs`},
		{name: "string a number", files: pdf, inputs: map[string]any{"name": 5.0}, field: "name", rule: RuleType, msg: `input "name" (string) must be a string; got 5`},
		{name: "string over its limit", files: pdf, inputs: map[string]any{"name": strings.Repeat("x", MaxStringBytes+1)}, field: "name", rule: RuleMaxLength,
			msg: `input "name" (string) is 4097 bytes, over the limit of 4096 bytes`},
		{name: "integer a fraction", files: pdf, inputs: map[string]any{"size": 2.5}, field: "size", rule: RuleType,
			msg: `input "size" (integer) must be a whole number between -9007199254740991 and 9007199254740991; got 2.5`},
		{name: "integer a word", files: pdf, inputs: map[string]any{"size": "four"}, field: "size", rule: RuleType, msg: `got "four"`},
		{name: "integer a fraction string", files: pdf, inputs: map[string]any{"size": "2.5"}, field: "size", rule: RuleType, msg: `got "2.5"`},
		{name: "integer a bool", files: pdf, inputs: map[string]any{"size": true}, field: "size", rule: RuleType, msg: "got true"},
		{name: "integer too large", files: pdf, inputs: map[string]any{"size": "9007199254740992"}, field: "size", rule: RuleType, msg: "whole number"},
		{name: "number NaN", files: pdf, inputs: map[string]any{"ratio": "NaN"}, field: "ratio", rule: RuleType, msg: `input "ratio" (number) must be a number; got "NaN"`},
		{name: "number Inf", files: pdf, inputs: map[string]any{"ratio": "Inf"}, field: "ratio", rule: RuleType, msg: "must be a number"},
		{name: "number hex", files: pdf, inputs: map[string]any{"ratio": "0x10"}, field: "ratio", rule: RuleType, msg: "must be a number"},
		{name: "number out of range", files: pdf, inputs: map[string]any{"ratio": "1e400"}, field: "ratio", rule: RuleType, msg: "must be a number"},
		{name: "number a bool", files: pdf, inputs: map[string]any{"ratio": false}, field: "ratio", rule: RuleType, msg: "must be a number"},
		{name: "number a list", files: pdf, inputs: map[string]any{"ratio": []any{1.0}}, field: "ratio", rule: RuleType, msg: "got [1]"},
		{name: "boolean another string", files: pdf, inputs: map[string]any{"shuffle": "ja"}, field: "shuffle", rule: RuleType,
			msg: `input "shuffle" (boolean) must be true or false (or one of the strings true, false, yes, no, on, off, 1, 0); got "ja"`},
		{name: "boolean a number", files: pdf, inputs: map[string]any{"shuffle": 1.0}, field: "shuffle", rule: RuleType, msg: "got 1"},
		// As the original's int(): whole, but written as no integer.
		{name: "integer written 3.0", files: pdf, inputs: map[string]any{"size": "3.0"}, field: "size", rule: RuleType, msg: `got "3.0"`},
		{name: "integer a JSON 2.0", files: pdf, inputs: map[string]any{"size": json.Number("2.0")}, field: "size", rule: RuleType, msg: "got 2.0"},
		{name: "integer a JSON 2e0", files: pdf, inputs: map[string]any{"size": json.Number("2e0")}, field: "size", rule: RuleType, msg: "got 2e0"},
		{name: "enum outside its options", files: pdf, inputs: map[string]any{"paper": "a3"}, field: "paper", rule: RuleEnum,
			msg: `input "paper" (enum) must be one of "a4", "letter"; got "a3"`},
		{name: "enum a number", files: pdf, inputs: map[string]any{"paper": 4.0}, field: "paper", rule: RuleType, msg: `must be one of "a4", "letter"; got 4`},
		{name: "too few files", field: "docs", rule: RuleMin, msg: `file field "docs" needs at least 1 file; none was sent`},
		{name: "too many files", files: []string{"1.pdf", "2.pdf", "3.pdf", "4.pdf"}, field: "docs", rule: RuleMax, msg: `file field "docs" takes at most 3 files; 4 were sent`},
		{name: "a file not accepted", files: []string{"a.pdf", "notes.txt"}, field: "docs", rule: RuleAccept,
			msg: `file "notes.txt" is not one of the types file field "docs" takes (.pdf, .DOCX)`},
		{name: "an extension alone is no name", files: []string{"pdf"}, field: "docs", rule: RuleAccept, msg: `file "pdf"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeInputs(s, tc.inputs, tc.files)
			if tc.rule == "" {
				if err != nil {
					t.Fatalf("NormalizeInputs = %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("inputs %#v\nwant %#v", got, tc.want)
				}
				return
			}
			wantErr(t, err, ErrInvalidInput, tc.field, tc.rule, tc.msg)
		})
	}
}

func TestNormalizeInputsWithoutFileField(t *testing.T) {
	s, err := ParseInputSchema(json.RawMessage(`[{"name":"name","label":"Name","kind":"string"}]`), 20)
	if err != nil {
		t.Fatal(err)
	}
	_, err = NormalizeInputs(s, map[string]any{"name": "x"}, []string{"a.pdf", "b.pdf"})
	wantErr(t, err, ErrInvalidInput, FilesField, RuleNoFiles, "this tool takes no files, and 2 were sent")

	empty, _ := ParseInputSchema(json.RawMessage(`[]`), 20)
	_, err = NormalizeInputs(empty, map[string]any{"x": 1.0}, nil)
	wantErr(t, err, ErrInvalidInput, "x", RuleUnknownField, `input "x" is not one this tool takes (it takes no inputs)`)

	// Without a schema anything goes, unchanged.
	in := map[string]any{"anything": []any{1.0}, "else": nil}
	got, err := NormalizeInputs(nil, in, []string{"x.bin"})
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("no schema: %v, %v", got, err)
	}
}

func TestFileCountBounds(t *testing.T) {
	s, err := ParseInputSchema(json.RawMessage(`[{"name":"f","kind":"file","min":0,"max":2}]`), 20)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n <= 3; n++ {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("f%d.anything", i)
		}
		_, err := NormalizeInputs(s, nil, names)
		if (err == nil) != (n <= 2) {
			t.Fatalf("%d files: %v", n, err)
		}
	}
}

func settingsSchema(t *testing.T) SettingsSchema {
	t.Helper()
	s, err := ParseSettingsSchema(json.RawMessage(`[{"name":"signature","label":"Signature","kind":"string"},{"name":"per_page","label":"Per page","kind":"integer"},
		{"name":"tone","label":"Tone","kind":"enum","options":[{"value":"formal"},{"value":"casual"}]},
		{"name":"tags","label":"Tags","kind":"multi_enum","options":[{"value":"a"},{"value":"b"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestValidateSettings(t *testing.T) {
	s := settingsSchema(t)
	got, err := ValidateSettings(s, map[string]any{"signature": " Ada ", "per_page": "20", "tone": "casual", "tags": []any{"b", "a"}, "empty": nil})
	if err == nil {
		t.Fatal("an unknown key was accepted")
	}
	wantErr(t, err, ErrInvalidInput, "empty", RuleUnknownField, `setting "empty" is not one this tool takes (its settings: signature, per_page, tone, tags)`)

	got, err = ValidateSettings(s, map[string]any{"signature": " Ada ", "per_page": "20", "tone": "casual", "tags": []any{"b", "a"}})
	want := map[string]any{"signature": "Ada", "per_page": int64(20), "tone": "casual", "tags": []string{"b", "a"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ValidateSettings = %#v, %v\nwant %#v", got, err, want)
	}
	for _, tc := range []struct {
		values      map[string]any
		field, rule string
		msg         string
	}{
		{map[string]any{"per_page": "many"}, "per_page", RuleType, `setting "per_page" (integer) must be a whole number`},
		{map[string]any{"tone": "rude"}, "tone", RuleEnum, `setting "tone" (enum) must be one of "formal", "casual"; got "rude"`},
		{map[string]any{"tags": "a"}, "tags", RuleType, `setting "tags" (multi_enum) must be a list of values from "a", "b"`},
		{map[string]any{"tags": []any{"a", "a"}}, "tags", RuleEnum, `has "a" twice`},
		{map[string]any{"tags": []any{"c"}}, "tags", RuleEnum, `has "c", which is not one of "a", "b"`},
	} {
		_, err := ValidateSettings(s, tc.values)
		wantErr(t, err, ErrInvalidInput, tc.field, tc.rule, tc.msg)
	}
	_, err = ValidateSettings(nil, map[string]any{"x": "y"})
	wantErr(t, err, ErrInvalidInput, "x", RuleUnknownField, "it takes no settings")
	if got, err := ValidateSettings(nil, nil); err != nil || len(got) != 0 {
		t.Fatalf("no settings for no schema = %v, %v", got, err)
	}
}

func TestKeepValidSettings(t *testing.T) {
	// Saved under an older schema: signature was an integer, per_page is gone, tone lost
	// the option "blunt", tags keeps its options.
	saved := map[string]any{"signature": "Ada", "per_page": 20.0, "tone": "blunt", "tags": []any{"a"}, "gone": true}
	got := KeepValidSettings(settingsSchema(t), saved)
	want := map[string]any{"signature": "Ada", "per_page": int64(20), "tags": []string{"a"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("KeepValidSettings = %#v\nwant %#v", got, want)
	}
	if got := KeepValidSettings(nil, saved); got == nil || len(got) != 0 {
		t.Fatalf("no schema keeps %#v, want an empty map", got)
	}
}

func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"a.pdf", true}, {"A.PDF", true}, {"x.tar.gz", true}, {"x.gz", false}, {"pdf", false}, {".pdf", false}, {"a.pdf.txt", false}} {
		if got := Accepts([]string{".Pdf", ".tar.gz"}, tc.name); got != tc.ok {
			t.Errorf("Accepts(%q) = %v", tc.name, got)
		}
	}
}
