package staging

import (
	"errors"
	"strings"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// Conditional writes (docs/spec.md §4b, RFC 9110 §13.1): a PUT, a publish or a DELETE
// may name the version of the file it expects under the key (If-Match) or that it
// expects none (If-None-Match: *). The condition is checked where the write is decided,
// in the same transaction (store.CommitFileIf for a write, store.DeleteFile's check of
// the version for a delete), so that two writers naming the same version never both
// win, on any blob store and from any API node: the database is what holds which
// version a key has.

// ErrPrecondition means the file under the key is not the one the request's If-Match
// or If-None-Match names (412).
var ErrPrecondition = errors.New("precondition failed")

// maxCondTags bounds the entity tags one header may list.
const maxCondTags = 64

// Cond is a write's condition on the file it replaces or deletes. The zero Cond
// holds for anything.
type Cond struct {
	// IfMatch lists the entity tags one of which the live file must have; "*" is any
	// live file. Empty: no If-Match.
	IfMatch []string
	// IfNoneMatch lists the entity tags the live file must not have; "*" means no live
	// file may be under the key (create only). Empty: no If-None-Match.
	IfNoneMatch []string
}

// ETag is f's entity tag as the files API sends it: its SHA-256 in quotes.
func ETag(f store.File) string {
	return `"` + strings.TrimPrefix(f.Checksum, "sha256:") + `"`
}

// ParseCond reads the If-Match and If-None-Match headers of a write (each "" when not
// sent): "*" or a list of entity tags ("<etag>", W/"<etag>"), as RFC 9110 writes them.
// A tag in another form is refused (ErrInvalid) rather than never matching.
func ParseCond(ifMatch, ifNoneMatch string) (Cond, error) {
	var c Cond
	var err error
	if c.IfMatch, err = parseTags("If-Match", ifMatch); err != nil {
		return Cond{}, err
	}
	if c.IfNoneMatch, err = parseTags("If-None-Match", ifNoneMatch); err != nil {
		return Cond{}, err
	}
	// If-None-Match compares weakly (RFC 9110 13.1.2): W/"x" names the file "x" too.
	for i, t := range c.IfNoneMatch {
		c.IfNoneMatch[i] = strings.TrimPrefix(t, "W/")
	}
	return c, nil
}

func parseTags(header, v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if v == "*" {
		return []string{"*"}, nil
	}
	var out []string
	for _, t := range strings.Split(v, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		weak := strings.HasPrefix(t, "W/")
		tag := strings.TrimPrefix(t, "W/")
		if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' || strings.ContainsAny(tag[1:len(tag)-1], "\" \t") {
			return nil, errs.New(ErrInvalid, map[string]any{"field": header, "value": shortHeader(v)},
				`%s %q is not "*" or a list of quoted ETags such as "1f2e…" (the ETag a GET of the file gave)`, header, shortHeader(v))
		}
		if len(out) == maxCondTags {
			return nil, errs.New(ErrInvalid, map[string]any{"field": header, "limit": maxCondTags},
				"%s lists more than %d ETags; send fewer", header, maxCondTags)
		}
		if weak {
			// A weak tag never matches in the strong comparison a write needs.
			tag = "W/" + tag
		}
		out = append(out, tag)
	}
	if len(out) == 0 {
		return nil, errs.New(ErrInvalid, map[string]any{"field": header, "value": shortHeader(v)},
			`%s %q names no ETag; send "*" or a quoted ETag`, header, shortHeader(v))
	}
	return out, nil
}

// shortHeader is a header's value as a refusal quotes it: at most 100 bytes.
func shortHeader(v string) string {
	if len(v) <= 100 {
		return v
	}
	return strings.ToValidUTF8(v[:100], "") + "…"
}

// IsZero reports whether c holds for anything.
func (c Cond) IsZero() bool { return len(c.IfMatch) == 0 && len(c.IfNoneMatch) == 0 }

// matches reports whether tags name cur (nil: no live file).
func matches(tags []string, cur *store.File) bool {
	if cur == nil {
		return false
	}
	etag := ETag(*cur)
	for _, t := range tags {
		// "sha256:<hex>", the X-Checksum a client may hold instead, names the same bytes.
		if t == "*" || t == etag || strings.Replace(t, "sha256:", "", 1) == etag {
			return true
		}
	}
	return false
}

// check returns ErrPrecondition, naming key and the current ETag, when cur (the live
// file under key, nil when there is none) does not meet c.
func (c Cond) check(key string, cur *store.File) error {
	failed := ""
	switch {
	case len(c.IfMatch) > 0 && !matches(c.IfMatch, cur):
		failed = "If-Match"
	case len(c.IfNoneMatch) > 0 && matches(c.IfNoneMatch, cur):
		failed = "If-None-Match"
	default:
		return nil
	}
	details := map[string]any{"key": key, "header": failed, "current_etag": nil}
	if cur == nil {
		return errs.New(ErrPrecondition, details,
			"%s: there is no file under %s, so %s %s does not hold; nothing was changed", failed, key, failed, strings.Join(c.tags(failed), ", "))
	}
	etag := ETag(*cur)
	details["current_etag"] = etag
	if failed == "If-None-Match" && c.IfNoneMatch[0] == "*" {
		return errs.New(ErrPrecondition, details,
			"If-None-Match: * asks for a new file, and %s exists already (ETag %s); nothing was changed", key, etag)
	}
	return errs.New(ErrPrecondition, details,
		"%s: %s has the ETag %s, so %s %s does not hold; nothing was changed: read the file again", failed, key, etag, failed, strings.Join(c.tags(failed), ", "))
}

func (c Cond) tags(header string) []string {
	if header == "If-Match" {
		return c.IfMatch
	}
	return c.IfNoneMatch
}
