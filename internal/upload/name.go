package upload

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/skrip-dev/skrip/internal/errs"
)

// MaxNameBytes is the longest sanitised file name, in bytes (NAME_MAX on Linux).
const MaxNameBytes = 255

// keptPunct lists the characters other than letters, digits and marks that a name keeps.
const keptPunct = " ._-()+,"

// SanitizeName turns an uploaded file name into the name it is stored under (docs/spec.md §5):
// only the base name is kept (split on both / and \), it is NFC-normalised, letters, digits
// and marks of any script plus space and ._-()+, are kept and every other rune becomes '_',
// leading and trailing spaces and dots are trimmed, and the result is cut to 255 bytes on
// a rune boundary. A name that ends up empty is an error wrapping ErrInvalid.
func SanitizeName(name string) (string, error) {
	s := name
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		s = s[i+1:]
	}
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	// One pass is enough for nearly every name; NFC can change a name again after it is
	// cut or trimmed, so repeat until nothing changes. That makes SanitizeName idempotent.
	for range 8 {
		next := cleanName(s)
		if next == s {
			break
		}
		s = next
	}
	if s == "" {
		if name == "" {
			return "", errs.New(ErrInvalid, map[string]any{"file": name},
				"a file was sent without a name; give the file a name and upload it again")
		}
		return "", errs.New(ErrInvalid, map[string]any{"file": name},
			"the file name %q has no letters or digits left once it is made safe; rename the file", name)
	}
	return s, nil
}

// cleanName is one pass of SanitizeName over a base name that is valid UTF-8.
func cleanName(s string) string {
	s = norm.NFC.String(s)
	s = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || strings.ContainsRune(keptPunct, r) {
			return r
		}
		return '_'
	}, s)
	s = strings.Trim(s, " .")
	if len(s) > MaxNameBytes {
		cut := MaxNameBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimRight(s[:cut], " .")
	}
	return s
}

// foldKey maps s to a key that two strings share exactly when strings.EqualFold says they
// are equal: each rune becomes the smallest rune of its simple case-folding orbit. It lets
// collisions be found with a map instead of comparing every pair of names.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		b.WriteRune(low)
	}
	return b.String()
}
