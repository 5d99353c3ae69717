package upload

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/skrip-dev/skrip/internal/errs"
)

func TestSanitizeName(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" means an error
	}{
		{"swedish", "Räksmörgås.txt", "Räksmörgås.txt"},
		{"greek", "Ελληνικά έγγραφα.pdf", "Ελληνικά έγγραφα.pdf"},
		{"cjk", "報告書 2024.docx", "報告書 2024.docx"},
		{"arabic", "تقرير ٣.csv", "تقرير ٣.csv"},
		{"devanagari marks", "हिन्दी.txt", "हिन्दी.txt"},
		{"kept punctuation", "Report (final), v2+1_a-b.txt", "Report (final), v2+1_a-b.txt"},
		{"nfd becomes nfc", "Ra\u0308ksmo\u0308rga\u030as.txt", "Räksmörgås.txt"},
		{"unix path", "../../etc/passwd", "passwd"},
		{"windows path", `C:\x\y.txt`, "y.txt"},
		{"mixed separators", `a/b\c/d.txt`, "d.txt"},
		{"control chars", "a\x00b\x1fc\x7f\td.txt", "a_b_c__d.txt"},
		{"reserved punctuation", `a<b>c:d"e|f?g*h.txt`, "a_b_c_d_e_f_g_h.txt"},
		{"other symbols", "a$b%c&d=e@f#g.txt", "a_b_c_d_e_f_g.txt"},
		{"emoji", "😀 smile.txt", "_ smile.txt"},
		{"no-break space", "a\u00a0b.txt", "a_b.txt"},
		{"bidi override", "a\u202etxt.exe", "a_txt.exe"},
		{"invalid utf-8", "a\xffb.txt", "a_b.txt"},
		{"trimmed dots and spaces", "  .hidden. . ", "hidden"},
		{"inner dots kept", "a..b . c.txt", "a..b . c.txt"},
		{"underscores are fine", "___", "___"},
		{"cap on a 2-byte boundary", strings.Repeat("å", 200) + ".txt", strings.Repeat("å", 127)},
		{"cap on a 3-byte boundary", strings.Repeat("語", 100), strings.Repeat("語", 85)},
		{"cap then trim", strings.Repeat("a", 254) + " b", strings.Repeat("a", 254)},
		{"exactly 255", strings.Repeat("a", 255), strings.Repeat("a", 255)},
		{"dots only", "...", ""},
		{"spaces only", "   ", ""},
		{"empty", "", ""},
		{"separator only", "/", ""},
		{"trailing separator", "dir/", ""},
		{"dot dot", `x\..`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SanitizeName(tt.in)
			if tt.want == "" {
				var e *errs.Error
				if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) || got != "" {
					t.Fatalf("SanitizeName(%q) = %q, %v; want an ErrInvalid *errs.Error", tt.in, got, err)
				}
				if e.Details["file"] != tt.in {
					t.Errorf("details = %v, want file %q", e.Details, tt.in)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("SanitizeName(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
			checkName(t, tt.in, got)
		})
	}
}

// checkName fails t unless name, sanitised from in, has every property docs/spec.md §5 promises.
func checkName(t *testing.T, in, name string) {
	t.Helper()
	if !utf8.ValidString(name) {
		t.Fatalf("%q -> %q: not valid UTF-8", in, name)
	}
	if !norm.NFC.IsNormalString(name) {
		t.Fatalf("%q -> %q: not NFC", in, name)
	}
	if len(name) == 0 || len(name) > MaxNameBytes {
		t.Fatalf("%q -> %q: %d bytes", in, name, len(name))
	}
	for _, r := range name {
		if r == '/' || r == '\\' || r == 0 || unicode.IsControl(r) {
			t.Fatalf("%q -> %q: holds %U", in, name, r)
		}
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) && !strings.ContainsRune(keptPunct, r) {
			t.Fatalf("%q -> %q: holds %U, which should have become _", in, name, r)
		}
	}
	if strings.Trim(name, " .") != name {
		t.Fatalf("%q -> %q: leading or trailing space or dot", in, name)
	}
	again, err := SanitizeName(name)
	if err != nil || again != name {
		t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, name, again, err)
	}
}

func FuzzSanitizeName(f *testing.F) {
	f.Fuzz(func(t *testing.T, in string) {
		name, err := SanitizeName(in)
		if err != nil {
			if name != "" || !errors.Is(err, ErrInvalid) {
				t.Fatalf("SanitizeName(%q) = %q, %v", in, name, err)
			}
			return
		}
		checkName(t, in, name)
	})
}

func TestFoldKey(t *testing.T) {
	tests := []struct{ a, b string }{
		{"Report.TXT", "report.txt"},
		{"RÄKSMÖRGÅS", "räksmörgås"},
		{"ΣΊΣΥΦΟΣ", "σίσυφος"},
		{"Σ", "ς"},
		{"K", "\u212a"}, // Kelvin sign folds with K
		{"ß", "ss"},
		{"ǅ", "ǆ"},
		{"a.txt", "a.txt "},
		{"İ", "i"},
	}
	for _, tt := range tests {
		if got, want := foldKey(tt.a) == foldKey(tt.b), strings.EqualFold(tt.a, tt.b); got != want {
			t.Errorf("foldKey(%q) == foldKey(%q) is %v; EqualFold says %v", tt.a, tt.b, got, want)
		}
	}
}

func FuzzFoldKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // names are valid UTF-8 by the time they are folded
		}
		if got, want := foldKey(a) == foldKey(b), strings.EqualFold(a, b); got != want {
			t.Fatalf("foldKey(%q) == foldKey(%q) is %v; EqualFold says %v", a, b, got, want)
		}
	})
}
