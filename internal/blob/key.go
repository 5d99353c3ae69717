package blob

import (
	"regexp"
	"strings"

	"github.com/skrip-dev/skrip/internal/errs"
)

// MaxKeyBytes is the longest key accepted.
const MaxKeyBytes = 512

var keyPattern = regexp.MustCompile(`^(files|runs|sessions|work)/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`)

// ValidateKey reports whether key is a legal object key (docs/spec.md §4; work/ keys are
// the cluster's work bucket's, docs/cluster.md): it matches the key
// grammar, is at most MaxKeyBytes long and has no "." or ".." segment.
func ValidateKey(key string) error {
	return validateKey(key, "files/<name>, runs/<name> or sessions/<name>")
}

// validateKey is ValidateKey with the key shapes its refusal names: users name only files/
// keys, and a message that offered runs/ or sessions/ would send them the wrong way.
func validateKey(key, shapes string) error {
	if len(key) > MaxKeyBytes {
		return errs.New(ErrInvalidKey, map[string]any{"limit_bytes": MaxKeyBytes}, "invalid key: key is %d bytes, the limit is %d", len(key), MaxKeyBytes)
	}
	if !keyPattern.MatchString(key) {
		return errs.New(ErrInvalidKey, map[string]any{"key": key}, "invalid key: %q must look like %s, using only letters, digits and ._-", key, shapes)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "." || seg == ".." {
			return errs.New(ErrInvalidKey, map[string]any{"key": key}, "invalid key: %q has a %q segment", key, seg)
		}
	}
	return nil
}

// NormalizeKey expands a bare file id ("f_<ULID>") to "files/f_<ULID>" and validates the
// result. It is for keys a user names, so a refusal describes files/ keys only.
func NormalizeKey(key string) (string, error) {
	if strings.HasPrefix(key, "f_") && !strings.Contains(key, "/") {
		key = "files/" + key
	}
	if err := validateKey(key, "files/<name>"); err != nil {
		return "", err
	}
	return key, nil
}

// SafeSegment turns any file name into a key segment: letters, digits and ._- stay, every
// other byte becomes _, leading and trailing dots go, and it is cut to 200 bytes. Callers
// keep the real name beside the key.
func SafeSegment(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	out := strings.Trim(string(b), ".")
	if len(out) > 200 {
		out = out[:200]
	}
	if out == "" {
		out = "file"
	}
	return out
}
