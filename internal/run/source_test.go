package run_test

import (
	"context"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
)

// TestErrorSource: each way a real run (bubblewrap) fails records where its error came
// from, decided by what happened and never by the summary's words: a ToolUserError is the
// tool's own message, even one worded like skrip's crash summaries; an exception is a
// crash; the wall-time limit is the runner's; a result.json that breaks the contract, or
// none at all, is the policy's. A run that succeeds has none.
func TestErrorSource(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st, 4, 8)
		cases := []struct {
			name, source string
			wall         time.Duration
			status, want string
			summary      string // "" when only the source is checked
		}{
			{"tool message", "from skrip_toolkit import ToolUserError\ndef run_tool(i, o):\n    raise ToolUserError('Tool execution failed: the file has no header row.')\n",
				0, store.StatusFailed, store.SourceTool, "Tool execution failed: the file has no header row."},
			{"crash", "def run_tool(i, o):\n    raise ValueError('oops')\n", 0, store.StatusFailed, store.SourceCrash, "Tool execution failed (ValueError)."},
			{"no function", "x = 1\n", 0, store.StatusFailed, store.SourceCrash, "The script defines no function run_tool(input_dir, output_dir)."},
			{"timeout", "import time\ndef run_tool(i, o):\n    time.sleep(60)\n", 2 * time.Second, store.StatusTimedOut, store.SourceRunner, "Execution timed out after 2s"},
			{"bad result", "import os\ndef run_tool(i, o):\n    open(os.environ['SKRIPTOTEKET_RESULT_PATH'], 'w').write('{\"contract_version\": 1}')\n    os._exit(0)\n",
				0, store.StatusFailed, store.SourcePolicy, ""},
			{"no result", "import os\ndef run_tool(i, o):\n    os._exit(3)\n", 0, store.StatusFailed, store.SourcePolicy, ""},
			{"succeeded", "def run_tool(i, o):\n    return 'ok'\n", 0, store.StatusSucceeded, "", ""},
		}
		ids := make([]string, len(cases))
		for i, tc := range cases {
			dir, err := e.svc.NewInputDir()
			if err != nil {
				t.Fatal(err)
			}
			req := e.req
			req.Version.Source, req.InputDir, req.WallTime = tc.source, dir, tc.wall
			r, err := e.svc.Submit(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			ids[i] = r.ID
		}
		for i, tc := range cases {
			got := e.final(t, ids[i])
			if got.Status != tc.status || got.ErrorSource != tc.want || (tc.summary != "" && got.ErrorSummary != tc.summary) {
				t.Errorf("%s: %s with the source %q (%q); want %s, %q (%q)\nstderr: %s", tc.name, got.Status, got.ErrorSource, got.ErrorSummary,
					tc.status, tc.want, tc.summary, got.Stderr)
			}
		}
	})
}
