package web

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/httpkit"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
)

// formField is one control of a typed form (a run's inputs, a tool's settings, a next
// action) with what the user typed or saved, and the server's refusal of it.
type formField struct {
	contract.Field
	ID       string          // the control's id; its error's id is ID + "-error"
	Input    string          // the control's name: "in.<name>" or "set.<name>"
	Value    string          // string, text, integer, number, enum
	Checked  bool            // boolean
	Selected map[string]bool // multi_enum
	Error    string          // the server's refusal of this field
	Blank    string          // enum: the label of an empty choice, "" for none
	Hint     string          // a sentence under the label
	Lines    int             // text: the textarea's rows; 0 for 5
}

// ErrorID is the id of the element that holds the field's error, which the control
// names in aria-describedby.
func (f formField) ErrorID() string { return f.ID + "-error" }

// DescribedBy is the control's aria-describedby: its hint and its error.
func (f formField) DescribedBy() string {
	if f.Hint != "" {
		return f.ID + "-hint " + f.ErrorID()
	}
	return f.ErrorID()
}

// Rows is a text field's height.
func (f formField) Rows() int {
	if f.Lines > 0 {
		return f.Lines
	}
	return 5
}

// newFields makes the controls of fields, with ids under prefix and names under
// namePrefix ("in." or "set.").
func newFields(fields []contract.Field, prefix, namePrefix string) []formField {
	out := make([]formField, 0, len(fields))
	for i, f := range fields {
		k := controlKey(i, f.Name)
		out = append(out, formField{Field: f, ID: prefix + "-" + k, Input: namePrefix + k, Selected: map[string]bool{}})
	}
	return out
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// controlKey is how the i-th field, name, appears in its control's id and name: the
// name itself when it is plain, else "~" and its position. A schema's names may hold
// spaces, quotes or any letter, which an id list (aria-describedby) or a browser's
// multipart field name would not carry intact; "~" keeps the two kinds apart.
func controlKey(i int, name string) string {
	if plainName.MatchString(name) {
		return name
	}
	return "~" + strconv.Itoa(i)
}

// fill sets the control's value from a JSON value: a prefill, saved settings.
func (f *formField) fill(v any) {
	switch x := v.(type) {
	case nil:
	case bool:
		f.Checked = x
	case []any:
		for _, s := range x {
			f.Selected[fmt.Sprint(s)] = true
		}
	case []string:
		for _, s := range x {
			f.Selected[s] = true
		}
	default:
		f.Value = cell(x)
	}
}

// keep sets the control's value from what the user sent: vals are the form's values
// for its name.
func (f *formField) keep(vals []string) {
	switch f.Kind {
	case contract.FieldBoolean:
		f.Checked = len(vals) > 0 && formBool(vals[0]) == true
	case contract.FieldMultiEnum:
		for _, v := range vals {
			f.Selected[v] = true
		}
	default:
		if len(vals) > 0 {
			f.Value = vals[0]
		}
	}
}

// fileSlot is the file control of a run form: the schema's file field, or the free
// slot of a version without a schema (Free).
type fileSlot struct {
	ID       string
	Name     string // the schema's field name, which the server's refusals name
	Label    string
	Accept   []string
	Min, Max int
	Free     bool // no schema: any files up to the upload cap
	Error    string
}

// ErrorID is the id of the slot's error.
func (s fileSlot) ErrorID() string { return s.ID + "-error" }

// AcceptAttr is the accept attribute: the extensions, comma-separated.
func (s fileSlot) AcceptAttr() string { return strings.Join(s.Accept, ",") }

// AcceptList is the extensions as a sentence lists them: ".html, .css, .png".
func (s fileSlot) AcceptList() string { return strings.Join(s.Accept, ", ") }

// runForm is the form that starts a run: the typed fields of the version's input_schema
// and its file slot, or for a version without a schema the file slot alone.
type runForm struct {
	Action string
	CSRF   string
	Submit string
	Limits upload.Limits
	Fields []formField
	File   *fileSlot // nil: the tool takes no files
	// FileAt is where the file slot stands among Fields: before Fields[FileAt], or last
	// when it is len(Fields). The schema's order is the author's, so the slot stands
	// where the instructions say ("1. Ladda upp en klasslista").
	FileAt int
	// SessionFiles is how many files the session keeps, which an empty slot reuses when
	// they fit the slot.
	SessionFiles int
	// KeptNames are the names of the kept files when the page knows them, so that the
	// form counts a kept file of a type the slot does not take as the server does
	// (workflow.countedFiles): not at all.
	KeptNames []string
	Error     string // a refusal that names no field of the form
}

// newRunForm builds the run form of a version with schema (nil: none). idPrefix keeps
// the ids of two forms on one page apart; fileLabel names a file slot without a label,
// and blank the empty choice of a list, in the page's language.
func newRunForm(schema contract.InputSchema, idPrefix, fileLabel, blank string, lim upload.Limits) *runForm {
	f := &runForm{Limits: lim}
	if schema == nil {
		f.File = &fileSlot{ID: idPrefix + "files", Label: fileLabel, Max: lim.MaxFiles, Free: true}
		return f
	}
	var plain []contract.Field
	for _, in := range schema {
		if in.Kind != contract.FieldFile {
			plain = append(plain, in.Field)
			continue
		}
		slot := &fileSlot{ID: idPrefix + "files", Name: in.Name, Label: in.Label, Accept: in.Accept, Max: lim.MaxFiles}
		if in.Min != nil {
			slot.Min = *in.Min
		}
		if in.Max != nil {
			slot.Max = min(*in.Max, lim.MaxFiles)
		}
		if slot.Label == "" {
			slot.Label = fileLabel
		}
		f.File = slot
		f.FileAt = len(plain)
	}
	f.Fields = newFields(plain, idPrefix+"in", "in.")
	for i := range f.Fields {
		f.Fields[i].Blank = blank
	}
	return f
}

// Multiple reports whether the slot takes more than one file.
func (s fileSlot) Multiple() bool { return s.Max > 1 }

// Required reports whether the browser should insist on a file: the schema asks for at
// least one and the session keeps none that fit. A run that sends no files gets the kept
// ones when they fit, and the server counts those (workflow.countedFiles).
func (f *runForm) Required() bool { return f.File != nil && f.File.Min >= 1 && !f.KeptFit() }

// KeptFit reports whether a run that sends no files gets the session's kept files, by
// the server's rule (workflow.countedFiles): a slot without a schema takes them all, a
// typed slot takes them when their number is within its min..max and each is of a type
// it accepts. The page's sentences about the kept files follow it.
func (f *runForm) KeptFit() bool {
	s := f.File
	if s == nil || f.SessionFiles == 0 {
		return false
	}
	if s.Free {
		return true
	}
	if f.SessionFiles < s.Min || f.SessionFiles > s.Max {
		return false
	}
	for _, name := range f.KeptNames {
		if len(s.Accept) > 0 && !contract.Accepts(s.Accept, name) {
			return false
		}
	}
	return true
}

// KeptForSlot is how many kept files an empty slot stands for, which the page's
// courtesy check counts: the kept files when a run without files gets them, else none.
func (f *runForm) KeptForSlot() int {
	if f.KeptFit() {
		return f.SessionFiles
	}
	return 0
}

// textFields are the multipart text fields the form sends besides its files.
func (f *runForm) textFields() []string {
	names := []string{"csrf"}
	for _, x := range f.Fields {
		names = append(names, x.Input)
	}
	return names
}

// formBool reads a checkbox as sent: "true", or "on" (what a browser sends for a box
// with no value), is true; "false", or nothing (an unticked box sends nothing), is false.
// Anything else goes on as the string the browser sent, so that the server's one
// validation refuses it beside the field rather than the form reading it as false.
func formBool(v string) any {
	switch v {
	case "true", "on":
		return true
	case "false", "":
		return false
	}
	return v
}

// inputs reads the typed fields from an upload's text fields: each as the string the
// browser sent (the server trims, coerces numbers and leaves empty ones out, docs/spec.md §5b,
// in one place for every client), and each boolean by formBool.
func (f *runForm) inputs(sent map[string]string) map[string]any {
	if len(f.Fields) == 0 {
		return nil
	}
	in := map[string]any{}
	for _, x := range f.Fields {
		v, ok := sent[x.Input]
		switch {
		case x.Kind == contract.FieldBoolean:
			in[x.Name] = formBool(v)
		case ok:
			in[x.Name] = v
		}
	}
	return in
}

// keep puts what the user sent back into the form, for the page that shows a refusal.
func (f *runForm) keep(sent map[string]string) {
	for i := range f.Fields {
		if v, ok := sent[f.Fields[i].Input]; ok {
			f.Fields[i].keep([]string{v})
		}
	}
}

// refuse places the server's message: beside the field it names, or above the form.
func (f *runForm) refuse(field, msg string) {
	if field != "" {
		for i := range f.Fields {
			if f.Fields[i].Name == field || f.Fields[i].Input == field {
				f.Fields[i].Error = msg
				return
			}
		}
		if f.File != nil && (field == f.File.Name || field == "files") {
			f.File.Error = msg
			return
		}
	}
	f.Error = msg
}

// panel is a form of fields saved together (a tool's settings, its description): the
// fields with their saved values, where it is sent, and how the last save went.
type panel struct {
	Action string
	CSRF   string
	Fields []formField
	Saved  bool   // the values were just saved
	Error  string // a refusal that names no field
}

// newSettingsPanel builds the settings panel of schema with the saved values; blank
// names the empty choice of a list.
func newSettingsPanel(schema contract.SettingsSchema, values map[string]any, idPrefix, blank string) *panel {
	s := &panel{Fields: newFields(schema, idPrefix+"set", "set.")}
	for i := range s.Fields {
		s.Fields[i].Blank = blank
		s.Fields[i].fill(values[s.Fields[i].Name])
	}
	return s
}

// keep puts what the user sent back into the panel.
func (s *panel) keep(form url.Values) {
	for i := range s.Fields {
		f := &s.Fields[i]
		*f = formField{Field: f.Field, ID: f.ID, Input: f.Input, Blank: f.Blank, Selected: map[string]bool{}}
		f.keep(form[f.Input])
	}
}

// value is what the panel's field name holds.
func (p *panel) value(name string) string {
	for _, f := range p.Fields {
		if f.Name == name {
			return f.Value
		}
	}
	return ""
}

// refuse places the server's message beside the field it names, or above the panel.
func (s *panel) refuse(field, msg string) {
	for i := range s.Fields {
		if field != "" && s.Fields[i].Name == field {
			s.Fields[i].Error = msg
			return
		}
	}
	s.Error = msg
}

// settingsValues reads a settings panel: a boolean by formBool, a
// multi_enum as the list of ticked options (empty when none is), and every other field
// as the string the browser sent, which the server trims, coerces and leaves out when
// empty (docs/spec.md §5b), as it does for a run's inputs.
func settingsValues(schema contract.SettingsSchema, form url.Values) map[string]any {
	out := map[string]any{}
	for i, f := range schema {
		vals := form["set."+controlKey(i, f.Name)]
		switch {
		case f.Kind == contract.FieldBoolean:
			v := ""
			if len(vals) > 0 {
				v = vals[0]
			}
			out[f.Name] = formBool(v)
		case f.Kind == contract.FieldMultiEnum:
			list := make([]any, 0, len(vals))
			for _, v := range vals {
				list = append(list, v)
			}
			out[f.Name] = list
		case len(vals) > 0:
			out[f.Name] = vals[0]
		}
	}
	return out
}

// refusedField is the form field a refusal names in its details ({"field", "rule"}),
// "files" for a refusal of an uploaded file, or "".
func refusedField(err error) string {
	_, _, _, details := httpkit.Describe(err)
	if f, ok := details["field"].(string); ok {
		return f
	}
	if _, ok := details["file"]; ok {
		return "files"
	}
	return ""
}

// inputSchema is v's input_schema; nil when it has none. The upload cap is not checked
// again here: a schema saved under a higher cap still shows, its slot held to today's
// (newRunForm).
func inputSchema(v store.ToolVersion) (contract.InputSchema, error) {
	return contract.ParseInputSchema(v.InputSchema, 0)
}
