package config

import (
	"html"
	"os"
	"strings"
	"testing"
)

// settingsDoc is the page whose table settingsTable generates.
const settingsDoc = "../../docs/settings.md"

// The table sits between these two lines of settingsDoc; the rest of the page is prose.
const (
	beginMarker = "<!-- settings:begin: generated from config.Settings() by `go generate ./internal/config`; TestSettingsDoc checks it -->\n"
	endMarker   = "<!-- settings:end -->"
)

// TestSettingsDoc keeps docs/settings.md's table in step with Settings(): every setting
// has its row with the default the code uses, no row names a setting that is gone, and
// the table is exactly the one settingsTable generates. With SKRIP_UPDATE_DOCS=1 (what
// `go generate ./internal/config` sets) it writes the table instead.
func TestSettingsDoc(t *testing.T) {
	b, err := os.ReadFile(settingsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start, end := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	if start < 0 || end < start {
		t.Fatalf("docs/settings.md has no table between the lines\n%s%s", beginMarker, endMarker)
	}
	start += len(beginMarker)
	want := settingsTable()
	if os.Getenv("SKRIP_UPDATE_DOCS") != "" {
		if err := os.WriteFile(settingsDoc, []byte(doc[:start]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	table := doc[start:end]

	rows := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`--") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`-")
		rows[name] = html.UnescapeString(strings.Trim(strings.TrimSpace(cells[3]), "`"))
	}
	for _, s := range Settings() {
		def, ok := rows[s.Name]
		if !ok {
			t.Errorf("docs/settings.md lacks setting --%s", s.Name)
			continue
		}
		want := s.Default
		if s.Shown != "" {
			want = s.Shown
		}
		if want == "" {
			want = "empty"
		}
		if def != want {
			t.Errorf("docs/settings.md says --%s defaults to %q; the code says %q", s.Name, def, want)
		}
		delete(rows, s.Name)
	}
	for name := range rows {
		t.Errorf("docs/settings.md lists --%s, which is not a setting", name)
	}

	if table != want {
		got, exp := strings.Split(table, "\n"), strings.Split(want, "\n")
		for i := range max(len(got), len(exp)) {
			g, e := "", ""
			if i < len(got) {
				g = got[i]
			}
			if i < len(exp) {
				e = exp[i]
			}
			if g != e {
				t.Errorf("docs/settings.md's table is not the one Settings() generates; run `go generate ./internal/config`.\nline %d is\n%s\nand should be\n%s", i+1, g, e)
				break
			}
		}
	}
}

// TestMarkdownCell: help text never breaks the table or hides a <placeholder>.
func TestMarkdownCell(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"under <data>/nats", "under &lt;data&gt;/nats"},
		{"a | b", `a \| b`},
		{"run `skrip <verb>` & wait", "run `skrip <verb>` &amp; wait"},
		{"`a|b`", "`a\\|b`"},
	} {
		if got := mdCell(tc.in); got != tc.want {
			t.Errorf("mdCell(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
