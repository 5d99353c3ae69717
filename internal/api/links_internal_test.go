package api

import (
	"net/http"
	"testing"

	"github.com/skrip-dev/skrip/internal/store"
)

// TestResumes: which GETs of a share link read only bytes after the first (and so take
// none of its downloads).
func TestResumes(t *testing.T) {
	f := store.File{Size: 100, Checksum: "sha256:abc"}
	for _, c := range []struct {
		rng, ifRange string
		want         bool
	}{
		{"", "", false},
		{"bytes=0-", "", false},
		{"bytes=0-9", "", false},
		{"bytes=1-", "", true},
		{"bytes= 50 - 60", "", true},
		{"bytes=50-60,0-1", "", false},
		{"bytes=50-60,70-", "", true},
		{"bytes=-10", "", true},
		{"bytes=-100", "", false},
		{"bytes=-1000", "", false},
		{"bytes=10-", `"abc"`, true},
		{"bytes=10-", `"other"`, false},
		{"bytes=10-", "Wed, 21 Oct 2015 07:28:00 GMT", false},
		{"items=10-", "", false},
		{"bytes=x-", "", false},
		{"bytes=10", "", false},
		{"bytes=", "", false},
		{"bytes=,", "", false},
	} {
		r, _ := http.NewRequest("GET", "/s/x", nil)
		if c.rng != "" {
			r.Header.Set("Range", c.rng)
		}
		if c.ifRange != "" {
			r.Header.Set("If-Range", c.ifRange)
		}
		if got := resumes(r, f); got != c.want {
			t.Errorf("Range %q If-Range %q: resumes = %v, want %v", c.rng, c.ifRange, got, c.want)
		}
	}
}
