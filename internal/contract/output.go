package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Output kinds (docs/spec.md §5).
const (
	KindNotice   = "notice"
	KindMarkdown = "markdown"
	KindTable    = "table"
	KindJSON     = "json"
	KindHTML     = "html_sandboxed"
	KindVegaLite = "vega_lite"
)

// Notice levels.
const (
	LevelInfo    = "info"
	LevelWarning = "warning"
	LevelError   = "error"
)

// Column is one column of a table output: Key names the row field shown under Label.
type Column struct {
	Key   string `json:"key"`
	Label string `json:"label"`
}

// Output is one output of a run. Only the fields of its Kind are meaningful, and only
// those are written and read as JSON, under docs/spec.md's names (kind, level, message,
// markdown, title, columns, rows, value, html, spec). Decoded numbers inside Rows, Value
// and Spec are json.Number, so large integers keep their digits.
type Output struct {
	Kind    string
	Level   string // notice: info, warning or error
	Message string // notice
	// Reason and Params: a notice skrip itself writes may say what it says as a code
	// and its parameters too, so that a page says it in its own language (the web's
	// run.notice_reason.<Reason>); Message keeps the English for the API. A tool's
	// notices never carry them (ParseResult clears them).
	Reason   string
	Params   map[string]string
	Markdown string           // markdown
	Title    string           // table, json (optional)
	Columns  []Column         // table
	Rows     []map[string]any // table
	Value    any              // json
	HTML     string           // html_sandboxed
	Spec     any              // vega_lite
}

// Notice returns a notice output of level with a message made from format and args.
func Notice(level, format string, args ...any) Output {
	return Output{Kind: KindNotice, Level: level, Message: fmt.Sprintf(format, args...)}
}

// The JSON shape of each kind.
type (
	kindJSON struct {
		Kind string `json:"kind"`
	}
	markdownJSON struct {
		Kind     string `json:"kind"`
		Markdown string `json:"markdown"`
	}
	tableJSON struct {
		Kind    string           `json:"kind"`
		Title   string           `json:"title,omitempty"`
		Columns []Column         `json:"columns"`
		Rows    []map[string]any `json:"rows"`
	}
	valueJSON struct {
		Kind  string `json:"kind"`
		Title string `json:"title,omitempty"`
		Value any    `json:"value"`
	}
	htmlJSON struct {
		Kind string `json:"kind"`
		HTML string `json:"html"`
	}
	vegaJSON struct {
		Kind string `json:"kind"`
		Spec any    `json:"spec"`
	}
)

// MarshalJSON writes the kind and the fields of that kind. A table's nil columns and
// rows are written as []. An unknown kind is written as {"kind": ...} alone.
func (o Output) MarshalJSON() ([]byte, error) {
	switch o.Kind {
	case KindNotice:
		return json.Marshal(struct {
			Kind    string            `json:"kind"`
			Level   string            `json:"level"`
			Message string            `json:"message"`
			Reason  string            `json:"reason,omitempty"`
			Params  map[string]string `json:"params,omitempty"`
		}{o.Kind, o.Level, o.Message, o.Reason, o.Params})
	case KindMarkdown:
		return json.Marshal(markdownJSON{o.Kind, o.Markdown})
	case KindTable:
		t := tableJSON{Kind: o.Kind, Title: o.Title, Columns: o.Columns, Rows: o.Rows}
		if t.Columns == nil {
			t.Columns = []Column{}
		}
		if t.Rows == nil {
			t.Rows = []map[string]any{}
		}
		return json.Marshal(t)
	case KindJSON:
		return json.Marshal(valueJSON{o.Kind, o.Title, o.Value})
	case KindHTML:
		return json.Marshal(htmlJSON{o.Kind, o.HTML})
	case KindVegaLite:
		return json.Marshal(vegaJSON{o.Kind, o.Spec})
	}
	return json.Marshal(kindJSON{o.Kind})
}

// UnmarshalJSON reads the kind and then only the fields of that kind; other keys are
// ignored. An unknown kind is not an error here: ParseResult drops it with a notice.
func (o *Output) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	var head kindJSON
	if err := decodeJSON(data, &head); err != nil {
		return err
	}
	out := Output{Kind: head.Kind}
	var err error
	switch head.Kind {
	case KindNotice:
		var w struct {
			Level   string            `json:"level"`
			Message string            `json:"message"`
			Reason  string            `json:"reason"`
			Params  map[string]string `json:"params"`
		}
		err = decodeJSON(data, &w)
		out.Level, out.Message, out.Reason, out.Params = w.Level, w.Message, w.Reason, w.Params
	case KindMarkdown:
		var w markdownJSON
		err = decodeJSON(data, &w)
		out.Markdown = w.Markdown
	case KindTable:
		var w tableJSON
		err = decodeJSON(data, &w)
		out.Title, out.Columns, out.Rows = w.Title, w.Columns, w.Rows
	case KindJSON:
		var w valueJSON
		err = decodeJSON(data, &w)
		out.Title, out.Value = w.Title, w.Value
	case KindHTML:
		var w htmlJSON
		err = decodeJSON(data, &w)
		out.HTML = w.HTML
	case KindVegaLite:
		var w vegaJSON
		err = decodeJSON(data, &w)
		out.Spec = w.Spec
	}
	if err != nil {
		return err
	}
	*o = out
	return nil
}

// decodeJSON decodes one JSON value, keeping numbers as json.Number.
func decodeJSON(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	for _, c := range data[d.InputOffset():] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return fmt.Errorf("data after the JSON value")
		}
	}
	return nil
}

// jsonSize is the size of v as compact JSON, without HTML escaping.
func jsonSize(v any) (int, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return 0, err
	}
	return b.Len() - 1, nil // Encode adds a newline
}
