package session

import (
	"errors"
	"regexp"
	"strings"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
)

// ErrInvalidContext means a context's text is neither "default" nor "sandbox:{version_id}".
var ErrInvalidContext = errors.New("invalid session context")

// Context says where a tool session lives: in production, or in the editor, where an
// author tries one version of a tool. Its text (docs/spec.md §6) is "default" or
// "sandbox:{version_id}"; that text is the column in the store and the field on the
// wire, and String and ParseContext are the only code that reads or writes it.
type Context struct {
	version string // the editor's version under trial; empty in production
}

// Production is the context of runs of a tool's published version.
func Production() Context { return Context{} }

// Editor is the context in which an author tries version versionID in the editor.
func Editor(versionID string) Context { return Context{version: versionID} }

// versionID is what a version id may hold: ids.New makes them of a prefix, "_" and a
// ULID; anything else (a space, a ':' or a '/') names no version.
var versionID = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

const (
	productionText = "default"
	editorPrefix   = "sandbox:"
)

// ParseContext reads a context's text. The empty string is production, as a request
// that names no context means.
func ParseContext(s string) (Context, error) {
	if s == "" || s == productionText {
		return Production(), nil
	}
	if v, ok := strings.CutPrefix(s, editorPrefix); ok && len(s) <= MaxContextLen && versionID.MatchString(v) {
		return Editor(v), nil
	}
	return Context{}, errs.New(ErrInvalidContext, map[string]any{"field": "context", "value": s},
		"context %q must be %q or \"sandbox:{version_id}\", at most %d characters", s, productionText, MaxContextLen)
}

// String is the context's text.
func (c Context) String() string {
	if c.version == "" {
		return productionText
	}
	return editorPrefix + c.version
}

// EditorVersion is the version an editor context tries; ok is false in production.
func (c Context) EditorVersion() (versionID string, ok bool) { return c.version, c.version != "" }

// IsEditor reports whether c is an editor context.
func (c Context) IsEditor() bool { return c.version != "" }

// Key is the store's key of user's session of tool in c.
func (c Context) Key(toolID, userID string) store.SessionKey {
	return store.SessionKey{ToolID: toolID, UserID: userID, Context: c.String()}
}
