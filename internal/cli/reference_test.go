package cli

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

const reference = "../../docs/cli.md"

// TestReferenceListsEveryVerb: docs/cli.md, the CLI's reference, lists every verb.
func TestReferenceListsEveryVerb(t *testing.T) {
	doc, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasSubCommands() && !strings.Contains(string(doc), "| `"+c.CommandPath()) {
			t.Errorf("docs/cli.md does not list %q", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(e.rootCmd())
}

// documentedCodes reads the exit codes of the tables under "## Exit codes" in docs/cli.md.
func documentedCodes(t *testing.T) []int {
	f, err := os.Open(reference)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile(`^\| (\d+) \|`)
	var codes []int
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Exit codes"
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			n, _ := strconv.Atoi(m[1])
			codes = append(codes, n)
		}
	}
	if len(codes) == 0 {
		t.Fatal("docs/cli.md has no exit code table under ## Exit codes")
	}
	return codes
}

// TestExitCodes runs the built binary into every exit code docs/cli.md documents, and
// checks it returns that code (and that every code it is driven into is documented).
func TestExitCodes(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "ulla", "user")
	sb, err := env.Admin.CreateSandbox(t.Context(), client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(src, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.Upload(t.Context(), "a.txt", strings.NewReader("a"), client.UploadOptions{Key: "files/a.txt"}); err != nil {
		t.Fatal(err)
	}
	admin, user := env.AdminToken, u.Token
	// Each documented code, with command lines that must end with it.
	cases := map[int][]struct {
		token string
		args  []string
	}{
		0: {{admin, []string{"version"}}, {admin, []string{"--version"}}, {admin, []string{"files", "info", "files/a.txt"}}},
		1: {
			{user, []string{"users", "add", "x"}},                               // refused: not an admin
			{admin, []string{"files", "upload", src, "--key", "runs/x"}},        // refused: an invalid key
			{admin, []string{"files", "download", "files/a.txt", "-o", src}},    // would overwrite
			{admin, []string{"files", "upload", filepath.Join(dir, "missing")}}, // a local file that is not there
		},
		2: {
			{admin, []string{"files", "download"}},
			{admin, []string{"files", "list", "--bogus"}},
			{admin, []string{"frobnicate"}},
			{admin, []string{"users", "list", "extra"}},
		},
		3: {
			{admin, []string{"files", "info", "files/nope"}},
			{admin, []string{"tools", "show", "no-such-tool"}},
			{admin, []string{"sandbox", "stage", "sb_nope", "files/a.txt", "a.txt"}},
		},
		4:   {{admin, []string{"--server", "http://127.0.0.1:1", "users", "list"}}},
		126: {{admin, []string{"sandbox", "exec", sb.SandboxID, "/tmp"}}},
		127: {{admin, []string{"sandbox", "exec", sb.SandboxID, "no-such-program"}}},
		137: {{admin, []string{"sandbox", "exec", "--timeout", "1s", sb.SandboxID, "sleep", "30"}}},
		125: {
			{admin, []string{"sandbox", "exec", "sb_nope", "true"}},
			{admin, []string{"sandbox", "exec", sb.SandboxID}},
			{admin, []string{"sandbox", "exec", "--bogus", sb.SandboxID, "true"}},
			{admin, []string{"--server", "http://127.0.0.1:1", "sandbox", "exec", sb.SandboxID, "true"}},
		},
	}
	documented := documentedCodes(t)
	for code := range cases {
		if !slices.Contains(documented, code) {
			t.Errorf("exit code %d is not documented in docs/cli.md", code)
		}
	}
	for _, code := range documented {
		if cases[code] == nil {
			t.Errorf("docs/cli.md documents exit code %d, which this test does not drive the binary into", code)
		}
	}
	// Any other code of sandbox exec is the command's.
	cases[42] = append(cases[42], struct {
		token string
		args  []string
	}{admin, []string{"sandbox", "exec", sb.SandboxID, "sh", "-c", "exit 42"}})
	for want, lines := range cases {
		for _, l := range lines {
			cmd := exec.Command(bin, l.args...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "SKRIP_SERVER=" + env.URL, "SKRIP_TOKEN=" + l.token}
			out, err := cmd.CombinedOutput()
			got := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				got = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("skrip %s: exit %d, want %d; output:\n%s", strings.Join(l.args, " "), got, want, out)
			}
		}
	}
}
