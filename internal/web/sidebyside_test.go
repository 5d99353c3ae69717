package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/textdiff"
)

// TestSideBySide: a change's removed lines sit beside its added ones, three unchanged
// lines around them, and a gap stands where unchanged lines are left out.
func TestSideBySide(t *testing.T) {
	var a strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&a, "%d\n", i)
	}
	old := a.String()
	new := strings.Replace(strings.Replace(old, "10\n", "tio\nTIO\n", 1), "11\n", "", 1)
	lines, err := textdiff.Compare(old, new)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sideBySide(lines) {
		if r.Gap {
			got = append(got, "⋯")
			continue
		}
		got = append(got, fmt.Sprintf("%d%s:%s|%d%s:%s", r.OldNum, r.OldKind, r.OldText, r.NewNum, r.NewKind, r.NewText))
	}
	want := []string{"⋯", "7:7|7:7", "8:8|8:8", "9:9|9:9", "10del:10|10ins:tio", "11del:11|11ins:TIO", "12:12|12:12", "13:13|13:13", "14:14|14:14", "⋯"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A change at the very start and end needs no gap.
	lines, _ = textdiff.Compare("a\n", "b\n")
	if rows := sideBySide(lines); len(rows) != 1 || rows[0].Gap || rows[0].OldText != "a" || rows[0].NewText != "b" {
		t.Errorf("one line changed: %+v", rows)
	}
}
