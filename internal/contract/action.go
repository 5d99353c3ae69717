package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skrip-dev/skrip/internal/errs"
)

// Field kinds of a form action.
const (
	FieldString    = "string"
	FieldText      = "text"
	FieldInteger   = "integer"
	FieldNumber    = "number"
	FieldBoolean   = "boolean"
	FieldEnum      = "enum"
	FieldMultiEnum = "multi_enum"
)

// FormKind is the only kind of next action.
const FormKind = "form"

// Limits on action input values.
const (
	MaxStringBytes = 4 << 10  // a string field's value
	MaxTextBytes   = 64 << 10 // a text field's value
	MaxSafeInteger = 1<<53 - 1
)

// ErrInvalidInput means an action's input does not fit its fields (400 invalid_request).
var ErrInvalidInput = errors.New("invalid action input")

// Option is one choice of an enum or multi_enum field.
type Option struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// Field is one field of a form action.
type Field struct {
	Name    string   `json:"name"`
	Label   string   `json:"label"`
	Kind    string   `json:"kind"`
	Options []Option `json:"options,omitempty"`
}

// NextAction is an action a run offers; the user submits it with start_action.
type NextAction struct {
	ActionID string         `json:"action_id"`
	Label    string         `json:"label"`
	Kind     string         `json:"kind"`
	Fields   []Field        `json:"fields"`
	Prefill  map[string]any `json:"prefill,omitempty"`
}

var fieldKinds = []string{FieldString, FieldText, FieldInteger, FieldNumber, FieldBoolean, FieldEnum, FieldMultiEnum}

// ValidateInput checks an action's input against its fields. Keys that are not fields
// are rejected, and so is null. integer is a whole number within ±MaxSafeInteger,
// number any finite number, boolean a bool, string and text UTF-8 strings of at most
// MaxStringBytes and MaxTextBytes, enum one of the option values, and multi_enum a list
// of distinct option values. Missing fields are allowed. Numbers may be float64,
// json.Number or Go integers. Errors are *errs.Error of ErrInvalidInput naming the
// field, the kind expected and the value.
func ValidateInput(a NextAction, input map[string]any) error {
	keys := make([]string, 0, len(input))
	for k := range input {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		i := slices.IndexFunc(a.Fields, func(f Field) bool { return f.Name == k })
		if i < 0 {
			names := make([]string, len(a.Fields))
			for j, f := range a.Fields {
				names[j] = f.Name
			}
			return errs.New(ErrInvalidInput, map[string]any{"action_id": a.ActionID, "field": short(k)},
				"input field %s is not a field of action %s (its fields: %s)", quote(k), quote(a.ActionID), strings.Join(names, ", "))
		}
		if msg := checkValue(a.Fields[i], input[k]); msg != "" {
			f := a.Fields[i]
			return errs.New(ErrInvalidInput,
				map[string]any{"action_id": a.ActionID, "field": f.Name, "kind": f.Kind, "value": shortValue(input[k])},
				"input field %s (%s) %s", quote(f.Name), f.Kind, msg)
		}
	}
	return nil
}

// checkValue returns "" when v fits f, or what is wrong as the end of a sentence.
func checkValue(f Field, v any) string {
	got := "got " + shortValue(v)
	switch f.Kind {
	case FieldString, FieldText:
		s, ok := v.(string)
		limit := MaxStringBytes
		if f.Kind == FieldText {
			limit = MaxTextBytes
		}
		switch {
		case !ok:
			return "must be a string; " + got
		case !utf8.ValidString(s):
			return "must be valid UTF-8"
		case len(s) > limit:
			return fmt.Sprintf("is %d bytes, over the limit of %d bytes", len(s), limit)
		}
	case FieldInteger:
		if !isInteger(v) {
			return fmt.Sprintf("must be a whole number between -%d and %d; %s", MaxSafeInteger, MaxSafeInteger, got)
		}
	case FieldNumber:
		if _, ok := toFloat(v); !ok {
			return "must be a number; " + got
		}
	case FieldBoolean:
		if _, ok := v.(bool); !ok {
			return "must be true or false; " + got
		}
	case FieldEnum:
		if len(f.Options) == 0 {
			return "has no options, so no value fits"
		}
		s, ok := v.(string)
		if !ok || !hasOption(f, s) {
			return fmt.Sprintf("must be one of %s; %s", optionList(f), got)
		}
	case FieldMultiEnum:
		if len(f.Options) == 0 {
			return "has no options, so no value fits"
		}
		var list []string
		switch v := v.(type) {
		case []string:
			list = v
		case []any:
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return fmt.Sprintf("must be a list of values from %s; %s", optionList(f), got)
				}
				list = append(list, s)
			}
		default:
			return fmt.Sprintf("must be a list of values from %s; %s", optionList(f), got)
		}
		seen := map[string]bool{}
		for _, s := range list {
			if !hasOption(f, s) {
				return fmt.Sprintf("has %s, which is not one of %s", quote(s), optionList(f))
			}
			if seen[s] {
				return fmt.Sprintf("has %s twice", quote(s))
			}
			seen[s] = true
		}
	default:
		return fmt.Sprintf("has an unknown kind; known kinds: %s", strings.Join(fieldKinds, ", "))
	}
	return ""
}

// parseNextActions checks the next actions, appending a notice to extra for each drop.
func parseNextActions(raw json.RawMessage, p Policy, extra []Output) ([]NextAction, []Output) {
	if isNull(raw) {
		return nil, extra
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(raw, &raws); err != nil {
		return nil, append(extra, dropped("The result's next_actions were dropped: they are a JSON %s, not a list.", jsonType(value(raw))))
	}
	var overflow []Output
	if len(raws) > p.MaxNextActions {
		overflow = []Output{dropped("Next actions %d to %d of %d were dropped: over the limit of %d next_actions per result.",
			p.MaxNextActions+1, len(raws), len(raws), p.MaxNextActions)}
		raws = raws[:max(p.MaxNextActions, 0)]
	}
	var acts []NextAction
	seen := map[string]bool{}
	for i, r := range raws {
		var a NextAction
		reason := "it is null"
		if !isNull(r) {
			if err := decodeJSON(r, &a); err != nil {
				reason = decodeReason(err)
			} else if reason = checkAction(a, p); reason == "" && seen[a.ActionID] {
				reason = "an earlier action has the same action_id"
			}
		}
		what := fmt.Sprintf("action %d", i+1)
		if a.ActionID != "" {
			what += " (" + quote(a.ActionID) + ")"
		}
		if reason != "" {
			extra = append(extra, dropped("Next %s was dropped: %s.", what, reason))
			continue
		}
		seen[a.ActionID] = true
		if a.Fields == nil {
			a.Fields = []Field{}
		}
		for k, v := range a.Prefill {
			if v == nil {
				delete(a.Prefill, k)
			}
		}
		// As the original hub: each prefill entry is checked on its own, and only the
		// ones that don't fit their field are dropped.
		keys := make([]string, 0, len(a.Prefill))
		for k := range a.Prefill {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := ValidateInput(a, map[string]any{k: a.Prefill[k]}); err != nil {
				extra = append(extra, dropped("The prefill of next %s lost an entry: %v.", what, err))
				delete(a.Prefill, k)
			}
		}
		if len(a.Prefill) == 0 {
			a.Prefill = nil
		}
		acts = append(acts, a)
	}
	return acts, append(extra, overflow...)
}

// checkAction returns "" when a is a well-formed form action within p, or why not.
func checkAction(a NextAction, p Policy) string {
	switch {
	case a.ActionID == "":
		return "it has no action_id"
	case a.Label == "":
		return "it has no label"
	case a.Kind != FormKind:
		return fmt.Sprintf("its kind is %s, want %q", quote(a.Kind), FormKind)
	case len(a.Fields) > p.MaxFields:
		return fmt.Sprintf("it has %d fields, over the limit of %d fields per action", len(a.Fields), p.MaxFields)
	}
	names := map[string]bool{}
	for i, f := range a.Fields {
		switch {
		case f.Name == "":
			return fmt.Sprintf("its field %d has no name", i+1)
		case names[f.Name]:
			return fmt.Sprintf("it has two fields named %s", quote(f.Name))
		case !slices.Contains(fieldKinds, f.Kind):
			return fmt.Sprintf("its field %s has the kind %s (known kinds: %s)", quote(f.Name), quote(f.Kind), strings.Join(fieldKinds, ", "))
		case (f.Kind == FieldEnum || f.Kind == FieldMultiEnum) && len(f.Options) == 0:
			return fmt.Sprintf("its field %s (%s) has no options", quote(f.Name), f.Kind)
		}
		names[f.Name] = true
		values := map[string]bool{}
		for _, o := range f.Options {
			if values[o.Value] {
				return fmt.Sprintf("its field %s has the option value %s twice", quote(f.Name), quote(o.Value))
			}
			values[o.Value] = true
		}
	}
	return ""
}

func hasOption(f Field, s string) bool {
	return slices.ContainsFunc(f.Options, func(o Option) bool { return o.Value == s })
}

func optionList(f Field) string {
	vals := make([]string, len(f.Options))
	for i, o := range f.Options {
		vals[i] = quote(o.Value)
	}
	return strings.Join(vals, ", ")
}

// toFloat returns v as a finite float64, for every number type input can hold.
func toFloat(v any) (float64, bool) {
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case float32:
		f = float64(v)
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(v), 64); err != nil {
			return 0, false
		}
	case int:
		f = float64(v)
	case int8:
		f = float64(v)
	case int16:
		f = float64(v)
	case int32:
		f = float64(v)
	case int64:
		f = float64(v)
	case uint:
		f = float64(v)
	case uint8:
		f = float64(v)
	case uint16:
		f = float64(v)
	case uint32:
		f = float64(v)
	case uint64:
		f = float64(v)
	default:
		return 0, false
	}
	return f, !math.IsInf(f, 0) && !math.IsNaN(f)
}

// isInteger reports whether v is a whole number within ±MaxSafeInteger. A json.Number
// in integer syntax is checked exactly, so 2^53 is not let through by rounding.
func isInteger(v any) bool {
	if n, ok := v.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i >= -MaxSafeInteger && i <= MaxSafeInteger
		}
	}
	switch v := v.(type) {
	case int64:
		return v >= -MaxSafeInteger && v <= MaxSafeInteger
	case uint64:
		return v <= MaxSafeInteger
	case int:
		return v >= -MaxSafeInteger && v <= MaxSafeInteger
	case uint:
		return v <= MaxSafeInteger
	}
	f, ok := toFloat(v)
	return ok && f == math.Trunc(f) && math.Abs(f) <= MaxSafeInteger
}

// shortValue describes v for a message: its JSON, cut to 60 bytes.
func shortValue(v any) string {
	if v == nil {
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("a %T", v)
	}
	return short(string(b))
}

// short cuts s to 60 bytes, on a rune boundary, marking the cut.
func short(s string) string {
	const limit = 60
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// quote quotes s, cut to 60 bytes, for a message.
func quote(s string) string {
	return strconv.Quote(short(s))
}
