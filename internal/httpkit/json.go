package httpkit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
			"request body is not valid JSON: %s (at byte %d)", syntax.Error(), syntax.Offset)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return errs.New(ErrInvalidRequest, nil, "request body must be a JSON object, not %s", typ.Value)
		}
		return errs.New(ErrInvalidRequest, map[string]any{"field": field},
			"field %q must be %s, not %s", field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return errs.New(ErrInvalidRequest, map[string]any{"field": strings.Trim(name, `"`)},
			"request body has an unknown field %s", name)
	}
	return errs.New(ErrInvalidRequest, nil, "request body is not valid JSON: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	}
	if strings.HasPrefix(goKind, "int") || strings.HasPrefix(goKind, "uint") || strings.HasPrefix(goKind, "float") {
		return "a number"
	}
	return fmt.Sprintf("a %s", goKind)
}
