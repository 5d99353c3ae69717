package web

import (
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestCrashOrMessage: the page tells the tool's own message from a crash by the run's
// error_source, never by the summary's words: a ToolUserError's message is shown as it
// is, even one worded like skrip's own summaries, and every other source gets the page's
// sentence, the summary folded. A failed run without a source (recorded by an older node
// during an upgrade) is taken for a crash.
func TestCrashOrMessage(t *testing.T) {
	failed := func(source, summary string) *result {
		return &result{Run: store.Run{Status: store.StatusFailed, ErrorSource: source, ErrorSummary: summary}}
	}
	tests := []struct {
		name                   string
		r                      *result
		message, none, refused bool // UserMessage, NoMessage, InputRefused
	}{
		{"the tool's message", failed(store.SourceTool, "Filen saknar kolumnen 'namn'."), true, false, false},
		{"the tool's message in skrip's words", failed(store.SourceTool, "Tool execution failed (ValueError)."), true, false, false},
		{"no message", failed(store.SourceTool, genericUserMessage), true, true, false},
		{"no message, old words", failed(store.SourceTool, oldGenericUserMessage), true, true, false},
		{"an empty message", failed(store.SourceTool, " "), false, true, false},
		{"a crash", failed(store.SourceCrash, "Tool execution failed (ValueError)."), false, false, false},
		{"a crash in a message's words", failed(store.SourceCrash, "Filen saknar kolumnen 'namn'."), false, false, false},
		{"the runner", failed(store.SourceRunner, "worker lost: the run was tried on 2 workers, and each stopped answering"), false, false, false},
		{"the runner's memory limit", failed(store.SourceRunner, runner.MemoryExceeded(256<<20)), false, false, false},
		{"the policy", failed(store.SourcePolicy, contract.NoResultSummary(1)), false, false, false},
		{"the input", failed(store.SourceInput, "the file field needs a file"), false, false, true},
		{"no source", failed("", "Filen saknar kolumnen 'namn'."), false, false, false},
		{"no source, generic words", failed("", genericUserMessage), false, false, false},
		{"timed out", &result{Run: store.Run{Status: store.StatusTimedOut, ErrorSource: store.SourceRunner, ErrorSummary: runner.TimedOut(time.Minute)}}, false, false, false},
	}
	for _, tc := range tests {
		if got := tc.r.UserMessage(); got != tc.message {
			t.Errorf("%s: UserMessage = %v, want %v", tc.name, got, tc.message)
		}
		if got := tc.r.NoMessage(); got != tc.none {
			t.Errorf("%s: NoMessage = %v, want %v", tc.name, got, tc.none)
		}
		if got := tc.r.InputRefused(); got != tc.refused {
			t.Errorf("%s: InputRefused = %v, want %v", tc.name, got, tc.refused)
		}
		if !tc.r.Crashed() {
			t.Errorf("%s: not shown as a run that did not do its job", tc.name)
		}
	}
}
