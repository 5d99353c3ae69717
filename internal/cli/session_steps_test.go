package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// stepsTool counts its steps in the session state and offers the next one.
const stepsTool = `
from skrip_toolkit import action
def run_tool(input_dir, output_dir):
    act = action()
    n = act["state"]["n"] + 1 if act else 0
    return {"outputs": [{"kind": "markdown", "markdown": "step %d" % n}],
            "next_actions": [{"action_id": "next", "label": "Next", "kind": "form", "fields": []}], "state": {"n": n}}
`

// TestSessionBackAndContinue: skrip session back and continue drive the editor
// sandbox's session routes, and a stale --expected is refused with the API's words.
func TestSessionBackAndContinue(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	ac, anna := env.User(t, "anna", "author")
	_, v1, err := ac.CreateTool(ctx, "steps", "Steps", "", stepsTool, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ac.EditorRun(ctx, v1.ID, nil, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	for rev := int64(1); rev <= 2; rev++ {
		if _, err := ac.EditorAction(ctx, v1.ID, "next", nil, rev); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, env, anna.Token, "", "session", "back", v1.ID, "2", "--expected", "2")
	if code == 0 || !strings.Contains(errOut, "revision 3") {
		t.Fatalf("back at a stale revision: %d %q %q", code, out, errOut)
	}
	if code, _, errOut := run(t, env, anna.Token, "", "session", "back", v1.ID, "2"); code == 0 || !strings.Contains(errOut, "--expected") {
		t.Fatalf("back without --expected: %d %q", code, errOut)
	}
	code, out, errOut = run(t, env, anna.Token, "", "session", "back", v1.ID, "2", "--expected", "3")
	if code != 0 || !strings.Contains(out, "state_rev  4") || !strings.Contains(out, `"n": 1`) && !strings.Contains(out, `"n":1`) {
		t.Fatalf("back to step 2: %d %q %q", code, out, errOut)
	}
	v2, err := ac.CreateVersion(ctx, "steps", stepsTool)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, env, anna.Token, "", "session", "continue", v2.ID, v1.ID, "--rev", "3", "--json")
	if code != 0 || !strings.Contains(out, `"state_rev": 1`) || !strings.Contains(out, "sandbox:"+v2.ID) || !strings.Contains(out, `"n": 2`) && !strings.Contains(out, `"n":2`) {
		t.Fatalf("continue from step 3: %d %q %q", code, out, errOut)
	}
}
