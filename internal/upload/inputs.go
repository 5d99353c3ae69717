package upload

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/errs"
)

// parseInputs parses the inputs field: one JSON object and nothing after it. An empty or
// blank value means no inputs and gives nil. Numbers stay json.Number, as written, so
// that an integer field can refuse 2.0 as the original hub does.
func parseInputs(b []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	const example = `send a JSON object such as {"name": "value"}`
	details := map[string]any{"field": InputsField}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		// The decoder's own words name Go types; the client gets ours.
		var (
			syntax *json.SyntaxError
			typ    *json.UnmarshalTypeError
		)
		switch {
		case errors.As(err, &syntax):
			details["offset"] = syntax.Offset
			return nil, errs.New(ErrInvalid, details,
				"the inputs field is not valid JSON: something is missing or out of place at byte %d (a quote, comma or bracket?); %s", syntax.Offset, example)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errs.New(ErrInvalid, details,
				"the inputs field is not valid JSON: it ends in the middle of a value; %s", example)
		case errors.As(err, &typ) && strings.HasPrefix(typ.Value, "number"):
			if typ.Field != "" {
				details["input"] = typ.Field
			}
			return nil, errs.New(ErrInvalid, details,
				"the inputs field holds %s, larger than any number a tool can take (at most 1.8e308 either side of 0)", strings.TrimPrefix(typ.Value, "number "))
		}
		return nil, errs.New(ErrInvalid, details, "the inputs field is not valid JSON; %s", example)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errs.New(ErrInvalid, details, "the inputs field must be a JSON object, not %s; %s", jsonKind(v), example)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errs.New(ErrInvalid, details,
			"the inputs field must hold one JSON object and nothing after it; %s", example)
	}
	for k, v := range obj {
		if n, ok := tooLarge(v); ok {
			details["input"] = k
			return nil, errs.New(ErrInvalid, details,
				"the inputs field holds %s, larger than any number a tool can take (at most 1.8e308 either side of 0)", n)
		}
	}
	return obj, nil
}

// tooLarge finds a number in v that a float64 cannot hold.
func tooLarge(v any) (json.Number, bool) {
	switch v := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return v, true
		}
	case []any:
		for _, e := range v {
			if n, ok := tooLarge(e); ok {
				return n, true
			}
		}
	case map[string]any:
		for _, e := range v {
			if n, ok := tooLarge(e); ok {
				return n, true
			}
		}
	}
	return "", false
}

// jsonKind names the kind of a decoded JSON value for a message.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
