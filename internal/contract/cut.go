package contract

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// The original hub's normalizer cuts markdown, html and tables over their limits to size
// rather than drop them, and says so in one notice per kind, after the tool's outputs.
// Its notices are worded here in Swedish, the language of the original's users.

// systemNotice is a notice skrip adds about what it did to a result.
func systemNotice(format string, args ...any) Output {
	return Notice(LevelWarning, "Systemmeddelande: "+format, args...)
}

// cutCounts counts the outputs of one result that were cut, by kind.
type cutCounts struct {
	markdown, html, tables int
}

// cut returns o cut to p's limits, counting what it cut.
func (c *cutCounts) cut(o Output, p Policy) Output {
	switch o.Kind {
	case KindMarkdown:
		if s, ok := cutUTF8(o.Markdown, p.MaxMarkdownBytes); ok {
			o.Markdown = s
			c.markdown++
		}
	case KindHTML:
		if s, ok := cutUTF8(o.HTML, p.MaxHTMLBytes); ok {
			o.HTML = s
			c.html++
		}
	case KindTable:
		if t, ok := cutTable(o, p); ok {
			o = t
			c.tables++
		}
	}
	return o
}

// notices are the notices about what was cut.
func (c cutCounts) notices(p Policy) []Output {
	var out []Output
	if c.markdown > 0 {
		out = append(out, systemNotice("%d markdown-utdata kortades till %d byte.", c.markdown, p.MaxMarkdownBytes))
	}
	if c.html > 0 {
		out = append(out, systemNotice("%d html_sandboxed-utdata kortades till %d byte.", c.html, p.MaxHTMLBytes))
	}
	if c.tables > 0 {
		out = append(out, systemNotice("%d tabeller kortades till plattformens gränser för rader, kolumner och celler.", c.tables))
	}
	return out
}

// cutUTF8 returns s cut to at most n bytes without splitting a character, and whether it
// was cut.
func cutUTF8(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// cutTable returns table o cut to p's columns, rows and cell bytes, and whether anything
// was cut. A cut table's rows keep only its remaining columns' keys.
func cutTable(o Output, p Policy) (Output, bool) {
	cut := false
	if len(o.Columns) > p.MaxTableColumns {
		o.Columns = o.Columns[:max(p.MaxTableColumns, 0)]
		cut = true
	}
	if len(o.Rows) > p.MaxTableRows {
		o.Rows = o.Rows[:max(p.MaxTableRows, 0)]
		cut = true
	}
	for _, row := range o.Rows {
		for _, v := range row {
			if s, ok := v.(string); ok && len(s) > p.MaxTableCellBytes {
				cut = true
			}
		}
	}
	if !cut {
		return o, false
	}
	rows := make([]map[string]any, len(o.Rows))
	for i, row := range o.Rows {
		kept := make(map[string]any, len(o.Columns))
		for _, c := range o.Columns {
			v, ok := row[c.Key]
			if !ok {
				continue
			}
			if s, isString := v.(string); isString {
				v, _ = cutUTF8(s, p.MaxTableCellBytes)
			}
			kept[c.Key] = v
		}
		rows[i] = kept
	}
	o.Rows = rows
	return o, true
}

// cutState returns the most of state's keys, in sorted order, whose compact JSON fits in
// limit bytes (the original's rule), and how many keys were left out.
func cutState(state map[string]any, limit int) (json.RawMessage, int) {
	keys := make([]string, 0, len(state))
	for k := range state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	prefix := func(n int) json.RawMessage {
		m := make(map[string]any, n)
		for _, k := range keys[:n] {
			m[k] = state[k]
		}
		b, err := compactJSON(m)
		if err != nil {
			return nil
		}
		return b
	}
	// The largest n whose first n keys fit: sizes grow with n.
	lo, hi := 0, len(keys)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if b := prefix(mid); b != nil && len(b) <= limit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return prefix(lo), len(keys) - lo
}

// compactJSON encodes v compactly, keys sorted, without escaping HTML characters.
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
