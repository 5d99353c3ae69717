package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

const ekoTool = `
import os, sys, json, time
def run_tool(input_dir, output_dir):
    inputs = json.loads(os.environ.get("SKRIPTOTEKET_INPUTS") or "{}")
    print("första raden", flush=True)
    print("till stderr", file=sys.stderr, flush=True)
    time.sleep(float(inputs.get("sleep", 0)))
    print("andra raden", flush=True)
    if inputs.get("fail"):
        raise ValueError("bad")
    return {"outputs": [{"kind": "notice", "level": "info", "message": "klart"}]}
`

// TestRunsCommands: skrip runs lists the caller's runs (pages, one --json shape), shows
// one with an exit status only when asked, prints its log, follows a running one live
// until its end, and cancels one; another user's run is not found.
func TestRunsCommands(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	bobc, _ := env.User(t, "bob", "author")
	ulc, ulla := env.User(t, "ulla", "user")
	_, carl := env.User(t, "carl", "user")
	if _, _, err := bobc.CreateTool(ctx, "eko", "Eko", "", ekoTool, true); err != nil {
		t.Fatal(err)
	}
	ok, err := ulc.RunFiles(ctx, "eko", nil, nil, time.Minute)
	if err != nil || ok.Status != "succeeded" {
		t.Fatalf("the first run: %+v, %v", ok, err)
	}
	bad, err := ulc.RunFiles(ctx, "eko", nil, map[string]any{"fail": true}, time.Minute)
	if err != nil || bad.Status != "failed" {
		t.Fatalf("the failing run: %+v, %v", bad, err)
	}

	code, out, errOut := run(t, env, ulla.Token, "", "runs", "list")
	if code != 0 || !strings.Contains(out, ok.RunID) || !strings.Contains(out, bad.RunID) || !strings.Contains(out, "eko") ||
		!strings.Contains(out, "succeeded") || !strings.Contains(out, "failed") || strings.Index(out, bad.RunID) > strings.Index(out, ok.RunID) {
		t.Fatalf("runs list: %d %q %q", code, out, errOut)
	}
	code, out, errOut = run(t, env, ulla.Token, "", "runs", "list", "--limit", "1", "--json")
	var page struct {
		Items      []map[string]any `json:"items"`
		NextCursor *string          `json:"next_cursor"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Items) != 1 || page.Items[0]["run_id"] != bad.RunID || page.NextCursor == nil {
		t.Fatalf("runs list --limit 1 --json: %d %q %q", code, out, errOut)
	}
	code, out, _ = run(t, env, ulla.Token, "", "runs", "list", "--json", "--cursor", *page.NextCursor, "--status", "succeeded")
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Items) != 1 || page.Items[0]["run_id"] != ok.RunID || page.NextCursor != nil {
		t.Fatalf("the next page: %d %q", code, out)
	}
	if code, out, _ := run(t, env, carl.Token, "", "runs", "list"); code != 0 || strings.Contains(out, ok.RunID) {
		t.Fatalf("another user's list: %d %q", code, out)
	}

	if code, out, errOut := run(t, env, ulla.Token, "", "runs", "show", ok.RunID); code != 0 || !strings.Contains(out, "Run "+ok.RunID+" succeeded") || !strings.Contains(out, "klart") {
		t.Fatalf("runs show: %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(t, env, ulla.Token, "", "runs", "show", bad.RunID); code != 0 || !strings.Contains(out, "failed") {
		t.Fatalf("runs show of a failed run: %d %q", code, out)
	}
	if code, _, _ := run(t, env, ulla.Token, "", "runs", "show", bad.RunID, "--exit-status"); code != 1 {
		t.Fatalf("runs show --exit-status of a failed run: exit %d, want 1", code)
	}
	if code, _, _ := run(t, env, carl.Token, "", "runs", "show", ok.RunID); code != exitNotFound {
		t.Fatalf("runs show of another user's run: exit %d, want %d", code, exitNotFound)
	}
	code, out, errOut = run(t, env, ulla.Token, "", "runs", "logs", bad.RunID)
	if code != 0 || out != "första raden\nandra raden\n" || !strings.Contains(errOut, "till stderr") || !strings.Contains(errOut, "ValueError") {
		t.Fatalf("runs logs: %d %q %q", code, out, errOut)
	}

	// A run followed while it runs: its lines come live, then its result.
	slow, err := ulc.RunFiles(ctx, "eko", nil, map[string]any{"sleep": 1.5}, 0)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, env, ulla.Token, "", "runs", "watch", slow.RunID, "--exit-status")
	if code != 0 || !strings.Contains(out, "första raden\n") || !strings.Contains(out, "andra raden\n") ||
		strings.Index(out, "andra raden") > strings.Index(out, "Run "+slow.RunID+" succeeded") || !strings.Contains(errOut, "till stderr") || !strings.Contains(errOut, "succeeded") {
		t.Fatalf("runs watch: %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(t, env, ulla.Token, "", "runs", "watch", bad.RunID, "--exit-status", "-q"); code != 1 || strings.Contains(out, "första raden") {
		t.Fatalf("runs watch --exit-status -q of a failed run: %d %q", code, out)
	}

	long, err := ulc.RunFiles(ctx, "eko", nil, map[string]any{"sleep": 3600}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := run(t, env, carl.Token, "", "runs", "cancel", long.RunID); code != exitNotFound {
		t.Fatalf("cancelling another user's run: exit %d", code)
	}
	if code, out, errOut := run(t, env, ulla.Token, "", "runs", "cancel", long.RunID); code != 0 || !strings.Contains(out, long.RunID) {
		t.Fatalf("runs cancel: %d %q %q", code, out, errOut)
	}
	got, err := ulc.WaitRun(ctx, long)
	if err != nil || got.Status != "cancelled" {
		t.Fatalf("the cancelled run: %s, %v", got.Status, err)
	}
}

// listItems reads a --json list into items, and fails unless it has the one shape every
// list has: {items: [...], next_cursor: string or null} and nothing else.
func listItems(out string, items any) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return err
	}
	raw, ok := m["items"]
	if _, has := m["next_cursor"]; !ok || !has || len(m) != 2 || !strings.HasPrefix(string(raw), "[") {
		return fmt.Errorf("not {items, next_cursor}: %s", out)
	}
	return json.Unmarshal(raw, items)
}

// TestJSONListsOneShape: every list verb's --json is {items, next_cursor} (SPEC §10),
// items [] when the list is empty.
func TestJSONListsOneShape(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	uc, u := env.User(t, "ulla", "author")
	src := filepath.Join(t.TempDir(), "note.txt")
	os.WriteFile(src, []byte("hej"), 0o644)
	if code, _, errOut := run(t, env, u.Token, "", "files", "upload", src, "--key", "files/note.txt"); code != 0 {
		t.Fatal(errOut)
	}
	if _, _, err := env.Admin.CreateTool(ctx, "eko", "Eko", "", ekoTool, true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		token string
		args  []string
		empty bool
	}{
		{env.AdminToken, []string{"users", "list"}, false},
		{u.Token, []string{"tokens", "list"}, false},
		{u.Token, []string{"tools", "list"}, false},
		{u.Token, []string{"files", "list"}, false},
		{u.Token, []string{"files", "links", "files/note.txt"}, true},
		{u.Token, []string{"files", "versions", "files/note.txt"}, false},
		{u.Token, []string{"sandbox", "ls"}, true},
		{u.Token, []string{"reports", "list"}, true},
		{env.AdminToken, []string{"audit"}, false},
		{u.Token, []string{"runs", "list"}, true},
		{u.Token, []string{"files", "upload-links"}, true},
	} {
		code, out, errOut := run(t, env, c.token, "", append(c.args, "--json")...)
		var items []any
		if err := listItems(out, &items); code != 0 || err != nil || items == nil || (len(items) == 0) != c.empty {
			t.Errorf("%v --json: %d %v %q %q", c.args, code, err, out, errOut)
		}
	}
	if r, err := uc.RunFiles(ctx, "eko", []string{src}, nil, time.Minute); err != nil || r.Status != "succeeded" {
		t.Fatalf("a run with a file: %+v, %v", r, err)
	}
	code, out, errOut := run(t, env, u.Token, "", "session", "files", "eko", "--json")
	var m map[string]json.RawMessage
	var files []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil || json.Unmarshal(m["items"], &files) != nil || len(files) != 1 || string(m["next_cursor"]) != "null" {
		t.Errorf("session files --json: %d %q %q", code, out, errOut)
	}
}
