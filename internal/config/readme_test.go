package config

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeListsEverySetting keeps the README's settings table in step with Settings().
func TestReadmeListsEverySetting(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start, end := strings.Index(readme, "<!-- settings:begin"), strings.Index(readme, "<!-- settings:end")
	if start < 0 || end < start {
		t.Fatal("README has no settings table between settings:begin and settings:end")
	}
	rows := map[string]string{}
	for _, line := range strings.Split(readme[start:end], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`--") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`-")
		rows[name] = strings.Trim(strings.TrimSpace(cells[3]), "`")
	}
	for _, s := range Settings() {
		def, ok := rows[s.Name]
		if !ok {
			t.Errorf("README lacks setting --%s", s.Name)
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
			t.Errorf("README says --%s defaults to %q; the code says %q", s.Name, def, want)
		}
		delete(rows, s.Name)
	}
	for name := range rows {
		t.Errorf("README lists --%s, which is not a setting", name)
	}
}
