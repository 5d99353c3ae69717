package auth

import (
	"errors"
	"strings"
	"testing"
)

func TestNewTokenIsRandomAndPrefixed(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b {
		t.Fatal("two tokens are equal")
	}
	if !strings.HasPrefix(a, TokenPrefix) || len(a) != len(TokenPrefix)+43 {
		t.Fatalf("token %q: want %q prefix and 43 more characters", a, TokenPrefix)
	}
	if HashToken(a) == a || strings.Contains(HashToken(a), a[len(TokenPrefix):]) {
		t.Fatal("hash reveals the token")
	}
	if HashToken(a) != HashToken(a) {
		t.Fatal("hash is not stable")
	}
}

func TestPasswords(t *testing.T) {
	h := HashPassword("correct horse")
	if !strings.HasPrefix(h, "$argon2id$v=19$") {
		t.Fatalf("hash %q is not argon2id PHC", h)
	}
	if h == HashPassword("correct horse") {
		t.Fatal("salt is not random")
	}
	tests := []struct {
		name, hash, pw string
		ok             bool
	}{
		{"right", h, "correct horse", true},
		{"wrong", h, "battery staple", false},
		{"empty", h, "", false},
		{"garbage hash", "$bcrypt$x", "correct horse", false},
		{"truncated", h[:len(h)-4], "correct horse", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPassword(tc.hash, tc.pw)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckPassword = %v, want ok=%v", err, tc.ok)
			}
			if tc.name == "wrong" && !errors.Is(err, ErrBadPassword) {
				t.Fatalf("err = %v, want ErrBadPassword", err)
			}
		})
	}
}
