package catalog_test

import (
	"testing"

	"github.com/skrip-dev/skrip/internal/catalog"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestMatches: a search finds Swedish words in any case, in the title, summary and usage
// instructions, whether its å, ä and ö are composed or not; every word must be found.
func TestMatches(t *testing.T) {
	tool := store.Tool{Slug: "oversatt", Title: "Översätt text", Summary: "Gör om ett brev till engelska.",
		UsageInstructions: "## Så gör du\nLadda upp en Word-fil med elevernas närvarolista."}
	for _, c := range []struct {
		q    string
		want bool
	}{
		{"", true},
		{"ÖVERSÄTT", true},
		{"översätt", true},
		{"o\u0308versa\u0308tt", true}, // decomposed ö and ä
		{"BREV", true},
		{"närvarolista", true},
		{"NÄRVAROLISTA word", true},
		{"  så   gör ", true},
		{"översätt pdf", false},
		{"oversätt", false},
		{"kalkyl", false},
	} {
		if got := catalog.Matches(tool, c.q); got != c.want {
			t.Errorf("Matches(%q) = %v; want %v", c.q, got, c.want)
		}
	}
}
