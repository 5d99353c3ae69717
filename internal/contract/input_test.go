package contract

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/errs"
)

func TestValidateInput(t *testing.T) {
	opts := func(vals ...string) []Option {
		var o []Option
		for _, v := range vals {
			o = append(o, Option{Value: v, Label: strings.ToUpper(v)})
		}
		return o
	}
	a := NextAction{ActionID: "convert", Label: "Konvertera", Kind: FormKind, Fields: []Field{
		{Name: "s", Kind: FieldString}, {Name: "t", Kind: FieldText}, {Name: "i", Kind: FieldInteger},
		{Name: "n", Kind: FieldNumber}, {Name: "b", Kind: FieldBoolean},
		{Name: "page_size", Kind: FieldEnum, Options: opts("a4", "letter")},
		{Name: "tags", Kind: FieldMultiEnum, Options: opts("x", "y", "z")},
	}}
	tests := []struct {
		name  string
		input map[string]any
		want  string // "" when valid, else a substring of the message
	}{
		{"nil", nil, ""},
		{"empty", map[string]any{}, ""},
		{"all fields", map[string]any{"s": "å", "t": "long\ntext", "i": 3.0, "n": 2.5, "b": false, "page_size": "a4", "tags": []any{"x", "z"}}, ""},
		{"json.Number", map[string]any{"i": json.Number("-42"), "n": json.Number("1e3")}, ""},
		{"Go ints", map[string]any{"i": 7, "n": int64(8)}, ""},
		{"integer written as 2.0", map[string]any{"i": json.Number("2.0")}, ""},
		{"largest safe integer", map[string]any{"i": json.Number("9007199254740991")}, ""},
		{"empty multi_enum", map[string]any{"tags": []any{}}, ""},
		{"multi_enum as []string", map[string]any{"tags": []string{"y"}}, ""},
		{"string at its limit", map[string]any{"s": strings.Repeat("x", MaxStringBytes)}, ""},
		{"text at its limit", map[string]any{"t": strings.Repeat("x", MaxTextBytes)}, ""},

		{"unknown key", map[string]any{"colour": "red"}, `input field "colour" is not a field of action "convert" (its fields: s, t, i, n, b, page_size, tags)`},
		{"null", map[string]any{"s": nil}, `input field "s" (string) must be a string; got null`},
		{"string a number", map[string]any{"s": 5.0}, `input field "s" (string) must be a string; got 5`},
		{"string over", map[string]any{"s": strings.Repeat("x", MaxStringBytes+1)}, `input field "s" (string) is 4097 bytes, over the limit of 4096 bytes`},
		{"text over", map[string]any{"t": strings.Repeat("x", MaxTextBytes+1)}, `input field "t" (text) is 65537 bytes, over the limit of 65536 bytes`},
		{"invalid UTF-8", map[string]any{"s": "a\xffb"}, "must be valid UTF-8"},
		{"integer fraction", map[string]any{"i": 1.5}, `input field "i" (integer) must be a whole number between -9007199254740991 and 9007199254740991; got 1.5`},
		{"integer a string", map[string]any{"i": "3"}, `input field "i" (integer) must be a whole number between -9007199254740991 and 9007199254740991; got "3"`},
		{"integer too large", map[string]any{"i": json.Number("9007199254740992")}, "must be a whole number"},
		{"integer too large as float", map[string]any{"i": 1e300}, "must be a whole number"},
		{"integer a bool", map[string]any{"i": true}, "must be a whole number"},
		{"number a string", map[string]any{"n": "2.5"}, `input field "n" (number) must be a number; got "2.5"`},
		{"number out of range", map[string]any{"n": json.Number("1e400")}, "must be a number"},
		{"boolean a string", map[string]any{"b": "true"}, `input field "b" (boolean) must be true or false; got "true"`},
		{"enum not an option", map[string]any{"page_size": "a3"}, `input field "page_size" (enum) must be one of "a4", "letter"; got "a3"`},
		{"enum a list", map[string]any{"page_size": []any{"a4"}}, `must be one of "a4", "letter"; got ["a4"]`},
		{"multi_enum a string", map[string]any{"tags": "x"}, `input field "tags" (multi_enum) must be a list of values from "x", "y", "z"; got "x"`},
		{"multi_enum with a number", map[string]any{"tags": []any{"x", 1.0}}, "must be a list of values from"},
		{"multi_enum not an option", map[string]any{"tags": []any{"x", "w"}}, `input field "tags" (multi_enum) has "w", which is not one of "x", "y", "z"`},
		{"multi_enum twice", map[string]any{"tags": []any{"y", "y"}}, `input field "tags" (multi_enum) has "y" twice`},
		{"long value cut in the message", map[string]any{"i": strings.Repeat("9", 100)}, `got "` + strings.Repeat("9", 59) + "…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateInput(a, tc.input)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ValidateInput = %v, want nil", err)
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("ValidateInput = %#v, want an *errs.Error of ErrInvalidInput", err)
			}
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q\nwant it to contain %q", e.Message, tc.want)
			}
			if e.Details["field"] == nil || e.Details["action_id"] != "convert" {
				t.Errorf("details %v", e.Details)
			}
		})
	}
}

func TestValidateInputUnknownFieldKind(t *testing.T) {
	a := NextAction{ActionID: "x", Fields: []Field{{Name: "d", Kind: "date"}, {Name: "e", Kind: FieldEnum}}}
	if err := ValidateInput(a, map[string]any{"d": "2024-01-01"}); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Errorf("a field of unknown kind: %v", err)
	}
	if err := ValidateInput(a, map[string]any{"e": "a"}); err == nil || !strings.Contains(err.Error(), "has no options, so no value fits") {
		t.Errorf("an enum without options: %v", err)
	}
}
