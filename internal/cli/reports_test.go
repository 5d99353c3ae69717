package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestReportsCommands: a user reports a crashed run from the terminal, the tool's author
// lists it (the file count only when shared) and closes it, and someone else's report or
// run is refused.
func TestReportsCommands(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	ctx := context.Background()
	bobc, bob := env.User(t, "bob", "author")
	_, carl := env.User(t, "carl", "author")
	ulc, ulla := env.User(t, "ulla", "user")
	if _, _, err := bobc.CreateTool(ctx, "krasch", "Krasch", "", "def run_tool(i, o):\n    raise ValueError('x')\n", true); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "klass.csv")
	os.WriteFile(file, []byte("namn\n"), 0o644)
	rn, err := ulc.RunFiles(ctx, "krasch", []string{file}, nil, time.Minute)
	if err != nil || rn.Status != "failed" {
		t.Fatalf("the run: %+v, %v", rn, err)
	}
	if code, _, errOut := run(t, env, carl.Token, "", "reports", "send", rn.RunID); code == 0 || !strings.Contains(errOut, "run") {
		t.Fatalf("reporting another's run: %d %q", code, errOut)
	}
	code, out, errOut := run(t, env, ulla.Token, "", "reports", "send", rn.RunID, "-m", "Det kraschade.", "--share-files")
	if code != 0 || !strings.Contains(out, "reported "+rn.RunID+" to the maintainers of krasch") {
		t.Fatalf("send: %d %q %q", code, out, errOut)
	}
	id := out[strings.LastIndex(out, "report ")+len("report ") : len(out)-2]
	code, out, errOut = run(t, env, bob.Token, "", "reports", "list")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "Det kraschade.") || !strings.Contains(out, "ulla") || !strings.Contains(out, "open") {
		t.Fatalf("list: %d %q %q", code, out, errOut)
	}
	if code, out, _ := run(t, env, carl.Token, "", "reports", "list"); code != 0 || strings.Contains(out, id) {
		t.Fatalf("another author's list: %d %q", code, out)
	}
	if code, _, _ := run(t, env, carl.Token, "", "reports", "close", id); code == 0 {
		t.Fatal("another author closed the report")
	}
	if code, out, errOut := run(t, env, bob.Token, "", "reports", "close", id); code != 0 || out != "report "+id+" is closed\n" {
		t.Fatalf("close: %d %q %q", code, out, errOut)
	}
}
