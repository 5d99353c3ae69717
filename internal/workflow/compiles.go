package workflow

import (
	"context"
	"errors"
	"sync"

	"github.com/skrip-dev/skrip/internal/errs"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
)

// ErrSyntax means a version's source does not compile, so the editor's sandbox does not
// run it (docs/spec.md §6 "Editor"). Its details carry line, column and message.
var ErrSyntax = errors.New("the source does not compile")

// maxCompiled bounds the versions remembered as compiling: past it the memory starts
// over, and a version is checked again on its next sandbox run.
const maxCompiled = 4096

// compiled remembers the versions whose source compiles. A version's source never
// changes, so an answer holds for good; it spares a sandbox run its check on every step.
type compiled struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (c *compiled) has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id]
}

func (c *compiled) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil || len(c.ids) >= maxCompiled {
		c.ids = map[string]bool{}
	}
	c.ids[id] = true
}

// Compiles refuses version v with ErrSyntax when its source does not compile, so that
// the editor's sandbox never runs code the compiler rejects (run-sandbox and
// start-action alike, from the API or the web). A line the save's check stored is
// trusted (the source cannot change); otherwise the source is compiled in a sandbox
// (run.Service.CheckSyntax). A check that is refused for capacity refuses the run the
// same way; one that fails otherwise lets the run go ahead, whose own failure then
// tells the author more than a broken check could.
func (st *Service) Compiles(ctx context.Context, v store.ToolVersion) error {
	if v.SyntaxError != "" && v.SyntaxLine > 0 {
		return syntaxError(v, run.SyntaxError{Line: v.SyntaxLine, Message: v.SyntaxError})
	}
	if st.compiled.has(v.ID) {
		return nil
	}
	se, err := st.runs.CheckSyntax(ctx, v.Source)
	switch {
	case errors.Is(err, run.ErrBusy):
		return err
	case err != nil:
		return nil
	case se != nil:
		return syntaxError(v, *se)
	}
	st.compiled.add(v.ID)
	return nil
}

func syntaxError(v store.ToolVersion, se run.SyntaxError) error {
	if se.Line > 0 {
		return errs.New(ErrSyntax, map[string]any{"line": se.Line, "column": se.Column, "message": se.Message, "version_id": v.ID},
			"version %s does not compile, so it did not run: line %d: %s", v.ID, se.Line, se.Message)
	}
	return errs.New(ErrSyntax, map[string]any{"line": 0, "message": se.Message, "version_id": v.ID},
		"version %s does not compile, so it did not run: %s", v.ID, se.Message)
}
