package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// CheckSyntax compiles a source in the sandbox without running it: a source that
// compiles gives nil, one that does not names the line and the compiler's message, and a
// check finds no run slot free when every one is taken.
func TestCheckSyntax(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, 1, 0)
		ctx := context.Background()
		for _, tc := range []struct {
			name, src string
			line      int
			message   string
		}{
			{"compiles", "def run_tool(i, o):\n    return 'ok'\n", 0, ""},
			// Compiling never runs the code: an import that fails at run time is fine.
			{"not run", "import no_such_module\nraise SystemExit(3)\n", 0, ""},
			{"missing colon", "def run_tool(i, o)\n    return 1\n", 1, "expected ':'"},
			{"bad indent", "def run_tool(i, o):\n    x = 1\n      y = 2\n", 3, "unexpected indent"},
			{"late error", "x = 1\n\n\ny = (1,\n", 4, "never closed"},
			{"null byte", "x = 1\x00\n", 0, "null"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				se, err := e.svc.CheckSyntax(ctx, tc.src)
				if err != nil {
					t.Fatal(err)
				}
				if tc.message == "" {
					if se != nil {
						t.Fatalf("want no error, got %+v", se)
					}
					return
				}
				if se == nil {
					t.Fatalf("want an error at line %d, got none", tc.line)
				}
				if (tc.line > 0 && se.Line != tc.line) || !strings.Contains(se.Message, tc.message) {
					t.Fatalf("got %+v, want line %d and %q", se, tc.line, tc.message)
				}
			})
		}
		// Every run slot taken: the check does not wait behind runs, it says so.
		if _, _, err := e.submit(t, e.marker(30)); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.CheckSyntax(ctx, "x = 1\n"); !errors.Is(err, run.ErrBusy) {
			t.Fatalf("with every slot taken: got %v, want ErrBusy", err)
		}
	})
}
