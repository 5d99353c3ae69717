// Package auth owns secrets: API tokens (random, "skr_"-prefixed, stored only as a
// SHA-256 hash) and passwords (argon2id, PHC string format).
package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// TokenPrefix starts every token skrip issues.
const TokenPrefix = "skr_"

// MinBootstrapTokenLen is the shortest token an operator may choose.
const MinBootstrapTokenLen = 16

// NewToken returns a fresh random token: "skr_" and 43 base64url characters (256 bits).
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics on a broken system source)
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashToken returns the stored form of a token. Tokens carry 256 random bits, so a fast
// hash is enough: what matters is that the database never holds the secret.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// argon2id parameters (RFC 9106's second recommended option, lighter on memory).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024
	argonThreads = 2
	argonKeyLen  = 32
)

// ErrBadPassword means a password does not match its hash.
var ErrBadPassword = errors.New("wrong password")

// HashPassword returns an argon2id PHC string for password.
func HashPassword(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// DummyHash returns a PHC string of HashPassword's form whose key belongs to no password:
// checking a password against it costs what checking against a real hash costs, and
// never matches (but for odds of 2^-256). Making it takes no hashing.
func DummyHash() string {
	salt, key := make([]byte, 16), make([]byte, argonKeyLen)
	rand.Read(salt)
	rand.Read(key)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// HashMemory is the memory one password hash or check takes, in bytes (argon2id's m).
const HashMemory = argonMemory * 1024

// CheckPassword reports whether password matches the PHC string hash.
func CheckPassword(hash, password string) error {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return fmt.Errorf("password hash is not argon2id")
	}
	var version int
	var mem, t uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return fmt.Errorf("unsupported argon2 version %q", parts[2])
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &t, &threads); err != nil {
		return fmt.Errorf("bad argon2 parameters %q", parts[3])
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return fmt.Errorf("bad argon2 salt: %w", err)
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil {
		return fmt.Errorf("bad argon2 key: %w", err)
	}
	got := argon2.IDKey([]byte(password), salt, t, mem, threads, uint32(len(want)))
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return ErrBadPassword
	}
	return nil
}

// CSRFToken returns the anti-forgery token that goes with a browser session's secret: an
// HMAC of a fixed label keyed by the secret. A page can carry it in its forms; another
// site cannot compute it, because it never sees the HttpOnly cookie.
func CSRFToken(sessionSecret string) string {
	m := hmac.New(sha256.New, []byte(sessionSecret))
	m.Write([]byte("skrip csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// CheckCSRF reports whether token is the anti-forgery token of sessionSecret, in
// constant time.
func CheckCSRF(sessionSecret, token string) bool {
	return token != "" && hmac.Equal([]byte(CSRFToken(sessionSecret)), []byte(token))
}
