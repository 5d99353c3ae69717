package contract

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/errs"
)

// Rules a run's inputs or a user's settings can break: the "rule" of an ErrInvalidInput's
// details, beside RuleMin, RuleMax and RuleAccept for files.
const (
	RuleUnknownField = "unknown_field" // a key that is no field of the schema
	RuleType         = "type"          // a value of the wrong type
	RuleEnum         = "enum"          // a value outside the field's options
	RuleMaxLength    = "max_length"    // a string over MaxStringBytes or a text over MaxTextBytes
	RuleFileField    = "file_field"    // the file field named in inputs: files travel as files
	RuleNoFiles      = "no_file_field" // files sent to a tool whose schema has no file field
)

// FilesField names the files of a run in an error's details when the schema has no file
// field of its own: the multipart field they came in.
const FilesField = "files"

// NormalizeInputs checks a run's inputs and the names of its files against the version's
// input_schema (docs/spec.md §5b) and returns the inputs the tool sees in SKRIPTOTEKET_INPUTS.
// A nil schema accepts any inputs, returned as they are, and any files. With a schema:
// keys that are no field are refused; null and empty strings leave the key out; strings
// are trimmed; integers and numbers may come as numeric strings and become numbers
// (integers as int64, and as in the original hub "2.0" or a JSON 2.0 is no integer);
// booleans may come as the strings the original takes ("yes", "on", "1", " FALSE ");
// any other value of the wrong type is refused, and so is an enum value outside its
// options. Files must number min..max of the file field and end in one
// of its accept extensions (case-insensitive); a schema without a file field refuses
// files. Errors are *errs.Error of ErrInvalidInput with details {field, rule}.
func NormalizeInputs(s InputSchema, inputs map[string]any, fileNames []string) (map[string]any, error) {
	if s == nil {
		return inputs, nil
	}
	fields := make([]Field, 0, len(s))
	for _, f := range s {
		if f.Kind != FieldFile {
			fields = append(fields, f.Field)
		}
	}
	file := s.FileField()
	out := make(map[string]any, len(inputs))
	for _, k := range sortedKeys(inputs) {
		if file != nil && k == file.Name {
			return nil, errs.New(ErrInvalidInput, map[string]any{"field": file.Name, "rule": RuleFileField},
				"input %s is the tool's file field; send its files as files, not in inputs", quote(k))
		}
		v, keep, err := normalize("input", fields, k, inputs[k])
		if err != nil {
			return nil, err
		}
		if keep {
			out[k] = v
		}
	}
	return out, checkFiles(file, fileNames)
}

// checkFiles checks the names of a run's files against the schema's file field (nil:
// the schema has none).
func checkFiles(f *InputField, names []string) error {
	if f == nil {
		if len(names) > 0 {
			return errs.New(ErrInvalidInput, map[string]any{"field": FilesField, "rule": RuleNoFiles, "files": len(names)},
				"this tool takes no files, and %d were sent; run it without files", len(names))
		}
		return nil
	}
	n, lo, hi := len(names), *f.Min, *f.Max
	d := map[string]any{"field": f.Name, "files": n, "min": lo, "max": hi}
	switch {
	case n < lo:
		d["rule"] = RuleMin
		return errs.New(ErrInvalidInput, d, "file field %s needs at least %s; %s sent", quote(f.Name), count(lo, "file"), count(n, "was"))
	case n > hi:
		d["rule"] = RuleMax
		return errs.New(ErrInvalidInput, d, "file field %s takes at most %s; %d were sent", quote(f.Name), count(hi, "file"), n)
	}
	if len(f.Accept) == 0 {
		return nil
	}
	for _, name := range names {
		if !Accepts(f.Accept, name) {
			return errs.New(ErrInvalidInput, map[string]any{"field": f.Name, "rule": RuleAccept, "file": short(name), "accept": f.Accept},
				"file %s is not one of the types file field %s takes (%s); send a file ending in one of those",
				quote(name), quote(f.Name), strings.Join(f.Accept, ", "))
		}
	}
	return nil
}

// Accepts reports whether a file name ends in one of the accept extensions, ignoring case,
// with something before it.
func Accepts(accept []string, name string) bool {
	lower := strings.ToLower(name)
	return slices.ContainsFunc(accept, func(ext string) bool {
		return len(lower) > len(ext) && strings.HasSuffix(lower, strings.ToLower(ext))
	})
}

// count says n things: "1 file", "2 files"; with "was", "1 was", "none was", "2 were".
func count(n int, what string) string {
	if what == "was" {
		switch n {
		case 0:
			return "none was"
		case 1:
			return "1 was"
		}
		return fmt.Sprintf("%d were", n)
	}
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// ValidateSettings checks a user's settings against a settings_schema (docs/spec.md §5b) and
// returns them as they are stored: keys that are no field are refused, and values are
// normalised as NormalizeInputs does (null and "" left out, strings trimmed, numeric
// strings coerced); a multi_enum takes a list of distinct option values. A nil schema
// takes no settings. Errors are *errs.Error of ErrInvalidInput with details {field, rule}.
func ValidateSettings(s SettingsSchema, values map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(values))
	for _, k := range sortedKeys(values) {
		v, keep, err := normalize("setting", s, k, values[k])
		if err != nil {
			return nil, err
		}
		if keep {
			out[k] = v
		}
	}
	return out, nil
}

// KeepValidSettings returns what of values still fits the schema, field by field: values
// saved under an older schema that no longer fit are dropped, never refused, so a schema
// change never fails a run. It never returns nil.
func KeepValidSettings(s SettingsSchema, values map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range values {
		if n, keep, err := normalize("setting", s, k, v); err == nil && keep {
			out[k] = n
		}
	}
	return out
}

// normalize checks value v of key k against fields; what ("input", "setting") names it
// in messages. keep is false when the key is to be left out (null, an empty string).
func normalize(what string, fields []Field, k string, v any) (out any, keep bool, err error) {
	i := slices.IndexFunc(fields, func(f Field) bool { return f.Name == k })
	if i < 0 {
		names := make([]string, len(fields))
		for j, f := range fields {
			names[j] = f.Name
		}
		known := "it takes no " + what + "s"
		if len(names) > 0 {
			known = "its " + what + "s: " + strings.Join(names, ", ")
		}
		return nil, false, errs.New(ErrInvalidInput, map[string]any{"field": short(k), "rule": RuleUnknownField},
			"%s %s is not one this tool takes (%s)", what, quote(k), known)
	}
	f := fields[i]
	fail := func(rule, format string, args ...any) (any, bool, error) {
		return nil, false, errs.New(ErrInvalidInput, map[string]any{"field": f.Name, "rule": rule, "kind": f.Kind},
			"%s %s (%s) %s", what, quote(f.Name), f.Kind, fmt.Sprintf(format, args...))
	}
	if v == nil {
		return nil, false, nil
	}
	got := "got " + shortValue(v)
	switch f.Kind {
	case FieldString, FieldText, FieldEnum:
		s, ok := v.(string)
		if !ok {
			if f.Kind == FieldEnum {
				return fail(RuleType, "must be one of %s; %s", optionList(f), got)
			}
			return fail(RuleType, "must be a string; %s", got)
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, false, nil
		}
		limit := MaxStringBytes
		if f.Kind == FieldText {
			limit = MaxTextBytes
		}
		switch {
		case f.Kind == FieldEnum && !hasOption(f, s):
			return fail(RuleEnum, "must be one of %s; %s", optionList(f), got)
		case len(s) > limit:
			return fail(RuleMaxLength, "is %d bytes, over the limit of %d bytes", len(s), limit)
		}
		return s, true, nil
	case FieldInteger:
		var blank bool
		if v, blank = fromNumericString(v); blank {
			return nil, false, nil
		}
		// As the original's int(): "2.0", 2.0 and 2e0 are no integers, though whole.
		// (A float64 from Go, where 2 and 2.0 are one value, is taken when whole.)
		if n, isNumber := v.(json.Number); isNumber && !integerLiteral(string(n)) {
			return fail(RuleType, "must be a whole number between -%d and %d; %s", MaxSafeInteger, MaxSafeInteger, got)
		}
		n, ok := toInt64(v)
		if !ok {
			return fail(RuleType, "must be a whole number between -%d and %d; %s", MaxSafeInteger, MaxSafeInteger, got)
		}
		return n, true, nil
	case FieldNumber:
		var blank bool
		if v, blank = fromNumericString(v); blank {
			return nil, false, nil
		}
		if _, isBool := v.(bool); !isBool {
			if n, ok := toFloat(v); ok {
				return n, true, nil
			}
		}
		return fail(RuleType, "must be a number; %s", got)
	case FieldBoolean:
		if s, isString := v.(string); isString {
			// The strings the original hub takes for a boolean, in any case and with
			// spaces around; a blank one leaves the key out.
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "":
				return nil, false, nil
			case "true", "1", "yes", "on":
				return true, true, nil
			case "false", "0", "no", "off":
				return false, true, nil
			}
		}
		b, ok := v.(bool)
		if !ok {
			return fail(RuleType, "must be true or false (or one of the strings true, false, yes, no, on, off, 1, 0); %s", got)
		}
		return b, true, nil
	case FieldMultiEnum:
		if msg := checkValue(f, v); msg != "" {
			rule := RuleEnum
			if strings.HasPrefix(msg, "must be a list") {
				rule = RuleType
			}
			return fail(rule, "%s", msg)
		}
		list := []string{}
		switch v := v.(type) {
		case []string:
			list = append(list, v...)
		case []any:
			for _, e := range v {
				list = append(list, e.(string))
			}
		}
		return list, true, nil
	}
	return fail(RuleType, "has a kind this schema does not take")
}

// numeric reports whether s is a plain decimal number: an optional sign, digits with at
// most one dot, and an optional exponent. It keeps out what strconv also parses but no
// user means as a number: "NaN", "Inf", "0x1p3", "1_000".
func numeric(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	digits, dots := 0, 0
	for _, c := range mant {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	if digits == 0 || dots > 1 {
		return false
	}
	if hasExp {
		exp = strings.TrimPrefix(strings.TrimPrefix(exp, "-"), "+")
		if exp == "" || strings.Trim(exp, "0123456789") != "" {
			return false
		}
	}
	return true
}

// integerLiteral reports whether s is a plain integer: an optional sign and digits.
func integerLiteral(s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// toInt64 returns v as an int64 when it is a whole number within ±MaxSafeInteger.
func toInt64(v any) (int64, bool) {
	if _, isBool := v.(bool); isBool || !isInteger(v) {
		return 0, false
	}
	if n, ok := v.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, true
		}
	}
	f, _ := toFloat(v)
	return int64(math.Round(f)), true
}

// fromNumericString is how an integer or number field reads a string: trimmed, a blank
// one is left out (blank is true), a numeric one becomes a json.Number, and any other
// stays the string it was, for the type check to refuse. Other values pass unchanged.
func fromNumericString(v any) (_ any, blank bool) {
	s, ok := v.(string)
	if !ok {
		return v, false
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil, true
	case numeric(s):
		return json.Number(s), false
	}
	return s, false
}
