package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/errs"
)

// FuzzParseResult checks that ParseResult never panics, that what it accepts keeps to
// the contract and the policy, and that parsing its own result again changes nothing.
func FuzzParseResult(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p := DefaultPolicy()
		res, err := ParseResult(data, p)
		if err != nil {
			if !errors.Is(err, ErrViolation) {
				t.Fatalf("error %v does not wrap ErrViolation", err)
			}
			return
		}
		checkResult(t, res, p)
		if len(res.Outputs) > p.MaxOutputs {
			return // skrip's notices came on top of the tool's outputs: parsed again, they would be too many
		}

		again, err := json.Marshal(encodeResult(res))
		if err != nil {
			t.Fatalf("the parsed result does not encode: %v", err)
		}
		res2, err := ParseResult(again, p)
		if err != nil {
			t.Fatalf("the parsed result does not parse again: %v\n%s", err, again)
		}
		if len(res2.Notices) != 0 {
			t.Fatalf("parsing again added notices: %+v\n%s", res2.Notices, again)
		}
		b1, _ := json.Marshal(encodeResult(res))
		b2, _ := json.Marshal(encodeResult(res2))
		if !bytes.Equal(b1, b2) {
			t.Fatalf("parsing again changed the result:\n%s\n%s", b1, b2)
		}
	})
}

// encodeResult is res as result.json.
func encodeResult(res Result) map[string]any {
	m := map[string]any{"contract_version": Version, "status": res.Status, "error_summary": res.ErrorSummary,
		"outputs": res.Outputs, "next_actions": res.NextActions, "artifacts": res.Artifacts}
	if res.State != nil {
		m["state"] = res.State
	}
	return m
}

func checkResult(t *testing.T, res Result, p Policy) {
	t.Helper()
	if res.Status != StatusSucceeded && res.Status != StatusFailed {
		t.Fatalf("status %q", res.Status)
	}
	if len(res.Outputs) > p.MaxOutputs+len(res.Notices) {
		t.Fatalf("%d outputs, over %d and %d notices", len(res.Outputs), p.MaxOutputs, len(res.Notices))
	}
	for i, o := range res.Outputs {
		if !knownKind(o.Kind) {
			t.Fatalf("output %d has kind %q", i, o.Kind)
		}
		if why := checkOutput(o, p); why != "" {
			t.Fatalf("output %d over the policy: %s", i, why)
		}
	}
	for _, n := range res.Notices {
		if n.Kind != KindNotice || n.Level != LevelWarning || !slices.ContainsFunc(res.Outputs, func(o Output) bool { return o.Message == n.Message }) {
			t.Fatalf("notice %+v is not a warning among the outputs", n)
		}
	}
	if len(res.NextActions) > p.MaxNextActions {
		t.Fatalf("%d next actions, over %d", len(res.NextActions), p.MaxNextActions)
	}
	ids := map[string]bool{}
	for _, a := range res.NextActions {
		if why := checkAction(a, p); why != "" || ids[a.ActionID] {
			t.Fatalf("next action %+v kept: %s (duplicate %v)", a, why, ids[a.ActionID])
		}
		ids[a.ActionID] = true
		if len(a.Fields) > p.MaxFields {
			t.Fatalf("%d fields", len(a.Fields))
		}
		if err := ValidateInput(a, a.Prefill); err != nil {
			t.Fatalf("prefill kept: %v", err)
		}
	}
	if res.State != nil {
		if len(res.State) > p.MaxStateBytes || !json.Valid(res.State) || (res.State[0] != '{' && string(res.State) != "null") {
			t.Fatalf("state kept: %.100s", res.State)
		}
	}
	for _, a := range res.Artifacts {
		if !validArtifact(a) {
			t.Fatalf("artifact %q kept", a)
		}
	}
}

// FuzzValidateInput checks that ValidateInput never panics, fails only with an
// ErrInvalidInput error, gives the same verdict for numbers as float64 and as
// json.Number, and accepts only keys that are fields.
func FuzzValidateInput(f *testing.F) {
	f.Fuzz(func(t *testing.T, action, input []byte) {
		var a NextAction
		if json.Unmarshal(action, &a) != nil {
			return
		}
		var in map[string]any
		if decodeJSON(input, &in) != nil {
			return
		}
		err := ValidateInput(a, in)
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidInput) || !strings.HasPrefix(e.Message, "input field ") {
				t.Fatalf("error %#v", err)
			}
		} else {
			for k := range in {
				if !slices.ContainsFunc(a.Fields, func(f Field) bool { return f.Name == k }) {
					t.Fatalf("key %q accepted, fields %+v", k, a.Fields)
				}
			}
		}
		var floats map[string]any
		if json.Unmarshal(input, &floats) == nil {
			if err2 := ValidateInput(a, floats); (err2 == nil) != (err == nil) {
				t.Fatalf("json.Number gives %v, float64 gives %v", err, err2)
			}
		}
	})
}

// FuzzNormalizeInputs checks that NormalizeInputs never panics, refuses only with an
// ErrInvalidInput error naming a field and a rule, returns only fields of the schema with
// values of their kind, and changes nothing when given its own result again. names holds
// the run's file names, one per line.
func FuzzNormalizeInputs(f *testing.F) {
	f.Fuzz(func(t *testing.T, schema, input []byte, names string) {
		s, err := ParseInputSchema(schema, 20)
		if err != nil || s == nil {
			return
		}
		var in map[string]any
		if decodeJSON(input, &in) != nil {
			return
		}
		var files []string
		if names != "" {
			files = strings.Split(names, "\n")
		}
		out, err := NormalizeInputs(s, in, files)
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("error %#v", err)
			}
			// The field may be "": a key of inputs may be empty too.
			if _, ok := e.Details["field"].(string); !ok {
				t.Fatalf("error %q names no field: %v", e.Message, e.Details)
			}
			if rule, _ := e.Details["rule"].(string); rule == "" {
				t.Fatalf("error %q names no rule: %v", e.Message, e.Details)
			}
			return
		}
		for k, v := range out {
			i := slices.IndexFunc(s, func(f InputField) bool { return f.Name == k })
			if i < 0 || s[i].Kind == FieldFile {
				t.Fatalf("key %q kept, schema %+v", k, s)
			}
			ok := false
			switch s[i].Kind {
			case FieldString, FieldText:
				str, isStr := v.(string)
				ok = isStr && str != "" && str == strings.TrimSpace(str)
			case FieldEnum:
				str, isStr := v.(string)
				ok = isStr && hasOption(s[i].Field, str)
			case FieldInteger:
				n, isInt := v.(int64)
				ok = isInt && n >= -MaxSafeInteger && n <= MaxSafeInteger
			case FieldNumber:
				_, ok = v.(float64)
			case FieldBoolean:
				_, ok = v.(bool)
			}
			if !ok {
				t.Fatalf("input %q (%s) is %#v", k, s[i].Kind, v)
			}
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("the inputs do not encode: %v", err)
		}
		again, err := NormalizeInputs(s, out, files)
		if err != nil || !reflect.DeepEqual(again, out) {
			t.Fatalf("normalising again gives %#v, %v; want %#v", again, err, out)
		}
	})
}

// FuzzParseInputSchema checks that ParseInputSchema never panics, refuses only with an
// ErrInvalidSchema error naming the rule, keeps to docs/spec.md §5b's rules when it accepts,
// and parses its own canonical form to the same schema.
func FuzzParseInputSchema(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseInputSchema(raw, 20)
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidSchema) || e.Details["rule"] == "" {
				t.Fatalf("error %#v", err)
			}
			return
		}
		names := map[string]bool{}
		files := 0
		for _, f := range s {
			if f.Name == "" || names[f.Name] || !slices.Contains(inputKinds, f.Kind) {
				t.Fatalf("field %+v kept", f)
			}
			names[f.Name] = true
			if f.Kind == FieldEnum && len(f.Options) == 0 {
				t.Fatalf("enum %+v without options kept", f)
			}
			if f.Kind == FieldFile {
				files++
				if f.Min == nil || f.Max == nil || *f.Min < 0 || *f.Min > *f.Max || *f.Max < 1 || *f.Max > 20 {
					t.Fatalf("file field %+v kept", f)
				}
			} else if f.Min != nil || f.Max != nil || f.Accept != nil {
				t.Fatalf("field %+v has file keys", f)
			}
		}
		if files > 1 {
			t.Fatalf("%d file fields kept", files)
		}
		canon, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseInputSchema(canon, 20)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("the canonical form %s parses to %+v, %v", canon, again, err)
		}
	})
}
