package runnertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/runner"
)

// NewBox creates a persistent sandbox with the suite's limits and a workspace of quota
// bytes on r, removed when the test ends.
func NewBox(t *testing.T, r runner.Sandboxes, quota int64) string {
	t.Helper()
	id := ids.New("sbt")
	l := Limits()
	l.WallTime, l.OutputBytes = 0, 0
	if err := r.CreateBox(context.Background(), runner.BoxSpec{ID: id, OwnerID: "u_test", Limits: l, WorkspaceBytes: quota}); err != nil {
		t.Fatalf("CreateBox: %v", err)
	}
	t.Cleanup(func() {
		if err := r.RemoveBox(context.Background(), id); err != nil {
			t.Errorf("RemoveBox: %v", err)
		}
	})
	return id
}

// Sh runs a shell command in box id with the suite's log limit and timeout.
func Sh(t *testing.T, r runner.Sandboxes, id, script string) runner.ExecResult {
	t.Helper()
	res, err := r.Exec(context.Background(), id, runner.ExecSpec{Cmd: []string{"sh", "-c", script}, Timeout: 20 * time.Second, LogBytes: 64 << 10})
	if err != nil {
		t.Fatalf("Exec %q: %v", script, err)
	}
	return res
}

func readAll(t *testing.T, r runner.Sandboxes, id, p string) (string, error) {
	t.Helper()
	rc, size, err := r.ReadFile(context.Background(), id, p)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return "", err
	}
	if int64(len(b)) != size {
		t.Errorf("ReadFile(%s) gave %d bytes, said %d", p, len(b), size)
	}
	return string(b), nil
}

// RunSandboxes runs the persistent sandbox cases against the boxes newBoxes makes.
func RunSandboxes(t *testing.T, newBoxes func(t *testing.T) runner.Sandboxes) {
	r := newBoxes(t)
	t.Run("persistence", func(t *testing.T) { testBoxPersistence(t, r) })
	t.Run("exec io", func(t *testing.T) { testBoxExecIO(t, r) })
	t.Run("command not found", func(t *testing.T) { testBoxCommandNotFound(t, r) })
	t.Run("output cap", func(t *testing.T) { testBoxOutputCap(t, r) })
	t.Run("timeout kills the tree", func(t *testing.T) { testBoxTimeout(t, r) })
	t.Run("network", func(t *testing.T) { testBoxNetwork(t, r) })
	t.Run("host uid", func(t *testing.T) { testBoxHostUID(t, r) })
	t.Run("system calls", func(t *testing.T) { testBoxSyscalls(t, r) })
	t.Run("files", func(t *testing.T) { testBoxFiles(t, r) })
	t.Run("confinement", func(t *testing.T) { testBoxConfinement(t, r) })
	t.Run("quota", func(t *testing.T) { testBoxQuota(t, r) })
	t.Run("failed write", func(t *testing.T) { testBoxFailedWrite(t, r) })
	t.Run("memory", func(t *testing.T) { testBoxMemory(t, r) })
	t.Run("signals", func(t *testing.T) { testBoxSignals(t, r) })
	t.Run("remove", func(t *testing.T) { testBoxRemove(t, r) })
}

func testBoxPersistence(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	if res := Sh(t, r, id, "pwd; mkdir -p out && echo hi > out/a.txt; echo tmp > /tmp/t"); res.ExitCode != 0 || string(res.Stdout) != "/workspace\n" {
		t.Fatalf("first exec: %+v", res)
	}
	res := Sh(t, r, id, "cat out/a.txt; test -e /tmp/t && echo tmp-kept || echo tmp-fresh")
	if res.ExitCode != 0 || string(res.Stdout) != "hi\ntmp-fresh\n" {
		t.Fatalf("second exec: exit %d, stdout %q, stderr %q; want the workspace kept and /tmp fresh", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func testBoxExecIO(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	var mu sync.Mutex
	var lines []string
	res, err := r.Exec(context.Background(), id, runner.ExecSpec{Cmd: []string{"sh", "-c", "cat; echo; echo oops >&2; exit 7"},
		Stdin: []byte("from stdin"), Timeout: 20 * time.Second, LogBytes: 1 << 10,
		OnLine: func(stream string, line []byte) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, stream+":"+string(line))
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 || string(res.Stdout) != "from stdin\n" || string(res.Stderr) != "oops\n" || res.TimedOut {
		t.Fatalf("got exit %d stdout %q stderr %q timed out %v", res.ExitCode, res.Stdout, res.Stderr, res.TimedOut)
	}
	if !contains(lines, "stdout:from stdin") || !contains(lines, "stderr:oops") {
		t.Errorf("streamed lines %q", lines)
	}
	// An argument array is passed as is: no shell splits or expands it.
	res, err = r.Exec(context.Background(), id, runner.ExecSpec{Cmd: []string{"printf", "%s|", "a b", "$HOME", "*"}, Timeout: 20 * time.Second, LogBytes: 1 << 10})
	if err != nil || string(res.Stdout) != "a b|$HOME|*|" {
		t.Errorf("argv: %q %v", res.Stdout, err)
	}
	res, err = r.Exec(context.Background(), id, runner.ExecSpec{Cmd: []string{"no-such-program-here"}, Timeout: 20 * time.Second, LogBytes: 1 << 10})
	if err != nil || res.ExitCode == 0 {
		t.Errorf("a missing program: exit %d, err %v; want a non-zero exit, not an error", res.ExitCode, err)
	}
}

// testBoxCommandNotFound: a command that is not there, or cannot be run, ends as a shell
// ends it, on every runner alike, and nothing of the runner (bwrap's execvp, timeout(1),
// the OCI runtime) shows.
func testBoxCommandNotFound(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	if res := Sh(t, r, id, `echo 'echo ran' > plain.sh && mkdir folder && printf '#!/bin/sh\necho ran "$@"\n' > run.sh && chmod +x run.sh`); res.ExitCode != 0 {
		t.Fatalf("setting up: %s", res.Stderr)
	}
	tests := []struct {
		cmd    []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"no-such-program-here", "-x"}, 127, "", "no-such-program-here: command not found\n"},
		{[]string{"./no-such-file"}, 127, "", "./no-such-file: command not found\n"},
		{[]string{"/usr/bin/no-such-program"}, 127, "", "/usr/bin/no-such-program: command not found\n"},
		{[]string{""}, 127, "", ": command not found\n"},
		{[]string{"./plain.sh"}, 126, "", "./plain.sh: Permission denied\n"},
		{[]string{"folder"}, 127, "", "folder: command not found\n"},
		{[]string{"./folder"}, 126, "", "./folder: Is a directory\n"},
		// What is there still runs, as itself, with its arguments as given.
		{[]string{"./run.sh", "a b", "-c"}, 0, "ran a b -c\n", ""},
		{[]string{"sh", "-c", "exit 42"}, 42, "", ""},
		{[]string{"printf", "%s", "$PATH"}, 0, "$PATH", ""},
	}
	for _, tc := range tests {
		res, err := r.Exec(context.Background(), id, runner.ExecSpec{Cmd: tc.cmd, Timeout: 20 * time.Second, LogBytes: 1 << 10})
		if err != nil {
			t.Errorf("%q: %v; want an exit, not an error", tc.cmd, err)
			continue
		}
		if res.ExitCode != tc.code || string(res.Stdout) != tc.stdout || string(res.Stderr) != tc.stderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.cmd, res.ExitCode, res.Stdout, res.Stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func testBoxOutputCap(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	res, err := r.Exec(context.Background(), id, runner.ExecSpec{Cmd: []string{"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a; echo done >&2"},
		Timeout: 20 * time.Second, LogBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != 1000 || !res.StdoutTruncated || res.StderrTruncated || string(res.Stderr) != "done\n" {
		t.Fatalf("kept %d bytes of stdout (truncated %v), stderr %q (truncated %v)", len(res.Stdout), res.StdoutTruncated, res.Stderr, res.StderrTruncated)
	}
}

// testBoxTimeout leaves a detached process (its own session, so not in the command's
// process group) that would write a file after the timeout: it must die with the exec.
func testBoxTimeout(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	start := time.Now()
	res, err := r.Exec(context.Background(), id, runner.ExecSpec{
		Cmd:     []string{"sh", "-c", `setsid sh -c 'sleep 3; echo late > late.txt' </dev/null >/dev/null 2>&1 & echo started; sleep 100`},
		Timeout: time.Second, LogBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode == 0 || string(res.Stdout) != "started\n" {
		t.Fatalf("got %+v; want timed out with its output so far", res)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the exec took %s to end after a 1s timeout", d)
	}
	// A command that kills what supervises it (its parent's parent, whatever that is
	// on this runner) and leaves a detached process must not outlive the exec either.
	res, err = r.Exec(context.Background(), id, runner.ExecSpec{
		Cmd: []string{"sh", "-c", `setsid sh -c 'sleep 3; echo late > late2.txt' </dev/null >/dev/null 2>&1 &
w=$(cut -d' ' -f4 /proc/$PPID/stat); kill -9 $w $PPID 2>/dev/null; echo forged >&2; exit 0`},
		Timeout: 20 * time.Second, LogBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)
	if res := Sh(t, r, id, "ls"); strings.Contains(string(res.Stdout), "late") {
		t.Errorf("a process a finished exec started lived on: %q", res.Stdout)
	}
}

func testBoxNetwork(t *testing.T, r runner.Sandboxes) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	id := NewBox(t, r, 16<<20)
	port := ln.Addr().(*net.TCPAddr).Port
	res := Sh(t, r, id, fmt.Sprintf(`python3 -c '
import socket
try:
    socket.create_connection(("127.0.0.1", %d), timeout=2).close()
    print("connected")
except OSError as e:
    print(type(e).__name__)
'`, port))
	if out := strings.TrimSpace(string(res.Stdout)); out == "connected" || out == "" {
		t.Fatalf("a sandbox exec reached the host's loopback: %q %q", res.Stdout, res.Stderr)
	}
}

func testBoxFiles(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	ctx := context.Background()
	body := strings.Repeat("0123456789", 100000) // 1 MB
	n, err := r.WriteFile(ctx, id, "in/deep/data.txt", strings.NewReader(body))
	if err != nil || n != int64(len(body)) {
		t.Fatalf("WriteFile: %d, %v", n, err)
	}
	if res := Sh(t, r, id, "wc -c < in/deep/data.txt; sha256sum in/deep/data.txt | cut -c1-8; echo made > out.txt"); res.ExitCode != 0 ||
		!strings.HasPrefix(string(res.Stdout), "1000000\n") {
		t.Fatalf("the exec sees %q (%s)", res.Stdout, res.Stderr)
	}
	if got, err := readAll(t, r, id, "out.txt"); err != nil || got != "made\n" {
		t.Fatalf("ReadFile of a file an exec made: %q, %v", got, err)
	}
	if got, err := readAll(t, r, id, "in/deep/../deep/data.txt"); err == nil {
		t.Fatalf("a path with .. was read: %d bytes", len(got))
	}
	if got, err := readAll(t, r, id, "in//deep/./data.txt"); err != nil || got != body {
		t.Fatalf("a path with // and . segments: %d bytes, %v", len(got), err)
	}
	// What the server wrote, files and the directories it made for them, the sandbox may
	// change like its own.
	if res := Sh(t, r, id, "echo more >> in/deep/data.txt && touch in/deep/new && rm in/deep/new && mkdir in/deep/sub"); res.ExitCode != 0 {
		t.Fatalf("an exec changing what WriteFile made: exit %d, %s", res.ExitCode, res.Stderr)
	}
	// A new write replaces the file whole.
	if _, err := r.WriteFile(ctx, id, "in/deep/data.txt", strings.NewReader("short")); err != nil {
		t.Fatal(err)
	}
	if got, _ := readAll(t, r, id, "in/deep/data.txt"); got != "short" {
		t.Fatalf("after a replace: %q", got)
	}
	if _, _, err := r.ReadFile(ctx, id, "missing.txt"); !errors.Is(err, runner.ErrNoFile) {
		t.Errorf("a missing file: %v, want ErrNoFile", err)
	}
	if _, _, err := r.ReadFile(ctx, id, "in"); !errors.Is(err, runner.ErrPath) {
		t.Errorf("reading a directory: %v, want ErrPath", err)
	}
	if _, err := r.WriteFile(ctx, id, "in", strings.NewReader("x")); !errors.Is(err, runner.ErrPath) {
		t.Errorf("writing over a directory: %v, want ErrPath", err)
	}
	if _, err := r.WriteFile(ctx, id, "out.txt/inner", strings.NewReader("x")); !errors.Is(err, runner.ErrPath) {
		t.Errorf("writing under a file: %v, want ErrPath", err)
	}
	Sh(t, r, id, `mkfifo pipe && python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("sock")'`)
	for _, p := range []string{"pipe", "sock"} {
		if _, _, err := r.ReadFile(ctx, id, p); !errors.Is(err, runner.ErrPath) {
			t.Errorf("reading %s: %v, want ErrPath (and no hang)", p, err)
		}
	}
	// A directory the sandbox locked is the caller's problem (or no problem, to a root
	// server), never the server's; the box can still be removed.
	Sh(t, r, id, "mkdir -p locked/in && echo x > locked/in/f && chmod 000 locked/in locked")
	if _, _, err := r.ReadFile(ctx, id, "locked/in/f"); err != nil && !errors.Is(err, runner.ErrPath) && !errors.Is(err, runner.ErrNoFile) {
		t.Errorf("reading from a locked directory: %v", err)
	}
	if _, err := r.WriteFile(ctx, id, "locked/in/g", strings.NewReader("x")); err != nil && !errors.Is(err, runner.ErrPath) {
		t.Errorf("writing into a locked directory: %v", err)
	}
}

// testBoxConfinement plants symlinks that lead out of the workspace, and some that stay
// inside: every path through the first kind is refused, reading and writing.
func testBoxConfinement(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	ctx := context.Background()
	if res := Sh(t, r, id, "echo inside > in.txt && mkdir d && ln -s /etc etc && ln -s ../.. up && ln -s /tmp/x tmpfile && "+
		"ln -s /workspace/in.txt abs && ln -s in.txt rel && ln -s d dir && ln -s /workspace/d absdir && ln -s /etc/passwd d/pw"); res.ExitCode != 0 {
		t.Fatalf("planting symlinks: %s", res.Stderr)
	}
	for _, p := range []string{"", "/etc/passwd", "/workspace/in.txt", "../x", "a/../../x", "d/..", "in\x00.txt", ".", "etc/passwd", "etc", "up/etc/passwd", "d/pw", "tmpfile", "dir/../up/x"} {
		if _, _, err := r.ReadFile(ctx, id, p); !errors.Is(err, runner.ErrPath) {
			t.Errorf("ReadFile(%q) = %v, want ErrPath", p, err)
		}
		if _, err := r.WriteFile(ctx, id, p, strings.NewReader("x")); !errors.Is(err, runner.ErrPath) {
			t.Errorf("WriteFile(%q) = %v, want ErrPath", p, err)
		}
	}
	for _, p := range []string{"abs", "rel", "in.txt"} {
		if got, err := readAll(t, r, id, p); err != nil || got != "inside\n" {
			t.Errorf("ReadFile(%q) through a link that stays inside: %q, %v", p, got, err)
		}
	}
	if _, err := r.WriteFile(ctx, id, "absdir/new.txt", strings.NewReader("through a link")); err != nil {
		t.Fatalf("writing through a link to a directory inside: %v", err)
	}
	if got, _ := readAll(t, r, id, "d/new.txt"); got != "through a link" {
		t.Errorf("d/new.txt = %q", got)
	}
	if res := Sh(t, r, id, "cat /tmp/x 2>/dev/null; ls /etc/skrip-escape 2>/dev/null; true"); len(res.Stdout) != 0 {
		t.Errorf("a refused write landed outside: %q", res.Stdout)
	}
}

func testBoxQuota(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 1<<20)
	ctx := context.Background()
	if _, err := r.WriteFile(ctx, id, "keep.txt", strings.NewReader("old")); err != nil {
		t.Fatal(err)
	}
	_, err := r.WriteFile(ctx, id, "keep.txt", bytes.NewReader(make([]byte, 2<<20)))
	if !errors.Is(err, runner.ErrNoSpace) {
		t.Fatalf("writing 2 MiB into a 1 MiB workspace: %v, want ErrNoSpace", err)
	}
	if got, _ := readAll(t, r, id, "keep.txt"); got != "old" {
		t.Errorf("the refused write changed keep.txt to %d bytes", len(got))
	}
	res := Sh(t, r, id, "head -c 2000000 /dev/zero > big 2>/dev/null; echo $?; ls -A")
	lines := strings.Fields(string(res.Stdout))
	if len(lines) == 0 || lines[0] == "0" {
		t.Errorf("an exec wrote 2 MB into a 1 MiB workspace: %q", res.Stdout)
	}
	for _, name := range lines[1:] {
		if strings.HasPrefix(name, ".skrip-partial") {
			t.Errorf("a refused write left %s behind", name)
		}
	}
}

// failing is a reader that fails after some bytes, like a client that hangs up.
type failing struct{ n int }

func (f *failing) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("client went away")
	}
	n := min(len(p), f.n)
	f.n -= n
	return n, nil
}

func testBoxFailedWrite(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	ctx := context.Background()
	if _, err := r.WriteFile(ctx, id, "doc.txt", strings.NewReader("version 1")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.WriteFile(ctx, id, "doc.txt", &failing{n: 100000}); err == nil {
		t.Fatal("a write whose body failed halfway succeeded")
	}
	if _, err := r.WriteFile(ctx, id, "new.txt", &failing{n: 1000}); err == nil {
		t.Fatal("a write whose body failed halfway succeeded")
	}
	if got, _ := readAll(t, r, id, "doc.txt"); got != "version 1" {
		t.Errorf("doc.txt is %d bytes after a failed write, want version 1", len(got))
	}
	if res := Sh(t, r, id, "ls -A"); string(res.Stdout) != "doc.txt\n" {
		t.Errorf("the workspace holds %q after failed writes, want only doc.txt", res.Stdout)
	}
}

func testBoxMemory(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	res := Sh(t, r, id, `python3 -c 'b = bytearray(1 << 30); print("allocated")'`)
	if res.ExitCode == 0 || strings.Contains(string(res.Stdout), "allocated") || res.TimedOut {
		t.Fatalf("1 GiB in a 256 MiB sandbox: %+v", res)
	}
	if res := Sh(t, r, id, "echo still here"); string(res.Stdout) != "still here\n" {
		t.Errorf("the sandbox did not survive its exec's memory kill: %+v", res)
	}
}

// testBoxSignals: an exec that signals every process it can see, pid 1 first, ends
// itself at most; the sandbox and its workspace stay.
func testBoxSignals(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	Sh(t, r, id, "echo kept > a.txt")
	for _, sig := range []string{"TERM", "INT", "HUP", "KILL"} {
		Sh(t, r, id, "kill -"+sig+" 1; kill -"+sig+" -1; sleep 0.2")
	}
	if res := Sh(t, r, id, "cat a.txt"); string(res.Stdout) != "kept\n" {
		t.Errorf("after signalling pid 1 and everything: %+v", res)
	}
}

func testBoxRemove(t *testing.T, r runner.Sandboxes) {
	ctx := context.Background()
	id := NewBox(t, r, 16<<20)
	have, err := r.Boxes(ctx)
	if err != nil || !contains(have, id) {
		t.Fatalf("Boxes = %v, %v; want %s in it", have, err, id)
	}
	if err := r.RemoveBox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Exec(ctx, id, runner.ExecSpec{Cmd: []string{"true"}, Timeout: time.Second}); !errors.Is(err, runner.ErrNoBox) {
		t.Errorf("Exec in a removed box: %v, want ErrNoBox", err)
	}
	if _, _, err := r.ReadFile(ctx, id, "x"); !errors.Is(err, runner.ErrNoBox) {
		t.Errorf("ReadFile in a removed box: %v, want ErrNoBox", err)
	}
	if have, _ := r.Boxes(ctx); contains(have, id) {
		t.Errorf("Boxes still lists %s", id)
	}
}
