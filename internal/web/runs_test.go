package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestCrashOrMessage: every summary skrip writes itself when a tool fails (the shim's,
// the run service's, the runner's) is a crash, told to the user as a plain sentence;
// a ToolUserError's message is the tool's word to its user, shown as it is.
func TestCrashOrMessage(t *testing.T) {
	crashes := []string{
		"Tool execution failed (ValueError).",
		"Tool execution failed (SystemExit): the tool called exit(1); return from run_tool instead.",
		"Tool execution was interrupted (KeyboardInterrupt).",
		"The script defines no function run_tool(input_dir, output_dir).",
		"run_tool returned int; return a str or a dict",
		"run_tool's outputs, next_actions or state are not JSON-serialisable (ValueError: Circular reference detected).",
		"The tool ended without a result (exit code 1); see stderr.",
		contract.NoResultSummary(1),
		contract.ViolationSummary(fmt.Errorf("%w: status is missing", contract.ErrViolation)),
		"the sandbox failed: see the server log",
		"could not read the run's input files",
		"the tool succeeded but its session could not be saved; see the server log",
		fmt.Errorf("%w: status is missing", contract.ErrViolation).Error(),
		runner.MemoryExceeded(256 << 20),
		"interrupted by server restart",
	}
	for _, s := range crashes {
		r := &result{Run: store.Run{Status: store.StatusFailed, ErrorSummary: s}}
		if r.UserMessage() || !r.Crashed() {
			t.Errorf("%q is taken for the tool's message to its user", s)
		}
	}
	for _, s := range []string{"Filen saknar kolumnen 'namn'.", "Ladda upp en fil."} {
		r := &result{Run: store.Run{Status: store.StatusFailed, ErrorSummary: s}}
		if !r.UserMessage() || r.NoMessage() {
			t.Errorf("the tool's message %q is taken for a crash", s)
		}
	}
	for _, s := range []string{genericUserMessage, oldGenericUserMessage} {
		if r := (&result{Run: store.Run{Status: store.StatusFailed, ErrorSummary: s}}); !r.NoMessage() {
			t.Errorf("a ToolUserError without a message (%q) is not recognised", s)
		}
	}
	timedOut := &result{Run: store.Run{Status: store.StatusTimedOut, ErrorSummary: runner.TimedOut(time.Minute)}}
	if timedOut.UserMessage() || !timedOut.Crashed() {
		t.Error("a timeout is shown as the tool's message")
	}
}
