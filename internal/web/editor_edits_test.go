package web

import (
	"errors"
	"testing"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// TestTracebackLine: the line marked in the editor is the last frame of the tool's own
// file in a traceback; frames of other files, and text that only looks like one, are not.
func TestTracebackLine(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		want         int
	}{
		{"none", "", 0},
		{"a plain print", "hello\n", 0},
		{"innermost frame of the script", "Traceback (most recent call last):\n  File \"/work/script.py\", line 5, in run_tool\n    return helper()\n  File \"/work/script.py\", line 2, in helper\n    return 1 / 0\nZeroDivisionError: division by zero\n", 2},
		{"a library's frame after the script's", "Traceback (most recent call last):\n  File \"/work/script.py\", line 9, in run_tool\n    json.loads(x)\n  File \"/usr/lib/python3.13/json/__init__.py\", line 346, in loads\nValueError\n", 9},
		{"another file only", "  File \"/work/other.py\", line 4, in f\n", 0},
		{"a syntax error at import", "  File \"/work/script.py\", line 3\n    def f(:\n          ^\nSyntaxError: invalid syntax\n", 3},
		{"line 0", "  File \"/work/script.py\", line 0, in x\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tracebackLine(tc.stderr); got != tc.want {
				t.Fatalf("tracebackLine = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestSyntaxMark: a sandbox refusal for code that does not compile gives the line the
// editor marks, on a version whose saved check named none; any other error gives none.
func TestSyntaxMark(t *testing.T) {
	err := errs.New(workflow.ErrSyntax, map[string]any{"line": 3, "message": "'(' was never closed"}, "does not compile")
	m := syntaxOf(err)
	if m == nil || m.Line != 3 || m.Message != "'(' was never closed" {
		t.Fatalf("syntaxOf = %+v", m)
	}
	if v := m.marked(store.ToolVersion{}); v.SyntaxLine != 3 || v.SyntaxError == "" {
		t.Fatalf("an unchecked version is not marked: %+v", v)
	}
	if v := m.marked(store.ToolVersion{SyntaxLine: 7, SyntaxError: "x"}); v.SyntaxLine != 7 {
		t.Fatalf("a version's own check was overwritten: %+v", v)
	}
	if syntaxOf(errors.New("other")) != nil || syntaxOf(errs.New(workflow.ErrUnknownAction, nil, "no")) != nil {
		t.Fatal("another error gave a syntax mark")
	}
	var none *syntaxMark
	if v := none.marked(store.ToolVersion{ID: "v"}); v.SyntaxLine != 0 {
		t.Fatalf("no mark marked %+v", v)
	}
}
