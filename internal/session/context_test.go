package session_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestParseContext: the two spellings of docs/spec.md §6 (and the empty string, which a
// request that names no context means) parse to their context; anything else is refused
// with ErrInvalidContext, so no other text ever reaches the store's context column.
func TestParseContext(t *testing.T) {
	longest := "sandbox:" + strings.Repeat("v", session.MaxContextLen-len("sandbox:"))
	for _, tc := range []struct {
		text    string
		text2   string // String of the parsed context
		version string // EditorVersion; empty in production
	}{
		{"", "default", ""},
		{"default", "default", ""},
		{"sandbox:v_1", "sandbox:v_1", "v_1"},
		{"sandbox:v_01J8ZXYZ0000000000000000AB", "sandbox:v_01J8ZXYZ0000000000000000AB", "v_01J8ZXYZ0000000000000000AB"},
		{longest, longest, longest[len("sandbox:"):]},
	} {
		c, err := session.ParseContext(tc.text)
		if err != nil {
			t.Errorf("ParseContext(%q): %v", tc.text, err)
			continue
		}
		if got := c.String(); got != tc.text2 {
			t.Errorf("ParseContext(%q).String() = %q, want %q", tc.text, got, tc.text2)
		}
		v, ok := c.EditorVersion()
		if v != tc.version || ok != (tc.version != "") || c.IsEditor() != (tc.version != "") {
			t.Errorf("ParseContext(%q): EditorVersion = %q, %v; IsEditor = %v; want %q", tc.text, v, ok, c.IsEditor(), tc.version)
		}
		if want := (store.SessionKey{ToolID: "t_1", UserID: "u_1", Context: tc.text2}); c.Key("t_1", "u_1") != want {
			t.Errorf("ParseContext(%q).Key = %+v, want %+v", tc.text, c.Key("t_1", "u_1"), want)
		}
	}

	for _, text := range []string{
		"sandbox:",
		"sandbox:a:b",
		"sandbox:a/b",
		"sandbox:/",
		"sandbox: ",   // a version id has no space
		"sandbox:v 1", // nor one inside
		"sandbox:v_1\x00",
		"sandbox:v\u00e9",
		"Default",
		"DEFAULT",
		"default ",
		" default",
		"Sandbox:v_1",
		"sandbox",
		"foo",
		"v_1",
		longest + "v", // 65 characters
	} {
		c, err := session.ParseContext(text)
		if !errors.Is(err, session.ErrInvalidContext) {
			t.Errorf("ParseContext(%q) = %q, %v; want ErrInvalidContext", text, c, err)
		}
	}
}

// TestContextConstructors: Production and Editor are the contexts their text parses to,
// and the zero Context is production.
func TestContextConstructors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		c      session.Context
		text   string
		editor bool
	}{
		{"Production", session.Production(), "default", false},
		{"zero", session.Context{}, "default", false},
		{"Editor", session.Editor("v_1"), "sandbox:v_1", true},
	} {
		if tc.c.String() != tc.text || tc.c.IsEditor() != tc.editor {
			t.Errorf("%s: String = %q, IsEditor = %v; want %q, %v", tc.name, tc.c.String(), tc.c.IsEditor(), tc.text, tc.editor)
		}
		back, err := session.ParseContext(tc.text)
		if err != nil || back != tc.c {
			t.Errorf("%s: ParseContext(%q) = %#v, %v; want %#v", tc.name, tc.text, back, err, tc.c)
		}
	}
}

// FuzzParseContext checks that ParseContext never panics, refuses only with
// ErrInvalidContext, and that an accepted context's text is the text it was parsed from
// (or "default" for the empty string) and parses back to the same context.
func FuzzParseContext(f *testing.F) {
	for _, seed := range []string{"", "default", "sandbox:v_1", "sandbox:", "sandbox:a:b", "sandbox:a/b", "Default", "foo",
		"sandbox:" + strings.Repeat("v", 57)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := session.ParseContext(text)
		if err != nil {
			if !errors.Is(err, session.ErrInvalidContext) {
				t.Fatalf("ParseContext(%q): error %v is not ErrInvalidContext", text, err)
			}
			return
		}
		s := c.String()
		if s != text && (text != "" || s != "default") {
			t.Fatalf("ParseContext(%q).String() = %q", text, s)
		}
		if len(s) > session.MaxContextLen {
			t.Fatalf("ParseContext(%q) accepted %d characters", text, len(s))
		}
		back, err := session.ParseContext(s)
		if err != nil || back != c || back.String() != s {
			t.Fatalf("ParseContext(%q) = %#v; its text %q parses to %#v, %v", text, c, s, back, err)
		}
		if v, ok := c.EditorVersion(); ok != c.IsEditor() || ok && strings.ContainsAny(v, ":/") {
			t.Fatalf("ParseContext(%q): EditorVersion = %q, %v; IsEditor = %v", text, v, ok, c.IsEditor())
		}
	})
}
