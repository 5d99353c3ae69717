package config

import (
	"fmt"
	"strings"
)

// docs/settings.md's table is generated from Settings(), so that a setting cannot be added
// without its documentation: TestSettingsDoc fails until the table is regenerated.
//go:generate env SKRIP_UPDATE_DOCS=1 go test -count=1 -run ^TestSettingsDoc$ .

// settingsTable is the markdown table of every setting, in the order of Settings(): its
// flag, environment variable, default, the kind of value it takes and what it does.
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| flag | env | default | value | meaning |\n|---|---|---|---|---|\n")
	for _, s := range Settings() {
		def := "`" + s.Default + "`"
		switch {
		case s.Shown != "":
			def = mdCell(s.Shown)
		case s.Default == "":
			def = "empty"
		}
		fmt.Fprintf(&b, "| `--%s` | `%s` | %s | %s | %s |\n", s.Name, s.Env(), def, s.valueKind(), mdCell(s.Help))
	}
	return b.String()
}

// valueKind says in a few words what a setting's value looks like.
func (s Setting) valueKind() string {
	if len(s.choices) > 0 {
		quoted := make([]string, len(s.choices))
		for i, c := range s.choices {
			quoted[i] = "`" + c + "`"
		}
		return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
	}
	switch s.kind {
	case kInt:
		return "integer"
	case kFloat:
		return "number"
	case kBytes:
		return "bytes"
	case kDuration:
		return "duration"
	case kSecret:
		return "secret"
	case kURL:
		return "URL"
	case kCount:
		return "`auto` or integer"
	}
	return "text"
}

// mdCell makes help text safe in a markdown table cell: a pipe would end the cell, and
// outside `code` spans a <word> would be taken for an HTML tag and vanish.
func mdCell(s string) string {
	parts := strings.Split(s, "`")
	for i, p := range parts {
		if i%2 == 0 {
			p = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(p)
		}
		parts[i] = strings.ReplaceAll(p, "|", `\|`)
	}
	return strings.Join(parts, "`")
}
