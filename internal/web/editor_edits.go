package web

import (
	"errors"
	"regexp"
	"strconv"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// The editor's marks on the code: the line the sandbox refused to run because it does not
// compile (workflow.ErrSyntax), and the line of the tool's own code where a sandbox run
// stopped with a traceback. The page marks either in CodeMirror (editor-save.js).

// syntaxMark is where a refused sandbox run found the source not compiling.
type syntaxMark struct {
	Line    int
	Message string
}

// syntaxOf is the syntax error err reports, when it is a sandbox run refused because its
// version does not compile; nil otherwise.
func syntaxOf(err error) *syntaxMark {
	var e *errs.Error
	if !errors.Is(err, workflow.ErrSyntax) || !errors.As(err, &e) {
		return nil
	}
	m := &syntaxMark{}
	if n, ok := byteCount(e.Details["line"]); ok && n > 0 {
		m.Line = int(n)
	}
	m.Message, _ = e.Details["message"].(string)
	return m
}

// marked is v as the editor shows it with mark: a version whose stored check found no
// line (never checked, or checked when the check could not run) shows the line the
// sandbox's check found.
func (m *syntaxMark) marked(v store.ToolVersion) store.ToolVersion {
	if m != nil && v.SyntaxLine == 0 && m.Message != "" {
		v.SyntaxError, v.SyntaxLine = m.Message, m.Line
	}
	return v
}

// scriptFrame is a traceback's frame in the tool's own code, which the runner mounts at
// contract.ScriptPath.
var scriptFrame = regexp.MustCompile(`File "` + regexp.QuoteMeta(contract.ScriptPath) + `", line (\d+)`)

// tracebackLine is the line of the tool's code where the traceback in stderr stopped:
// its last frame in the tool's own file, as Python prints the innermost last. 0: stderr
// holds no frame of the tool's file.
func tracebackLine(stderr string) int {
	all := scriptFrame.FindAllStringSubmatch(stderr, -1)
	if len(all) == 0 {
		return 0
	}
	n, err := strconv.Atoi(all[len(all)-1][1])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
