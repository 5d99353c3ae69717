package contract

// FieldFile is the kind of an input schema's file field (SPEC §5b): at most one per
// schema, with Accept, Min and Max.
const FieldFile = "file"

// InputField is one field of a version's input_schema (SPEC §5b): a form field of kind
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
