package api

import (
	"net/http"
	"testing"

	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestLinkRead: the bytes a GET of a share link reserves are those http.ServeContent will
// send of a 100-byte file, and it is a download when it reads the first byte.
func TestLinkRead(t *testing.T) {
	f := store.File{Size: 100, Checksum: "sha256:abc"}
	whole := staging.LinkRead{Bytes: 100, Download: true}
	for _, c := range []struct {
		method, rng, ifRange string
		want                 staging.LinkRead
	}{
		{"GET", "", "", whole},
		{"HEAD", "bytes=1-", "", staging.LinkRead{Probe: true}},
		{"GET", "bytes=0-", "", whole},
		{"GET", "bytes=0-9", "", staging.LinkRead{Bytes: 10, Download: true}},
		{"GET", "bytes=1-", "", staging.LinkRead{Bytes: 99}},
		{"GET", "bytes=99-", "", staging.LinkRead{Bytes: 1}},
		{"GET", "bytes= 50 - 60", "", staging.LinkRead{Bytes: 11}},
		{"GET", "bytes=50-60,0-1", "", staging.LinkRead{Bytes: 13, Download: true}},
		{"GET", "bytes=50-60,70-", "", staging.LinkRead{Bytes: 41}},
		{"GET", "bytes=90-1000", "", staging.LinkRead{Bytes: 10}},
		{"GET", "bytes=-10", "", staging.LinkRead{Bytes: 10}},
		{"GET", "bytes=-100", "", whole},
		{"GET", "bytes=-999999", "", whole},
		{"GET", "bytes=-0", "", staging.LinkRead{}},
		{"GET", "bytes=100-", "", staging.LinkRead{}},
		{"GET", "bytes=1-,1-", "", whole}, // more than the file: ServeContent sends it whole
		{"GET", "bytes=10-", `"abc"`, staging.LinkRead{Bytes: 90}},
		{"GET", "bytes=10-", `"other"`, whole},
		{"GET", "bytes=10-", "Wed, 21 Oct 2015 07:28:00 GMT", whole},
		{"GET", "items=10-", "", whole},
		{"GET", "bytes=x-", "", whole},
		{"GET", "bytes=10", "", whole},
		{"GET", "bytes=9-5", "", whole},
		{"GET", "bytes=", "", staging.LinkRead{}},
	} {
		r, _ := http.NewRequest(c.method, "/s/x", nil)
		if c.rng != "" {
			r.Header.Set("Range", c.rng)
		}
		if c.ifRange != "" {
			r.Header.Set("If-Range", c.ifRange)
		}
		if got := linkRead(r, f); got != c.want {
			t.Errorf("%s Range %q If-Range %q: linkRead = %+v, want %+v", c.method, c.rng, c.ifRange, got, c.want)
		}
	}
}
