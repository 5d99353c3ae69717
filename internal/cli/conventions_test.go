package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/version"
	"github.com/skrip-dev/skrip/internal/wire"
)

// TestSandboxExecConventions: as with docker exec, everything after the sandbox id is the
// command's, flags included; a missing command exits 127 with a shell's words and nothing
// of the runner; and skrip adds nothing to what the command printed.
func TestSandboxExecConventions(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	sb, err := env.Admin.CreateSandbox(t.Context(), client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := sb.SandboxID
	if res, err := env.Admin.Exec(t.Context(), id, client.ExecRequest{Cmd: []string{"sh", "-c", "echo hi > a.txt"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("setting up: %+v %v", res, err)
	}
	// ID stands for the sandbox's id.
	tests := []struct {
		name         string
		args         []string
		code         int
		stdout       string
		stderr       string
		stdoutPrefix bool
	}{
		{"a flag of the command after the id", []string{"ID", "ls", "-la"}, 0, "total ", "", true},
		{"exec's own flag after the id is the command's", []string{"ID", "printf", "%s|", "--timeout", "-x"}, 0, "--timeout|-x|", "", false},
		{"exec's flags before the id", []string{"--timeout", "10s", "ID", "cat", "a.txt"}, 0, "hi\n", "", false},
		{"-- after the id", []string{"ID", "--", "cat", "a.txt"}, 0, "hi\n", "", false},
		{"a missing command", []string{"ID", "no-such-program", "-x"}, 127, "", "no-such-program: command not found\n", false},
		{"a command that cannot be run", []string{"ID", "./a.txt"}, 126, "", "./a.txt: Permission denied\n", false},
		{"the command's exit code and its stderr alone", []string{"ID", "sh", "-c", "echo out; echo err >&2; exit 42"}, 42, "out\n", "err\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"sandbox", "exec"}
			for _, a := range tc.args {
				if a == "ID" {
					a = id
				}
				args = append(args, a)
			}
			code, out, errOut := run(t, env, env.AdminToken, "", args...)
			okOut := out == tc.stdout || (tc.stdoutPrefix && strings.HasPrefix(out, tc.stdout))
			if code != tc.code || !okOut || errOut != tc.stderr {
				t.Errorf("skrip %s: exit %d, stdout %q, stderr %q; want %d, %q, %q", strings.Join(args, " "), code, out, errOut, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), args, strings.NewReader(""), &out, &errOut, func(string) string { return "" })
		if code != 0 || out.String() != "skrip "+version.Version+"\n" {
			t.Errorf("skrip %s: exit %d, stdout %q, stderr %q; want skrip %s", args[0], code, out.String(), errOut.String(), version.Version)
		}
	}
}

// TestDownloadRefusesToOverwrite: a local file of the target's name is kept, and nothing
// is written beside it, unless --force.
func TestDownloadRefusesToOverwrite(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	dir := t.TempDir()
	src := filepath.Join(dir, "report.csv")
	if err := os.WriteFile(src, []byte("new bytes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, env, env.AdminToken, "", "files", "upload", src, "--key", "files/report.csv")
	if code != 0 {
		t.Fatalf("upload: %d %q %q", code, out, errOut)
	}
	dest := t.TempDir()
	existing := filepath.Join(dest, "report.csv")
	for _, args := range [][]string{{"-o", existing}, {"-o", dest}} {
		if err := os.WriteFile(existing, []byte("mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(t, env, env.AdminToken, "", append([]string{"files", "download", "files/report.csv"}, args...)...)
		if code != 1 || !strings.Contains(errOut, existing+" already exists") || !strings.Contains(errOut, "--force") {
			t.Errorf("download %v over a file: exit %d, stderr %q; want 1 naming %s and --force", args, code, errOut, existing)
		}
		if b, _ := os.ReadFile(existing); string(b) != "mine\n" {
			t.Errorf("download %v without --force changed the file to %q", args, b)
		}
		if entries, _ := os.ReadDir(dest); len(entries) != 1 {
			t.Errorf("download %v without --force left %d entries in the directory, want only the file", args, len(entries))
		}
	}
	// A folder that does not exist: the error names the file asked for, not the
	// temporary one that would have been written beside it.
	missing := filepath.Join(dest, "nodir", "x.csv")
	if code, _, errOut := run(t, env, env.AdminToken, "", "files", "download", "files/report.csv", "-o", missing); code != 1 ||
		!strings.Contains(errOut, missing) || strings.Contains(errOut, ".skrip-download") {
		t.Errorf("download into a missing folder: exit %d, stderr %q; want 1 naming %s", code, errOut, missing)
	}
	code, _, errOut = run(t, env, env.AdminToken, "", "files", "download", "files/report.csv", "-o", dest, "--force")
	if b, _ := os.ReadFile(existing); code != 0 || string(b) != "new bytes\n" {
		t.Errorf("download --force: exit %d, stderr %q, the file holds %q", code, errOut, b)
	}
}

// TestPlaceKeepsAFileThatAppeared: a file that appears at the target while the download
// runs is kept too; the download's file is not moved over it.
func TestPlaceKeepsAFileThatAppeared(t *testing.T) {
	dir := t.TempDir()
	tmp, target := filepath.Join(dir, ".skrip-download-1"), filepath.Join(dir, "out.txt")
	for _, f := range []struct{ name, body string }{{tmp, "downloaded"}, {target, "appeared"}} {
		if err := os.WriteFile(f.name, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := place(tmp, target, false); err == nil || !strings.Contains(err.Error(), target) {
		t.Fatalf("place over a file: %v, want a refusal naming it", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "appeared" {
		t.Fatalf("the target holds %q", b)
	}
	if err := place(tmp, target, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "downloaded" {
		t.Fatalf("with force the target holds %q", b)
	}
	if err := place(target, filepath.Join(dir, "new.txt"), false); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != "new.txt" {
		t.Fatalf("after placing on a free name the directory holds %v", entries)
	}
}

// TestUsageErrors: a bad command line names the problem and the verb, shows the verb's
// usage, and exits 2, on every verb alike.
func TestUsageErrors(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	tests := []struct {
		args  []string
		msg   string
		usage string
	}{
		{[]string{"files", "download"}, "skrip: files download: missing KEY\n", "skrip files download KEY [flags]"},
		{[]string{"sandbox", "stage", "sb_x"}, "skrip: sandbox stage: missing FILE_KEY and DEST\n", "skrip sandbox stage ID FILE_KEY DEST [flags]"},
		{[]string{"users", "set-role"}, "skrip: users set-role: missing USER and ROLE\n", "skrip users set-role USER ROLE [flags]"},
		{[]string{"run"}, "skrip: run: missing SLUG\n", "skrip run SLUG [FILES...] [flags]"},
		{[]string{"sandbox", "rm"}, "skrip: sandbox rm: missing ID\n", "skrip sandbox rm ID... [flags]"},
		{[]string{"users", "list", "extra"}, "skrip: users list: unexpected argument \"extra\"\n", "skrip users list [flags]"},
		{[]string{"files", "info", "a", "b", "c"}, "skrip: files info: unexpected arguments \"b\" \"c\"\n", "skrip files info KEY [flags]"},
		{[]string{"tokens", "create", "a", "b"}, "skrip: tokens create: unexpected argument \"b\"\n", "skrip tokens create [NAME] [flags]"},
		{[]string{"tools", "export", "a", "-o", "d", "b"}, "skrip: tools export: unexpected argument \"b\"\n", "skrip tools export SLUG -o DIR [flags]"},
		{[]string{"files", "list", "--bogus"}, "skrip: files list: unknown flag: --bogus\n", "skrip files list [flags]"},
		{[]string{"tools", "add", "x.py"}, "skrip: tools add: required flag(s) \"slug\" not set\n", "skrip tools add FILE [flags]"},
		{[]string{"tools", "export", "x"}, "skrip: tools export: give the directory to write: -o DIR\n", "skrip tools export SLUG -o DIR [flags]"},
		{[]string{"sandbox", "create", "--memory", "lots"}, "skrip: sandbox create: --memory \"lots\": ", "skrip sandbox create [flags]"},
		{[]string{"files", "frob"}, "skrip: unknown command \"frob\" for \"skrip files\"\n", "skrip files [command]"},
		{[]string{"frobnicate"}, "skrip: unknown command \"frobnicate\" for \"skrip\"\n", "skrip [command]"},
		{[]string{"--bogus"}, "skrip: unknown flag: --bogus\n", "skrip [command]"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, env, env.AdminToken, "", tc.args...)
			if code != exitUsage || out != "" || !strings.HasPrefix(errOut, tc.msg) || !strings.Contains(errOut, "\nUsage:\n  "+tc.usage+"\n") {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2, a first line %q and the usage %q", code, out, errOut, tc.msg, tc.usage)
			}
			if strings.Contains(errOut, env.AdminToken) {
				t.Errorf("the usage shows the token of SKRIP_TOKEN:\n%s", errOut)
			}
		})
	}
}

// useWord is what a Use line may hold after the verb: positional(cmd) reads it.
var useWord = regexp.MustCompile(`^(\[flags\]|--|-[a-z]|--[a-z-]+|[A-Z][A-Z0-9_]*(\.\.\.)?|\[[A-Z][A-Z0-9_]*(\.\.\.)?\])$`)

// TestUseLines: every verb's Use line is in the grammar positional reads, so its arguments
// are checked as its usage shows them.
func TestUseLines(t *testing.T) {
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, w := range strings.Fields(c.Use)[1:] {
			if !useWord.MatchString(w) {
				t.Errorf("%q: the Use line holds %q, which is neither an argument (NAME, NAME..., [NAME], [NAME...]) nor a flag", c.CommandPath(), w)
			}
		}
		if c.Args == nil {
			t.Errorf("%q has no argument check", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(e.rootCmd())
}

// TestChosenKeyError: a key the server refuses is explained as the server takes keys,
// under files/, never runs/ or sessions/ (which are the server's own).
func TestChosenKeyError(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	src := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(src, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"foo": "files/<name>", "files/a b": "files/<name>", "runs/x": "must start with files/"} {
		code, _, errOut := run(t, env, env.AdminToken, "", "files", "upload", src, "--key", key)
		if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "runs/<") || strings.Contains(errOut, "sessions/") {
			t.Errorf("--key %q: exit %d, stderr %q; want 1 and %q, without runs/<name> or sessions/", key, code, errOut, want)
		}
	}
}

// TestProgressFirstFrame: bytes that come right after the bar is made are not shown as a
// rate (their count over a few microseconds); the first rate is measured over at least
// progressEvery.
func TestProgressFirstFrame(t *testing.T) {
	var buf bytes.Buffer
	start := time.Now()
	bar := newProgress(&buf, 10<<20, "downloading")
	bar.Add(256 << 10)
	if strings.Contains(buf.String(), "/s") {
		t.Fatalf("the first frame shows a rate: %q", buf.String())
	}
	time.Sleep(progressEvery + 50*time.Millisecond)
	bar.Add(256 << 10)
	m := regexp.MustCompile(`([0-9.]+) (kB|MB|GB)/s`).FindAllStringSubmatch(buf.String(), -1)
	if len(m) == 0 {
		t.Fatalf("no rate after %s: %q", progressEvery, buf.String())
	}
	n, _ := strconv.ParseFloat(m[len(m)-1][1], 64)
	rate := n * map[string]float64{"kB": 1e3, "MB": 1e6, "GB": 1e9}[m[len(m)-1][2]]
	if most := float64(512<<10) / progressEvery.Seconds(); rate > most*1.05 {
		t.Errorf("the rate shown is %s/s, more than %.0f bytes over %s allow (elapsed %s)", m[len(m)-1][1]+" "+m[len(m)-1][2], float64(512<<10), progressEvery, time.Since(start))
	}
}

// TestExitCodeOf: the classification behind the exit codes of docs/cli.md, for the
// answers a test cannot easily make a real server give (a 500, a 503, a cut connection).
func TestExitCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"a plain failure", errors.New("x"), exitFailure},
		{"forbidden", &client.Error{Status: 403, ErrorInfo: wire.ErrorInfo{Code: "forbidden"}}, exitFailure},
		{"invalid", &client.Error{Status: 400, ErrorInfo: wire.ErrorInfo{Code: "invalid_request"}}, exitFailure},
		{"conflict", &client.Error{Status: 409, ErrorInfo: wire.ErrorInfo{Code: "conflict"}}, exitFailure},
		{"quota", &client.Error{Status: 507, ErrorInfo: wire.ErrorInfo{Code: "quota_exceeded"}}, exitFailure},
		{"not found", &client.Error{Status: 404, ErrorInfo: wire.ErrorInfo{Code: "not_found"}}, exitNotFound},
		{"not found in an exec stream", &client.Error{Status: 200, ErrorInfo: wire.ErrorInfo{Code: "not_found"}}, exitNotFound},
		{"a 404 without a body", &client.Error{Status: 404}, exitNotFound},
		{"internal", &client.Error{Status: 500, ErrorInfo: wire.ErrorInfo{Code: "internal"}}, exitUnavailable},
		{"unavailable", &client.Error{Status: 503, ErrorInfo: wire.ErrorInfo{Code: "unavailable"}}, exitUnavailable},
		{"a bad gateway", &client.Error{Status: 502}, exitUnavailable},
		{"an internal error in an exec stream", &client.Error{Status: 200, ErrorInfo: wire.ErrorInfo{Code: "internal"}}, exitUnavailable},
		{"unreachable", &client.UnreachableError{Server: "http://x", Err: errors.New("refused")}, exitUnavailable},
		{"a cut connection", fmt.Errorf("downloading: %w", &net.OpError{Op: "read", Err: errors.New("reset")}), exitUnavailable},
		{"a short body", fmt.Errorf("downloading: %w", io.ErrUnexpectedEOF), exitUnavailable},
		{"a local file", &fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, exitFailure},
		{"usage", usageError{msg: "x"}, exitUsage},
		{"the command's code", exitError{code: 42}, 42},
		{"a failed run", exitError{code: 1, err: &client.Error{Status: 404}}, 1},
	}
	for _, tc := range tests {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.want)
		}
	}
}
