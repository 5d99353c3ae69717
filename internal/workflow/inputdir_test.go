package workflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/upload"
	"github.com/skrip-dev/skrip/internal/workflow"
)

// slowTool sleeps when its inputs ask it to, and offers an action, so that a user can be
// kept at the cap of runs while another initial or action run is refused.
const slowTool = `
import json, os, time
def run_tool(input_dir, output_dir):
    if json.loads(os.environ["SKRIPTOTEKET_INPUTS"]).get("slow"):
        time.sleep(60)
    return {"outputs": [{"kind": "markdown", "markdown": "ok"}],
            "next_actions": [{"action_id": "again", "label": "Again", "kind": "form", "fields": []}], "state": {}}
`

// uploadRequest is a run's multipart upload of one file named name.
func uploadRequest(t *testing.T, name string) *http.Request {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("files", name)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte("some bytes"))
	mw.WriteField("inputs", `{}`)
	mw.Close()
	r, err := http.NewRequest(http.MethodPost, "/", &body)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", mw.FormDataContentType())
	return r
}

// TestRefusedRunLeavesNoInputDir: a run's input directory is the workflow's from the
// upload to the run's admission, and whatever refuses the run on the way (the upload, the
// caller's own check, the input_schema, the user's cap of runs at Submit, on an initial
// or an action run) leaves no directory behind in the work dir. It runs on the local pool
// and on a cluster's API node, whose runs are dispatched to a worker.
func TestRefusedRunLeavesNoInputDir(t *testing.T) {
	apptest.EachOf(t, []apptest.Backend{apptest.Backends[0], apptest.ClusterBackend}, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.RunsPerUser = 1
		env := apptest.Start(t, cfg)
		ctx := context.Background()
		ac, _ := env.User(t, "anna", "author")
		_, ulf := env.User(t, "ulf", "user")
		if err := ac.Do(ctx, http.MethodPost, "/api/v1/tools", map[string]any{"slug": "slow", "title": "Slow", "source": slowTool, "publish": true,
			"input_schema": json.RawMessage(`[{"name":"docs","label":"Docs","kind":"file","max":2},{"name":"slow","label":"Slow","kind":"boolean"}]`)}, nil); err != nil {
			t.Fatal(err)
		}
		tool, err := env.App.Store.Tool(ctx, "slow")
		if err != nil {
			t.Fatal(err)
		}
		v, err := env.App.Store.ToolVersion(ctx, tool.PublishedVersionID)
		if err != nil {
			t.Fatal(err)
		}
		u, err := env.App.Store.User(ctx, ulf.ID)
		if err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(env.Config.DataDir, "work", "inputs")
		dirs := func() int {
			t.Helper()
			entries, err := os.ReadDir(work)
			if err != nil {
				t.Fatal(err)
			}
			return len(entries)
		}
		initial := func(in workflow.Initial) (store.Run, error) {
			in.Tool, in.Version, in.User, in.Context = tool, v, u, session.Production()
			return env.App.Workflow.Initial(ctx, in)
		}

		// A first run, so that the session offers an action.
		first, err := initial(workflow.Initial{Body: uploadRequest(t, "a.txt")})
		if err != nil {
			t.Fatal(err)
		}
		if rn := wait(t, env.App.Runs, first.ID); rn.Status != store.StatusSucceeded {
			t.Fatalf("the first run %s: %s", rn.Status, rn.ErrorSummary)
		}
		if n := dirs(); n != 0 {
			t.Fatalf("%d input dirs left after a run that ended", n)
		}

		refusals := []struct {
			name string
			in   workflow.Initial
			want error
		}{
			{"a file name that is no name", workflow.Initial{Body: uploadRequest(t, "...")}, upload.ErrInvalid},
			{"the caller's check", workflow.Initial{Body: uploadRequest(t, "b.txt"), Accept: func(*upload.Form) error {
				return errors.New("a forged form")
			}}, nil},
			{"an input its schema refuses", workflow.Initial{Body: uploadRequest(t, "d.txt"), Accept: func(f *upload.Form) error {
				f.Inputs = map[string]any{"slow": "nope"}
				return nil
			}}, contract.ErrInvalidInput},
		}
		for _, tc := range refusals {
			if _, err := initial(tc.in); err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("%s: %v; want a refusal (%v)", tc.name, err, tc.want)
			}
			if n := dirs(); n != 0 {
				t.Fatalf("%s: %d input dirs left", tc.name, n)
			}
		}

		// The user at the cap: a run that sleeps holds their one place, and both kinds of
		// run are refused by Submit after their directories were filled.
		slow, err := initial(workflow.Initial{Form: upload.Form{Inputs: map[string]any{"slow": true}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { env.App.Runs.Cancel(context.Background(), slow.ID) })
		held := dirs() // the slow run's own, on the local pool; none once dispatched
		if _, err := initial(workflow.Initial{Body: uploadRequest(t, "c.txt")}); !errors.Is(err, run.ErrUserRuns) {
			t.Fatalf("an initial run past the cap: %v; want ErrUserRuns", err)
		}
		if n := dirs(); n != held {
			t.Fatalf("an initial run refused at the cap left %d input dirs; want %d", n, held)
		}
		_, err = env.App.Workflow.Action(ctx, workflow.Action{Tool: tool, Version: v, User: u, Context: session.Production(),
			ActionID: "again", ExpectedStateRev: 1})
		if !errors.Is(err, run.ErrUserRuns) {
			t.Fatalf("an action run past the cap: %v; want ErrUserRuns", err)
		}
		if n := dirs(); n != held {
			t.Fatalf("an action run refused at the cap left %d input dirs; want %d", n, held)
		}
		if _, err := env.App.Runs.Cancel(ctx, slow.ID); err != nil {
			t.Fatal(err)
		}
		wait(t, env.App.Runs, slow.ID)
		deadline := time.Now().Add(10 * time.Second)
		for dirs() != 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := dirs(); n != 0 {
			t.Fatalf("%d input dirs left once every run ended", n)
		}
	})
}
