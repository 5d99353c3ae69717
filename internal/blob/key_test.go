package blob

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"files/f_01J8ZXYZ", true},
		{"files/a/b/c.d-e_f", true},
		{"runs/r_1/output/report.pdf", true},
		{"sessions/t/u/ab12/index.html", true},
		{"files/" + strings.Repeat("a", MaxKeyBytes-6), true},
		{"files/" + strings.Repeat("a", MaxKeyBytes-5), false},
		{"", false},
		{"files", false},
		{"files/", false},
		{"other/x", false},
		{"/files/x", false},
		{"files//x", false},
		{"files/x/", false},
		{"files/./x", false},
		{"files/../x", false},
		{"files/..", false},
		{"files/a b", false},
		{"files/ä", false},
		{"files/a\x00b", false},
		{"files/a\\b", false},
		{"Files/x", false},
	}
	for _, tc := range tests {
		err := ValidateKey(tc.key)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateKey(%q) = %v, want ok=%v", tc.key, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, not ErrInvalidKey", tc.key, err)
		}
	}
}

func TestNormalizeKey(t *testing.T) {
	for in, want := range map[string]string{
		"f_01J8ZXYZ":       "files/f_01J8ZXYZ",
		"files/f_01J8ZXYZ": "files/f_01J8ZXYZ",
		"runs/r/output/x":  "runs/r/output/x",
	} {
		if got, err := NormalizeKey(in); err != nil || got != want {
			t.Errorf("NormalizeKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"f_a/b", "x_1", "f_a b"} {
		_, err := NormalizeKey(bad)
		if err == nil {
			t.Errorf("NormalizeKey(%q) accepted", bad)
			continue
		}
		// A user names files/ keys only: the refusal must not offer the server's own.
		if msg := err.Error(); !strings.Contains(msg, "files/<name>") || strings.Contains(msg, "runs/") || strings.Contains(msg, "sessions/") {
			t.Errorf("NormalizeKey(%q) refused with %q; want it to name files/<name> only", bad, msg)
		}
	}
}

// FuzzValidateKey checks the properties every accepted key has: the right root, no empty,
// "." or ".." segment, only the allowed bytes, and at most MaxKeyBytes.
func FuzzValidateKey(f *testing.F) {
	for _, seed := range []string{"files/f_01J8ZXYZ", "files/a/../b", "runs/x/output/y.pdf", "sessions/a//b", "files/\x00", "f_x"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if err := ValidateKey(key); err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v is not ErrInvalidKey", err)
			}
			return
		}
		if len(key) > MaxKeyBytes {
			t.Fatalf("accepted %d bytes", len(key))
		}
		root, rest, ok := strings.Cut(key, "/")
		if !ok || (root != "files" && root != "runs" && root != "sessions") {
			t.Fatalf("accepted root %q", root)
		}
		for _, seg := range strings.Split(rest, "/") {
			if seg == "" || seg == "." || seg == ".." {
				t.Fatalf("accepted segment %q in %q", seg, key)
			}
			for _, c := range []byte(seg) {
				if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
					t.Fatalf("accepted byte %q in %q", c, key)
				}
			}
		}
		if n, err := NormalizeKey(key); err != nil || n != key {
			t.Fatalf("NormalizeKey(%q) = %q, %v", key, n, err)
		}
	})
}
