package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skrip-dev/skrip/internal/errs"
)

// FieldFile is the kind of an input schema's file field (docs/spec.md §5b): at most one per
// schema, with Accept, Min and Max.
const FieldFile = "file"

// InputField is one field of a version's input_schema (docs/spec.md §5b): a form field of kind
// string, text, integer, number, boolean or enum, or the one file field.
type InputField struct {
	Field
	Accept []string `json:"accept,omitempty"` // file: extensions like ".pdf", case-insensitive
	Min    *int     `json:"min,omitempty"`    // file: fewest files
	Max    *int     `json:"max,omitempty"`    // file: most files
}

// InputSchema is a version's input_schema. nil means the version has none: it accepts
// files (0..the upload cap) and any inputs object.
type InputSchema []InputField

// SettingsSchema is a version's settings_schema: fields of the next_action kinds. nil
// means the tool has no settings.
type SettingsSchema []Field

// ErrInvalidSchema means an input_schema or settings_schema breaks a rule of docs/spec.md §5b
// (400 invalid_request). Its errors are *errs.Error with details {field, rule,
// schema_field, index}: field is "input_schema" or "settings_schema", schema_field the
// name of the offending field (when it has one) and index its position from 0.
var ErrInvalidSchema = errors.New("invalid schema")

// Limits on a schema, so that no author can make the server hold much for one.
const (
	MaxSchemaBytes    = 64 << 10 // the schema as JSON
	MaxSchemaFields   = 50
	MaxFieldOptions   = 200 // options of one enum or multi_enum field
	MaxFieldNameBytes = 100
	MaxAcceptEntries  = 50
)

// Rules a schema can break: the "rule" of an ErrInvalidSchema's details.
const (
	RuleJSON         = "json"           // not a list of objects, or a key of the wrong JSON type
	RuleTooLarge     = "too_large"      // over MaxSchemaBytes, MaxSchemaFields, MaxFieldOptions or MaxAcceptEntries
	RuleUnknownKey   = "unknown_key"    // a key a field of its kind does not have
	RuleName         = "name"           // empty, too long, or holding control characters
	RuleUnique       = "unique"         // a name used twice
	RuleKind         = "kind"           // not a kind this schema allows
	RuleOneFileField = "one_file_field" // a second file field
	RuleOptions      = "options"        // enum without options, an empty or repeated option value
	RuleFileOnly     = "file_only"      // accept, min or max on a field that is not the file field
	RuleMin          = "min"            // schema: min < 0 or min > max; input: fewer files than min
	RuleMax          = "max"            // schema: no max, max < 1 or max over the upload cap; input: more files than max
	RuleAccept       = "accept"         // schema: an entry not like ".ext"; input: a file whose extension is not accepted
)

// inputKinds are the kinds an input_schema field may have; settingsKinds those of a
// settings_schema field (the next_action kinds).
var (
	inputKinds    = []string{FieldString, FieldText, FieldInteger, FieldNumber, FieldBoolean, FieldEnum, FieldFile}
	settingsKinds = fieldKinds
)

// acceptPattern is an accept entry: a dot, then letters, digits and -_+, with inner dots
// for extensions such as ".tar.gz".
var acceptPattern = regexp.MustCompile(`^(\.[A-Za-z0-9_+-]{1,16}){1,3}$`)

// ParseInputSchema parses and checks a version's input_schema (docs/spec.md §5b). nil, empty or
// JSON null gives a nil schema: the version has none. Otherwise it must be a list of
// fields {name, label, kind, options?, accept?, min?, max?} with unique non-empty names,
// known kinds, options on every enum, and at most one file field, whose 0 ≤ min ≤ max,
// 1 ≤ max ≤ maxFiles (SKRIP_UPLOAD_MAX_FILES; 0 or less: no cap, for schemas stored
// before) and accept entries like ".pdf". min defaults to 0; max is required. The result
// is the schema in canonical form (names, labels and option values trimmed), what the
// catalogue stores. Errors are *errs.Error of ErrInvalidSchema naming the field and the rule.
func ParseInputSchema(raw json.RawMessage, maxFiles int) (InputSchema, error) {
	p := schemaParser{what: "input_schema", kinds: inputKinds, maxFiles: maxFiles}
	fields, err := p.parse(raw)
	if err != nil || fields == nil {
		return nil, err
	}
	return fields, nil
}

// ParseSettingsSchema parses and checks a version's settings_schema: a list of fields of
// the next_action kinds (string, text, integer, number, boolean, enum, multi_enum), with
// unique non-empty names and options on every enum and multi_enum. nil, empty or JSON
// null gives nil. Errors are as ParseInputSchema's.
func ParseSettingsSchema(raw json.RawMessage) (SettingsSchema, error) {
	p := schemaParser{what: "settings_schema", kinds: settingsKinds}
	fields, err := p.parse(raw)
	if err != nil || fields == nil {
		return nil, err
	}
	out := make(SettingsSchema, len(fields))
	for i, f := range fields {
		out[i] = f.Field
	}
	return out, nil
}

// FileField returns the schema's file field, or nil when it has none.
func (s InputSchema) FileField() *InputField {
	for i := range s {
		if s[i].Kind == FieldFile {
			return &s[i]
		}
	}
	return nil
}

// schemaParser checks one schema; what names it in messages.
type schemaParser struct {
	what     string
	kinds    []string
	maxFiles int
}

// fieldKeys are the keys a field may have; fileKeys those only the file field has.
var (
	fieldKeys = []string{"name", "label", "kind", "options"}
	fileKeys  = []string{"accept", "min", "max"}
)

func (p schemaParser) parse(raw json.RawMessage) ([]InputField, error) {
	if isNull(raw) {
		return nil, nil
	}
	if len(raw) > MaxSchemaBytes {
		return nil, p.fail(-1, "", RuleTooLarge, "%s is %d bytes; the limit is %d bytes", p.what, len(raw), MaxSchemaBytes)
	}
	var items []json.RawMessage
	if err := decodeJSON(raw, &items); err != nil {
		return nil, p.fail(-1, "", RuleJSON, "%s must be a JSON list of fields such as [{\"name\": \"title\", \"label\": \"Title\", \"kind\": \"string\"}]; it is %s",
			p.what, notList(raw))
	}
	if len(items) > MaxSchemaFields {
		return nil, p.fail(-1, "", RuleTooLarge, "%s has %d fields; the limit is %d", p.what, len(items), MaxSchemaFields)
	}
	fields := make([]InputField, 0, len(items))
	names := map[string]bool{}
	fileAt := -1
	for i, item := range items {
		f, err := p.field(i, item)
		if err != nil {
			return nil, err
		}
		if names[f.Name] {
			return nil, p.fail(i, f.Name, RuleUnique, "%s has two fields named %s; give each field its own name", p.what, quote(f.Name))
		}
		names[f.Name] = true
		if f.Kind == FieldFile {
			if fileAt >= 0 {
				return nil, p.fail(i, f.Name, RuleOneFileField, "%s has two file fields, %s and %s; a tool takes at most one file field (it may allow many files through min and max)",
					p.what, quote(fields[fileAt].Name), quote(f.Name))
			}
			fileAt = i
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// field parses and checks field i of the schema.
func (p schemaParser) field(i int, raw json.RawMessage) (InputField, error) {
	var keys map[string]json.RawMessage
	if err := decodeJSON(raw, &keys); err != nil || keys == nil {
		return InputField{}, p.fail(i, "", RuleJSON, "%s field %d must be a JSON object such as {\"name\": \"title\", \"label\": \"Title\", \"kind\": \"string\"}; it is %s",
			p.what, i+1, jsonType(value(raw)))
	}
	var f InputField
	targets := map[string]struct {
		ptr  any
		want string
	}{
		"name": {&f.Name, "a string"}, "label": {&f.Label, "a string"}, "kind": {&f.Kind, "a string"},
		"options": {&f.Options, `a list of {"value": "...", "label": "..."}`}, "accept": {&f.Accept, "a list of strings"},
		"min": {&f.Min, "a whole number"}, "max": {&f.Max, "a whole number"},
	}
	for _, k := range sortedKeys(keys) {
		t, ok := targets[k]
		if ok && decodeJSON(keys[k], t.ptr) != nil {
			return InputField{}, p.fail(i, nameOf(keys), RuleJSON, "%s field %d: %s must be %s; it is %s",
				p.what, i+1, quote(k), t.want, short(string(bytes.TrimSpace(keys[k]))))
		}
	}
	f.Name, f.Label = strings.TrimSpace(f.Name), strings.TrimSpace(f.Label)
	at := fmt.Sprintf("%s field %d", p.what, i+1)
	if f.Name != "" {
		at += " (" + quote(f.Name) + ")"
	}
	known := fieldKeys
	if f.Kind == FieldFile {
		known = append(slices.Clip(known), fileKeys...)
	}
	for _, k := range sortedKeys(keys) {
		if slices.Contains(known, k) {
			continue
		}
		if slices.Contains(fileKeys, k) {
			return f, p.fail(i, f.Name, RuleFileOnly, "%s has %s, which only the file field may have", at, quote(k))
		}
		return f, p.fail(i, f.Name, RuleUnknownKey, "%s has the unknown key %s; a field has %s", at, quote(k), strings.Join(known, ", "))
	}
	switch {
	case f.Name == "":
		return f, p.fail(i, "", RuleName, "%s has no name; every field needs one, such as \"title\"", at)
	case len(f.Name) > MaxFieldNameBytes:
		return f, p.fail(i, f.Name, RuleName, "%s: the name is %d bytes; the limit is %d", at, len(f.Name), MaxFieldNameBytes)
	case strings.IndexFunc(f.Name, unicode.IsControl) >= 0 || !utf8.ValidString(f.Name):
		return f, p.fail(i, f.Name, RuleName, "%s: the name holds control characters", at)
	case !slices.Contains(p.kinds, f.Kind):
		return f, p.fail(i, f.Name, RuleKind, "%s has the kind %s; %s kinds are %s", at, quote(f.Kind), p.what, strings.Join(p.kinds, ", "))
	}
	if err := p.options(i, at, &f); err != nil {
		return f, err
	}
	if f.Kind == FieldFile {
		return f, p.file(i, at, &f)
	}
	return f, nil
}

// options checks and trims the options of field f: only enum and multi_enum have them,
// and they must.
func (p schemaParser) options(i int, at string, f *InputField) error {
	hasOptions := f.Kind == FieldEnum || f.Kind == FieldMultiEnum
	switch {
	case !hasOptions && len(f.Options) > 0:
		return p.fail(i, f.Name, RuleOptions, "%s is %s, which has no options; only enum and multi_enum fields do", at, f.Kind)
	case !hasOptions:
		f.Options = nil
		return nil
	case len(f.Options) == 0:
		return p.fail(i, f.Name, RuleOptions, "%s (%s) has no options; give it options such as [{\"value\": \"a4\", \"label\": \"A4\"}]", at, f.Kind)
	case len(f.Options) > MaxFieldOptions:
		return p.fail(i, f.Name, RuleTooLarge, "%s has %d options; the limit is %d", at, len(f.Options), MaxFieldOptions)
	}
	seen := map[string]bool{}
	for j := range f.Options {
		o := &f.Options[j]
		o.Value, o.Label = strings.TrimSpace(o.Value), strings.TrimSpace(o.Label)
		if o.Value == "" {
			return p.fail(i, f.Name, RuleOptions, "%s: option %d has an empty value", at, j+1)
		}
		if seen[o.Value] {
			return p.fail(i, f.Name, RuleOptions, "%s has the option value %s twice", at, quote(o.Value))
		}
		seen[o.Value] = true
	}
	return nil
}

// file checks the file field's accept, min and max, and fills in min's default, 0.
func (p schemaParser) file(i int, at string, f *InputField) error {
	if f.Min == nil {
		zero := 0
		f.Min = &zero
	}
	minFiles := *f.Min
	switch {
	case f.Max == nil:
		return p.fail(i, f.Name, RuleMax, "%s needs max, the most files a run may send, such as \"max\": 1", at)
	case minFiles < 0:
		return p.fail(i, f.Name, RuleMin, "%s: min is %d; it must be 0 or more", at, minFiles)
	case *f.Max < 1:
		return p.fail(i, f.Name, RuleMax, "%s: max is %d; it must be at least 1", at, *f.Max)
	case minFiles > *f.Max:
		return p.fail(i, f.Name, RuleMin, "%s: min %d is more than max %d", at, minFiles, *f.Max)
	case p.maxFiles > 0 && *f.Max > p.maxFiles:
		return p.fail(i, f.Name, RuleMax, "%s: max %d is over the upload limit of %d files per run (SKRIP_UPLOAD_MAX_FILES)", at, *f.Max, p.maxFiles)
	case len(f.Accept) > MaxAcceptEntries:
		return p.fail(i, f.Name, RuleTooLarge, "%s has %d accept entries; the limit is %d", at, len(f.Accept), MaxAcceptEntries)
	}
	var accept []string
	for _, a := range f.Accept {
		a = strings.TrimSpace(a)
		if !acceptPattern.MatchString(a) {
			return p.fail(i, f.Name, RuleAccept, "%s: accept entry %s is not a file extension like \".pdf\" or \".tar.gz\"", at, quote(a))
		}
		if !slices.ContainsFunc(accept, func(b string) bool { return strings.EqualFold(a, b) }) {
			accept = append(accept, a)
		}
	}
	f.Accept = accept
	return nil
}

// fail is an ErrInvalidSchema error about field i (-1: the whole schema) named name.
func (p schemaParser) fail(i int, name, rule, format string, args ...any) error {
	d := map[string]any{"field": p.what, "rule": rule}
	if i >= 0 {
		d["index"] = i
	}
	if name != "" {
		d["schema_field"] = short(name)
	}
	return errs.New(ErrInvalidSchema, d, format, args...)
}

// nameOf is the trimmed name in a field's keys, when it is a string.
func nameOf(keys map[string]json.RawMessage) string {
	var s string
	json.Unmarshal(keys["name"], &s)
	return strings.TrimSpace(s)
}

// notList says what raw is instead of a list.
func notList(raw json.RawMessage) string {
	var v any
	if err := decodeJSON(raw, &v); err != nil {
		return "not valid JSON"
	}
	return "a JSON " + jsonType(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
