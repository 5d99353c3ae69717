package httpkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"

	"github.com/skrip-dev/skrip/internal/errs"
)

// maxJSONBody caps every JSON request body.
const maxJSONBody = 1 << 20

// WriteJSON answers with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// DecodeJSON reads one JSON object from r's body into v. Bodies over 1 MiB, malformed
// JSON, unknown fields and trailing data get errors that say exactly what is wrong.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return jsonError(err)
		}
		return errs.New(ErrInvalidRequest, nil, "request body must hold one JSON object and nothing after it")
	}
	return nil
}

// jsonError says what is wrong with a JSON body in our words: the decoder's own text
// names Go types ("Go value of type float64") and is no help to a client.
func jsonError(err error) error {
	var (
		mbe    *http.MaxBytesError
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mbe):
		return errs.New(ErrTooLarge, map[string]any{"limit_bytes": mbe.Limit},
			"request body is larger than the %d-byte (1 MiB) limit for JSON", mbe.Limit)
	case errors.Is(err, io.EOF):
		return errs.New(ErrInvalidRequest, nil, "request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errs.New(ErrInvalidRequest, nil, "request body is not valid JSON: it ends in the middle of a value")
	case errors.As(err, &syntax):
		return errs.New(ErrInvalidRequest, map[string]any{"offset": syntax.Offset},
			"request body is not valid JSON: something is missing or out of place at byte %d (a quote, comma or bracket?)", syntax.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return errs.New(ErrInvalidRequest, nil, "request body must be a JSON object, not %s", JSONGot(typ.Value))
		}
		return errs.New(ErrInvalidRequest, map[string]any{"field": field},
			"field %q must be %s, not %s", field, JSONWant(typ.Type), JSONGot(typ.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return errs.New(ErrInvalidRequest, map[string]any{"field": strings.Trim(name, `"`)},
			"request body has an unknown field %s", name)
	}
	return errs.New(ErrInvalidRequest, nil, "request body is not valid JSON")
}

// JSONWant names, for a message, the JSON value that decodes into a Go value of type t.
func JSONWant(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	switch k := t.Kind(); k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("a whole number from %d to %d", int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32:
		return "a number no larger than 3.4e38 either side of 0"
	case reflect.Float64, reflect.Interface:
		return "a number no larger than 1.8e308 either side of 0"
	case reflect.Pointer:
		return JSONWant(t.Elem())
	}
	return "another kind of value"
}

// JSONGot names, for a message, the JSON value json.UnmarshalTypeError.Value describes:
// "number 1e400" is the number 1e400, "string" a string.
func JSONGot(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n
	}
	switch v {
	case "bool":
		return "true or false"
	case "array", "object":
		return "an " + v
	case "":
		return "another kind of value"
	}
	return "a " + v
}
