package staging

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

const hexA = "a1b2c3"

// TestCond reads If-Match and If-None-Match as RFC 9110 writes them and judges a file
// by them: strong comparison, "*" for any file, the X-Checksum form taken as the ETag.
func TestCond(t *testing.T) {
	file := &store.File{Key: "files/a", Checksum: "sha256:" + hexA}
	for _, tc := range []struct {
		ifMatch, ifNoneMatch string
		parsed               Cond
		onFile, onNone       string // "" holds, else the header that fails
	}{
		{"", "", Cond{}, "", ""},
		{`"a1b2c3"`, "", Cond{IfMatch: []string{`"a1b2c3"`}}, "", "If-Match"},
		{`"zz"`, "", Cond{IfMatch: []string{`"zz"`}}, "If-Match", "If-Match"},
		{` "zz" , "a1b2c3"`, "", Cond{IfMatch: []string{`"zz"`, `"a1b2c3"`}}, "", "If-Match"},
		{`W/"a1b2c3"`, "", Cond{IfMatch: []string{`W/"a1b2c3"`}}, "If-Match", "If-Match"},
		{`"sha256:a1b2c3"`, "", Cond{IfMatch: []string{`"sha256:a1b2c3"`}}, "", "If-Match"},
		{"*", "", Cond{IfMatch: []string{"*"}}, "", "If-Match"},
		{"", "*", Cond{IfNoneMatch: []string{"*"}}, "If-None-Match", ""},
		{"", `"a1b2c3"`, Cond{IfNoneMatch: []string{`"a1b2c3"`}}, "If-None-Match", ""},
		{"", `"zz"`, Cond{IfNoneMatch: []string{`"zz"`}}, "", ""},
		// If-None-Match compares weakly: a weak tag of the file is the file.
		{"", `W/"a1b2c3"`, Cond{IfNoneMatch: []string{`"a1b2c3"`}}, "If-None-Match", ""},
		{"*", `"zz"`, Cond{IfMatch: []string{"*"}, IfNoneMatch: []string{`"zz"`}}, "", "If-Match"},
	} {
		c, err := ParseCond(tc.ifMatch, tc.ifNoneMatch)
		if err != nil || !reflect.DeepEqual(c, tc.parsed) {
			t.Errorf("ParseCond(%q, %q) = %+v, %v; want %+v", tc.ifMatch, tc.ifNoneMatch, c, err, tc.parsed)
			continue
		}
		for _, on := range []struct {
			f    *store.File
			want string
		}{{file, tc.onFile}, {nil, tc.onNone}} {
			err := c.check("files/a", on.f)
			var e *errs.Error
			switch {
			case on.want == "" && err != nil:
				t.Errorf("%q/%q on %v: %v, want it to hold", tc.ifMatch, tc.ifNoneMatch, on.f, err)
			case on.want != "" && (!errors.Is(err, ErrPrecondition) || !errors.As(err, &e) || e.Details["header"] != on.want):
				t.Errorf("%q/%q on %v: %v, want %s to fail", tc.ifMatch, tc.ifNoneMatch, on.f, err, on.want)
			}
		}
	}
	for _, bad := range []string{"abc", `"a b"`, `"abc`, `W/abc`, ",", `"a"x"`, strings.Repeat(`"a",`, maxCondTags+1)} {
		if _, err := ParseCond(bad, ""); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "If-Match") {
			t.Errorf("ParseCond(%q) = %v, want ErrInvalid naming If-Match", bad, err)
		}
	}
}

// FuzzParseCond: whatever the headers hold, parsing never panics, refuses only with
// ErrInvalid, and every tag it keeps is "*" or quoted.
func FuzzParseCond(f *testing.F) {
	for _, seed := range [][2]string{{"", ""}, {`"a1"`, ""}, {"", "*"}, {`W/"x", "y"`, `"z"`}, {`"a b"`, ","}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, ifMatch, ifNoneMatch string) {
		c, err := ParseCond(ifMatch, ifNoneMatch)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseCond(%q, %q) = %v, not ErrInvalid", ifMatch, ifNoneMatch, err)
			}
			return
		}
		for _, tag := range append(c.IfMatch, c.IfNoneMatch...) {
			if tag != "*" && !strings.HasSuffix(tag, `"`) {
				t.Fatalf("ParseCond(%q, %q) kept the tag %q", ifMatch, ifNoneMatch, tag)
			}
		}
		c.check("files/a", nil)
		c.check("files/a", &store.File{Checksum: "sha256:00"})
	})
}
