package openapi

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// reflector turns Go types into JSON Schema (2020-12, as OpenAPI 3.1 takes it) the way
// encoding/json writes and reads them: json tags name the fields, a field without
// omitempty or omitzero is required in an answer, a pointer may be null, time.Time is a
// date-time string, json.RawMessage and interfaces are any JSON, maps are objects and
// slices arrays. Each named struct becomes one component, so a wire type is described
// once, where it is defined. A field tagged openapi:"nullable" may also be null (a
// nil slice, which encoding/json writes as null).
//
// A type is described twice when it is both sent and received: as an answer (answer
// true), whose fields are required unless omitted when empty, and as a request body
// (named with a Request suffix),
// whose fields a client may leave out (the server's decoder takes missing fields as
// zero). Both refuse fields they do not name, as the server's decoder does.
type reflector struct {
	components map[string]any
	names      map[compKey]string
}

type compKey struct {
	t      reflect.Type
	answer bool
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

func newReflector() *reflector {
	return &reflector{components: map[string]any{}, names: map[compKey]string{}}
}

// schema is the schema of values of t.
func (g *reflector) schema(t reflect.Type, answer bool) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{}
	case t.Kind() == reflect.Pointer:
		return nullable(g.schema(t.Elem(), answer))
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		// Written by its own MarshalJSON: the type's documentation says the shape.
		return map[string]any{"description": "see " + t.String() + " in docs/api.md"}
	case t.Implements(textType):
		return map[string]any{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return orNull(map[string]any{"type": "array", "items": g.schema(t.Elem(), answer)}, !answer)
	case reflect.Map:
		s := map[string]any{"type": "object"}
		if t.Elem().Kind() != reflect.Interface {
			s["additionalProperties"] = g.schema(t.Elem(), answer)
		}
		return orNull(s, !answer)
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t, answer)
		}
		return map[string]any{"$ref": "#/components/schemas/" + g.component(t, answer)}
	}
	panic("openapi: no JSON schema for " + t.String())
}

// component names t's schema in components/schemas, describing it the first time.
func (g *reflector) component(t reflect.Type, answer bool) string {
	k := compKey{t, answer}
	if n, ok := g.names[k]; ok {
		return n
	}
	n := t.Name()
	if pkg := t.PkgPath(); !strings.HasSuffix(pkg, "/wire") {
		n = pkg[strings.LastIndex(pkg, "/")+1:] + "." + n
	}
	if !answer && !strings.HasSuffix(n, "Request") {
		n += "Request"
	}
	if _, taken := g.components[n]; taken {
		n += "Input" // an XRequest type that is also an answer
	}
	g.names[k] = n
	g.components[n] = map[string]any{} // a type that refers to itself finds its name
	g.components[n] = g.object(t, answer)
	return n
}

// object is the schema of a struct's fields, embedded structs' fields promoted as
// encoding/json promotes them.
func (g *reflector) object(t reflect.Type, answer bool) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, answer, props, &required)
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if answer && len(required) > 0 {
		s["required"] = required
	}
	return s
}

func (g *reflector) fields(t reflect.Type, answer bool, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, answer, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type, answer)
		if f.Tag.Get("openapi") == "nullable" {
			// A nil slice the server writes as null (wire says where).
			props[name] = nullable(props[name].(map[string]any))
		}
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
}

// orNull is s, nullable when null is true: a request may send null for a map or a
// slice, which the server's decoder reads as empty.
func orNull(s map[string]any, null bool) map[string]any {
	if null {
		return nullable(s)
	}
	return s
}

// nullable is s, or null.
func nullable(s map[string]any) map[string]any {
	if len(s) == 0 || (len(s) == 1 && s["description"] != nil) {
		return s // any JSON value includes null
	}
	if typ, ok := s["type"].(string); ok {
		c := make(map[string]any, len(s))
		for k, v := range s {
			c[k] = v
		}
		c["type"] = []string{typ, "null"}
		return c
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}
