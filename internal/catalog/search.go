package catalog

import (
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/skrip-dev/skrip/internal/store"
)

// Matches reports whether tool t answers the search q: every word of q appears in its
// title, slug, summary, description or usage instructions. Case is folded the Unicode
// way, so "ÖVERSÄTT" finds "översätt", and both sides are composed (NFC), so an "ö"
// typed as "o" and a combining diaeresis (as some keyboards and pasted text send it)
// matches the "ö" of the text. An empty q matches every tool.
func Matches(t store.Tool, q string) bool {
	words := strings.Fields(searchForm(q))
	if len(words) == 0 {
		return true
	}
	hay := searchForm(strings.Join([]string{t.Title, t.Slug, t.Summary, t.Description, t.UsageInstructions}, "\n"))
	for _, w := range words {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

// searchForm is s composed and case-folded, the form both sides of a search compare in.
func searchForm(s string) string {
	return cases.Fold().String(norm.NFC.String(s))
}
