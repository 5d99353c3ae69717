package contract

// JSONSchema is the JSON Schema (2020-12) of the inputs object fields accepts: one
// property per field, by its kind, titled with its label; no field is required, and no
// other property is allowed. Programs and agents (MCP's tools_list) read it.
func JSONSchema(fields []Field) map[string]any {
	props := map[string]any{}
	order := make([]string, 0, len(fields))
	for _, f := range fields {
		props[f.Name] = fieldSchema(f)
		order = append(order, f.Name)
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false, "x-order": order}
}

// InputsSchema is the JSON Schema of the inputs a run of s takes: its fields but the file
// slot. A tool without an input_schema takes any inputs object.
func (s InputSchema) InputsSchema() map[string]any {
	if s == nil {
		return map[string]any{"type": "object"}
	}
	var fields []Field
	for _, f := range s {
		if f.Kind != FieldFile {
			fields = append(fields, f.Field)
		}
	}
	return JSONSchema(fields)
}

func fieldSchema(f Field) map[string]any {
	m := map[string]any{"title": f.Label}
	switch f.Kind {
	case FieldString:
		m["type"], m["description"] = "string", "at most 4 KiB of UTF-8 text"
	case FieldText:
		m["type"], m["description"] = "string", "at most 64 KiB of UTF-8 text"
	case FieldInteger:
		m["type"], m["minimum"], m["maximum"] = "integer", -MaxSafeInteger, MaxSafeInteger
	case FieldNumber:
		m["type"] = "number"
	case FieldBoolean:
		m["type"] = "boolean"
	case FieldEnum:
		m["type"], m["enum"], m["description"] = "string", optionValues(f), optionDescription(f)
	case FieldMultiEnum:
		m["type"], m["uniqueItems"], m["description"] = "array", true, optionDescription(f)
		m["items"] = map[string]any{"type": "string", "enum": optionValues(f)}
	}
	return m
}

func optionValues(f Field) []string {
	out := make([]string, len(f.Options))
	for i, o := range f.Options {
		out[i] = o.Value
	}
	return out
}

func optionDescription(f Field) string {
	s := "the options, value: label:"
	for _, o := range f.Options {
		s += " " + o.Value + ": " + o.Label + ";"
	}
	return s
}
