package httpkit

import (
	"net/http"
	"strings"
)

// Downloads (docs/spec.md §4b): a file a user stored is served from the app's own origin,
// to anyone holding a share link among others. A browser must neither guess it to be
// HTML or script (nosniff) nor run what it holds with the origin's rights should it be
// shown inline (a CSP sandbox: no scripts, a unique origin, no cookies).

// Download sets the headers of a file sent for download under name: an attachment, with
// nosniff and Content-Security-Policy: sandbox. Every route that sends a user's bytes
// calls it: the files API, share links, run artifacts and sandbox file reads.
func Download(h http.Header, name string) {
	h.Set("Content-Disposition", ContentDisposition(name))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
}

// DownloadHeaders are the headers Download sets, for a handler that clears them again
// when it answers with an error instead.
var DownloadHeaders = []string{"Content-Disposition", "X-Content-Type-Options", "Content-Security-Policy"}

// ContentDisposition is an attachment named name, with both parameters of RFC 6266: an
// ASCII filename for clients that read only that one (curl -OJ), with every other
// character replaced by _ and quotes and backslashes escaped, and filename* with the
// whole name in UTF-8, which browsers and Go's mime package prefer.
// mime.FormatMediaType writes one or the other, never both, so it is written here.
func ContentDisposition(name string) string {
	if name == "" {
		name = "download"
	}
	var b strings.Builder
	b.WriteString(`attachment; filename="`)
	for _, r := range name {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r >= 0x7f:
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(`"; filename*=UTF-8''`)
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ {
		c := name[i]
		if attrChar(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// attrChar reports whether c may stand unescaped in an RFC 8187 ext-value.
func attrChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}
