package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/textdiff"
)

// Sentinel errors of versions.
var (
	// ErrOtherTool means two versions compared are of different tools.
	ErrOtherTool = errors.New("versions of different tools")
	// ErrDiffTooLarge means two versions differ too much to compare (textdiff's bounds).
	ErrDiffTooLarge = errors.New("versions too different to compare")
)

// MaxNoteBytes caps a version's note.
const MaxNoteBytes = 500

// DiffContext is the unchanged lines a unified diff shows around each change.
const DiffContext = 3

// checkNote returns the note trimmed, or an error naming what is wrong with it.
func checkNote(note string) (string, error) {
	note = strings.TrimSpace(note)
	switch {
	case len(note) > MaxNoteBytes:
		return "", errs.New(ErrInvalid, map[string]any{"field": "note", "rule": "max_length", "limit_bytes": MaxNoteBytes},
			"note is %d bytes; the limit is %d bytes", len(note), MaxNoteBytes)
	case !utf8.ValidString(note):
		return "", errs.New(ErrInvalid, map[string]any{"field": "note", "rule": "utf8"}, "note is not valid UTF-8 text")
	}
	return note, nil
}

// VersionList lists the versions of the tool ref, newest first, if u may change it:
// number, note, author, time, the syntax check and the latest sandbox run of each.
// Whoever may change a tool may read its versions, and no one else: the one rule is
// Owns (its author and admins), so who else may edit a tool reads its versions too.
func (s *Service) VersionList(ctx context.Context, u store.User, ref string) (store.Tool, []store.VersionSummary, error) {
	t, err := s.Owned(ctx, u, ref)
	if err != nil {
		return store.Tool{}, nil, err
	}
	list, err := s.st.VersionSummaries(ctx, t.ID)
	return t, list, err
}

// Restore stores a new version of a tool holding what version id held (source and
// schemas), noted as restored from it, if u may change the tool.
func (s *Service) Restore(ctx context.Context, u store.User, id string) (store.ToolVersion, error) {
	old, t, err := s.OwnedVersion(ctx, u, id)
	if err != nil {
		return store.ToolVersion{}, err
	}
	// The same source compiles as it did, so its syntax check carries over.
	v, err := s.newVersion(NewVersion{Source: old.Source, InputSchema: old.InputSchema, SettingsSchema: old.SettingsSchema,
		SyntaxError: old.SyntaxError, SyntaxLine: old.SyntaxLine, Note: RestoredNote(old.Number)}, u, s.now())
	if err != nil {
		return store.ToolVersion{}, err
	}
	v.ToolID = t.ID
	return s.storeVersion(ctx, v)
}

// RestoredNote is the note of a version restored from version number n. Notes are the
// authors' words, stored once, so it is in the UI's default language.
func RestoredNote(n int) string { return "Återställd från version " + strconv.Itoa(n) }

// storeVersion stores v and reads it back with the number the store gave it.
func (s *Service) storeVersion(ctx context.Context, v store.ToolVersion) (store.ToolVersion, error) {
	if err := s.st.CreateVersion(ctx, v); err != nil {
		return store.ToolVersion{}, err
	}
	return s.st.ToolVersion(ctx, v.ID)
}

// Diff is what changed from one version of a tool (From) to another (To).
type Diff struct {
	From, To store.ToolVersion
	Parts    []DiffPart
}

// DiffPart is the difference of one part of a version: its source or one of its schemas.
type DiffPart struct {
	Name    string          // "source", "input_schema", "settings_schema"
	Lines   []textdiff.Line // both texts, line by line
	Changed bool
	Unified string // diff -u of the part; "" when unchanged
}

// Unified is every changed part's unified diff, one after the other.
func (d Diff) Unified() string {
	var b strings.Builder
	for _, p := range d.Parts {
		b.WriteString(p.Unified)
	}
	return b.String()
}

// Diff compares version against (the older text, usually) with version id: source and
// schemas, the schemas as indented JSON. Both must be versions of one tool u may change.
func (s *Service) Diff(ctx context.Context, u store.User, id, against string) (Diff, error) {
	to, t, err := s.ReadableVersion(ctx, u, id)
	if err != nil {
		return Diff{}, err
	}
	from, ft, err := s.ReadableVersion(ctx, u, against)
	if err != nil {
		return Diff{}, err
	}
	if ft.ID != t.ID {
		return Diff{}, errs.New(ErrOtherTool, map[string]any{"version": id, "against": against},
			"version %s is of tool %s and %s of %s; compare versions of one tool", id, t.Slug, against, ft.Slug)
	}
	d := Diff{From: from, To: to}
	for _, p := range []struct {
		name     string
		old, new string
	}{
		{"source", lf(from.Source), lf(to.Source)},
		{"input_schema", schemaLines(from.InputSchema), schemaLines(to.InputSchema)},
		{"settings_schema", schemaLines(from.SettingsSchema), schemaLines(to.SettingsSchema)},
	} {
		lines, err := textdiff.Compare(p.old, p.new)
		if errors.Is(err, textdiff.ErrTooLarge) {
			return Diff{}, errs.New(ErrDiffTooLarge, map[string]any{"part": p.name, "max_lines": textdiff.MaxLines, "max_edits": textdiff.MaxEdits},
				"the %s of versions %d and %d differ too much to compare here (%v)", p.name, from.Number, to.Number, err)
		}
		if err != nil {
			return Diff{}, err
		}
		part := DiffPart{Name: p.name, Lines: lines, Changed: textdiff.Changed(lines)}
		if part.Changed {
			part.Unified = textdiff.Unified("a/"+p.name+" (version "+strconv.Itoa(from.Number)+")",
				"b/"+p.name+" (version "+strconv.Itoa(to.Number)+")", lines, DiffContext)
		}
		d.Parts = append(d.Parts, part)
	}
	return d, nil
}

// lf gives src "\n" line endings. A browser sends a text box's lines ending in "\r\n",
// the API and CLI usually "\n"; Python reads both alike, so a diff should not show every
// line changed between a version saved in the editor and one pushed from a file.
func lf(src string) string { return strings.ReplaceAll(src, "\r\n", "\n") }

// schemaLines is a schema as indented JSON lines to compare; "" for none.
func schemaLines(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return string(raw) + "\n"
	}
	buf.WriteByte('\n')
	return buf.String()
}
