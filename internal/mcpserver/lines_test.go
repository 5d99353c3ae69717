package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// rawMCP is a `skrip mcp` process driven line by line, as a hand-written client would.
type rawMCP struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan string
	cmd    *exec.Cmd
	stderr *testutil.LockedBuffer
}

func startRaw(t *testing.T, bin, server, token string) *rawMCP {
	t.Helper()
	r := &rawMCP{t: t, lines: make(chan string, 16), stderr: &testutil.LockedBuffer{}}
	r.cmd = exec.Command(bin, "mcp", "--server", server, "--token", token)
	r.cmd.Stderr = r.stderr
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	return r
}

func (r *rawMCP) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("writing %.60q: %v (the process ended? stderr: %s)", line, err, r.stderr)
	}
}

// reply is one JSON-RPC response as the process wrote it.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result map[string]any  `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r *rawMCP) next(what string) reply {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("%s: skrip mcp ended instead of answering (stderr: %s)", what, r.stderr)
		}
		var rep reply
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			r.t.Fatalf("%s: the answer %q is not JSON: %v", what, line, err)
		}
		return rep
	case <-time.After(30 * time.Second):
		r.t.Fatalf("%s: no answer within 30s (stderr: %s)", what, r.stderr)
	}
	return reply{}
}

func initialize(id int, version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, id, version)
}

// TestMCPSurvivesBadLines sends `skrip mcp` lines that are not JSON-RPC messages, between
// valid ones: each gets its JSON-RPC error (-32700 for bad JSON, -32600 for the rest)
// with the request's id when it has one, and the session goes on to a real tool call.
func TestMCPSurvivesBadLines(t *testing.T) {
	env := startServer(t)
	bin := testutil.BuildSkrip(t)
	r := startRaw(t, bin, env.URL, env.AdminToken)

	bad := []struct {
		name, line string
		code       int
		id         string
	}{
		{"not JSON", `not json`, -32700, "null"},
		{"cut-off JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "null"},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"method":"ping"} and more`, -32700, "null"},
		{"JSON but not JSON-RPC", `{"a":1}`, -32600, "null"},
		{"a number", `5`, -32600, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600, "null"},
		{"empty batch", `[]`, -32600, "null"},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, "7"},
		{"object id", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, "null"},
		{"method not a string", `{"jsonrpc":"2.0","id":"m","method":5}`, -32600, `"m"`},
		{"no method, no id", `{"jsonrpc":"2.0","result":{}}`, -32600, "null"},
		{"over-long line", `"` + strings.Repeat("x", mcp.DefaultMaxLineLength) + `"`, -32600, "null"},
	}
	check := func(i int) {
		b := bad[i]
		r.send(b.line)
		rep := r.next(b.name)
		if rep.Error == nil || rep.Error.Code != b.code || string(rep.ID) != b.id {
			t.Errorf("%s: answer %+v (id %s), want error %d with id %s", b.name, rep.Error, rep.ID, b.code, b.id)
		}
	}
	// Before the session is initialized, and after.
	for i := range bad[:6] {
		check(i)
	}
	r.send(initialize(1, "1999-01-01"))
	if rep := r.next("initialize"); rep.Error != nil || rep.Result["protocolVersion"] == "1999-01-01" ||
		!slices.Contains(mcp.SupportedProtocolVersions(), fmt.Sprint(rep.Result["protocolVersion"])) {
		t.Errorf("initialize with 1999-01-01: %+v, want a result with a version the server supports", rep)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := range bad[6:] {
		check(6 + i)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"files_list","arguments":{}}}`)
	rep := r.next("files_list")
	if rep.Error != nil || rep.Result["isError"] == true || string(rep.ID) != "2" {
		t.Errorf("files_list after the bad lines: %+v, want its result", rep)
	}
	r.stdin.Close()
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("skrip mcp ended with %v when its input ended, want exit 0 (stderr: %s)", err, r.stderr)
	}
}

// TestMCPProtocolVersion checks what `skrip mcp` answers to initialize: the client's
// version when it supports it, else one it supports, never the unsupported one.
func TestMCPProtocolVersion(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	supported := mcp.SupportedProtocolVersions()
	for _, asked := range []string{"1999-01-01", "2099-12-31", "", "latest", "2025-06-18", "2025-03-26", "2024-11-05"} {
		t.Run(asked, func(t *testing.T) {
			r := startRaw(t, bin, "http://127.0.0.1:1", "skr_unused")
			r.send(initialize(1, asked))
			rep := r.next("initialize")
			got := fmt.Sprint(rep.Result["protocolVersion"])
			switch {
			case rep.Error != nil:
				t.Fatalf("initialize with %q: error %+v, want a result", asked, rep.Error)
			case !slices.Contains(supported, got):
				t.Errorf("initialize with %q answered %q, which the server does not support (%v)", asked, got, supported)
			case slices.Contains(supported, asked) && got != asked:
				t.Errorf("initialize with the supported %q answered %q, want the same", asked, got)
			}
		})
	}
}

// TestMCPAnswersBeforeEOF pipes requests into `skrip mcp` and closes its input at once,
// as `printf … | skrip mcp` does: every call read before the end is answered before the
// process exits, the garbage line included.
func TestMCPAnswersBeforeEOF(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	r := startRaw(t, bin, "http://127.0.0.1:1", "skr_unused")
	r.send("garbage")
	r.send(initialize(1, "1999-01-01"))
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	r.stdin.Close()
	got := map[string]bool{}
	for range 3 {
		rep := r.next("an answer before the end of the input")
		got[string(rep.ID)] = rep.Error == nil || string(rep.ID) == "null"
	}
	if !got["null"] || !got["1"] || !got["2"] {
		t.Fatalf("answers by id: %v; want the parse error (null), initialize (1) and tools/list (2)", got)
	}
	if err := r.cmd.Wait(); err != nil {
		t.Errorf("skrip mcp exited with %v after its input ended (stderr: %s)", err, r.stderr)
	}
}
