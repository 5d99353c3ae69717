package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/mcpserver"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// inputs are the input fields each tool must offer, and which of them are required.
var inputs = map[string]struct{ fields, required []string }{
	"sandbox_create":       {[]string{"idle_timeout", "memory_bytes", "workspace_bytes"}, nil},
	"sandbox_exec":         {[]string{"sandbox_id", "cmd", "timeout_s", "stdin"}, []string{"sandbox_id", "cmd"}},
	"sandbox_fs_read":      {[]string{"sandbox_id", "path"}, []string{"sandbox_id", "path"}},
	"sandbox_fs_write":     {[]string{"sandbox_id", "path", "content"}, []string{"sandbox_id", "path", "content"}},
	"sandbox_stage_file":   {[]string{"sandbox_id", "file_key", "destination"}, []string{"sandbox_id", "file_key", "destination"}},
	"sandbox_publish_file": {[]string{"sandbox_id", "source", "file_key"}, []string{"sandbox_id", "source"}},
	"files_list":           {[]string{"prefix"}, nil},
	"files_share":          {[]string{"file_key", "ttl", "max_downloads"}, []string{"file_key", "ttl"}},
	"sandbox_list":         {nil, nil},
	"sandbox_delete":       {[]string{"sandbox_id"}, []string{"sandbox_id"}},
	"tools_list":           {[]string{"query"}, nil},
	"tool_run":             {[]string{"tool", "inputs", "file_keys", "wait_s"}, []string{"tool"}},
	"run_action":           {[]string{"run_id", "action_id", "input", "expected_state_rev", "wait_s"}, []string{"run_id", "action_id", "expected_state_rev"}},
	"run_get":              {[]string{"run_id", "wait_s", "stage_artifacts"}, []string{"run_id"}},
}

const csvIn = "name,qty\napple,3\npear,5\n"

// transform doubles the qty column of input/data.csv into output/result.csv.
const transform = `import csv, os
os.makedirs("output", exist_ok=True)
with open("input/data.csv", newline="") as f, open("output/result.csv", "w", newline="") as g:
    r, w = csv.reader(f), csv.writer(g, lineterminator="\n")
    w.writerow(next(r) + ["double"])
    for row in r:
        w.writerow(row + [str(2 * int(row[1]))])
print("rows done")
`

const csvOut = "name,qty,double\napple,3,6\npear,5,10\n"

// startServer runs a skrip server whose sandboxes are destroyed before its data dir goes.
func startServer(t *testing.T) *apptest.Env {
	env := apptest.New(t, apptest.Backends[0])
	t.Cleanup(func() { env.App.Sandboxes.DestroyAll(context.Background()) })
	return env
}

// connect runs `skrip mcp` against env with token and returns an MCP client session on
// it, and the process's stderr (to read once the session is closed).
func connect(t *testing.T, ctx context.Context, bin string, env *apptest.Env, token string) (*mcp.ClientSession, *testutil.LockedBuffer) {
	t.Helper()
	stderr := &testutil.LockedBuffer{}
	cmd := exec.Command(bin, "mcp", "--server", env.URL, "--token", token)
	cmd.Stderr = stderr
	cl := mcp.NewClient(&mcp.Implementation{Name: "skrip-test", Version: "v0"}, nil)
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to skrip mcp: %v (stderr: %s)", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

// call calls a tool that must succeed and decodes its structured output into out. It
// checks that the text content is the same JSON.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(res))
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: no structuredContent; content: %s", name, text(res))
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("%s: the text content is not the output as JSON: %v: %s", name, err, text(res))
	}
	json.Unmarshal(structured, &fromStructured)
	if a, b := mustJSON(t, fromText), mustJSON(t, fromStructured); a != b {
		t.Errorf("%s: text content %s differs from structuredContent %s", name, a, b)
	}
	if err := json.Unmarshal(structured, out); err != nil {
		t.Fatalf("%s: decoding %s: %v", name, structured, err)
	}
}

// callErr calls a tool that must fail as a tool (not with a protocol error) and returns
// the error's text.
func callErr(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: got a protocol error, want a tool error: %v", name, err)
	}
	if !res.IsError {
		t.Fatalf("%s: succeeded, want a tool error; content: %s", name, text(res))
	}
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMCPSession is the acceptance test: an MCP client session, with the SDK's
// client over stdio with a real `skrip mcp` process, lists the eight tools, then creates a
// sandbox, stages a file in, transforms it and publishes the result.
func TestMCPSession(t *testing.T) {
	env := startServer(t)
	bin := testutil.BuildSkrip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	staged, err := env.Admin.Upload(ctx, "data.csv", strings.NewReader(csvIn), client.UploadOptions{Key: "files/inbox/data.csv"})
	if err != nil {
		t.Fatal(err)
	}
	cs, stderr := connect(t, ctx, bin, env, env.AdminToken)

	if init := cs.InitializeResult(); init.ServerInfo.Name != "skrip" || !strings.Contains(init.Instructions, "sandbox_stage_file") {
		t.Errorf("server info %+v, instructions %q: want skrip, with instructions naming the tools", init.ServerInfo, init.Instructions)
	}

	t.Run("tools", func(t *testing.T) {
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
			want, ok := inputs[tool.Name]
			if !ok {
				t.Errorf("unexpected tool %q", tool.Name)
				continue
			}
			if len(tool.Description) < 200 {
				t.Errorf("%s: description %q is too thin for an agent to act on", tool.Name, tool.Description)
			}
			var schema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			if err := json.Unmarshal([]byte(mustJSON(t, tool.InputSchema)), &schema); err != nil || schema.Type != "object" {
				t.Errorf("%s: input schema %s is not an object schema (%v)", tool.Name, mustJSON(t, tool.InputSchema), err)
				continue
			}
			var fields []string
			for f, p := range schema.Properties {
				fields = append(fields, f)
				if !strings.Contains(string(p), `"description"`) {
					t.Errorf("%s.%s has no description", tool.Name, f)
				}
			}
			slices.Sort(fields)
			slices.Sort(schema.Required)
			if wantFields := slices.Sorted(slices.Values(want.fields)); !slices.Equal(fields, wantFields) {
				t.Errorf("%s: input fields %v, want %v", tool.Name, fields, wantFields)
			}
			if wantReq := slices.Sorted(slices.Values(want.required)); !slices.Equal(schema.Required, wantReq) {
				t.Errorf("%s: required %v, want %v", tool.Name, schema.Required, wantReq)
			}
			if tool.OutputSchema == nil {
				t.Errorf("%s: no output schema", tool.Name)
			}
		}
		slices.Sort(names)
		if want := slices.Sorted(maps.Keys(inputs)); !slices.Equal(names, want) {
			t.Errorf("tools %v, want exactly %v", names, want)
		}
	})

	var listed struct {
		Files []client.FileInfo `json:"files"`
		Count int               `json:"count"`
	}
	call(t, ctx, cs, "files_list", map[string]any{"prefix": "files/inbox/"}, &listed)
	if listed.Count != 1 || len(listed.Files) != 1 || listed.Files[0].FileKey != staged.FileKey || listed.Files[0].SizeBytes != int64(len(csvIn)) {
		t.Errorf("files_list files/inbox/ = %+v, want just %s", listed, staged.FileKey)
	}

	var shared client.FileLink
	call(t, ctx, cs, "files_share", map[string]any{"file_key": staged.FileKey, "ttl": "1h", "max_downloads": 1}, &shared)
	if resp, err := http.Get(shared.URL); err != nil {
		t.Errorf("files_share gave %+v; GET: %v", shared, err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != csvIn || shared.MaxDownloads == nil || *shared.MaxDownloads != 1 {
			t.Errorf("files_share gave %+v; GET answered %d %q", shared, resp.StatusCode, b)
		}
	}

	var sb client.Sandbox
	call(t, ctx, cs, "sandbox_create", map[string]any{"idle_timeout": "30m"}, &sb)
	if !strings.HasPrefix(sb.SandboxID, "sb_") || sb.Runner != "bwrap" || sb.IdleTimeoutS != 1800 || !sb.ExpiresAt.After(time.Now()) {
		t.Fatalf("sandbox_create = %+v, want an sb_ id on bwrap with a 30m idle timeout", sb)
	}

	var st client.Staged
	call(t, ctx, cs, "sandbox_stage_file", map[string]any{"sandbox_id": sb.SandboxID, "file_key": staged.FileKey, "destination": "input/data.csv"}, &st)
	if !st.OK || st.Path != "input/data.csv" || st.SizeBytes != int64(len(csvIn)) || st.Checksum != staged.Checksum {
		t.Errorf("sandbox_stage_file = %+v, want input/data.csv, %d bytes, %s", st, len(csvIn), staged.Checksum)
	}

	var run client.ExecResult
	call(t, ctx, cs, "sandbox_exec", map[string]any{"sandbox_id": sb.SandboxID, "cmd": []string{"python3", "-c", transform}, "timeout_s": 60}, &run)
	if run.ExitCode != 0 || run.Stdout != "rows done\n" || run.TimedOut || run.OOMKilled {
		t.Fatalf("sandbox_exec = %+v, want exit 0 printing \"rows done\"", run)
	}

	var pub client.Published
	call(t, ctx, cs, "sandbox_publish_file", map[string]any{"sandbox_id": sb.SandboxID, "source": "output/result.csv", "file_key": "files/reports/result.csv"}, &pub)
	if !pub.OK || pub.FileKey != "files/reports/result.csv" || pub.SizeBytes != int64(len(csvOut)) || !strings.HasPrefix(pub.Checksum, "sha256:") {
		t.Errorf("sandbox_publish_file = %+v, want files/reports/result.csv of %d bytes", pub, len(csvOut))
	}
	var got bytes.Buffer
	if _, err := env.Admin.Download(ctx, pub.FileKey, func(client.FileInfo) (io.Writer, error) { return &got, nil }); err != nil {
		t.Fatal(err)
	}
	if got.String() != csvOut {
		t.Errorf("published file = %q, want %q", got.String(), csvOut)
	}

	t.Run("exec", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args map[string]any
			want client.ExecResult
		}{
			{"stdin", map[string]any{"cmd": []string{"wc", "-l"}, "stdin": "a\nb\nc\n"}, client.ExecResult{Stdout: "3\n"}},
			{"failing command is a result", map[string]any{"cmd": []string{"sh", "-c", "echo oops >&2; exit 3"}}, client.ExecResult{ExitCode: 3, Stderr: "oops\n"}},
			{"workspace persists", map[string]any{"cmd": []string{"cat", "input/data.csv"}}, client.ExecResult{Stdout: csvIn}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.args["sandbox_id"] = sb.SandboxID
				var res client.ExecResult
				call(t, ctx, cs, "sandbox_exec", tc.args, &res)
				if res.ExitCode != tc.want.ExitCode || strings.TrimSpace(res.Stdout) != strings.TrimSpace(tc.want.Stdout) || res.Stderr != tc.want.Stderr {
					t.Errorf("got %+v, want %+v", res, tc.want)
				}
			})
		}
	})

	t.Run("write then read", func(t *testing.T) {
		content := "print('héllo')\n"
		var w client.Written
		call(t, ctx, cs, "sandbox_fs_write", map[string]any{"sandbox_id": sb.SandboxID, "path": "scripts/hello.py", "content": content}, &w)
		if !w.OK || w.Path != "scripts/hello.py" || w.SizeBytes != int64(len(content)) {
			t.Errorf("sandbox_fs_write = %+v, want scripts/hello.py of %d bytes", w, len(content))
		}
		var r struct {
			Path      string `json:"path"`
			SizeBytes int64  `json:"size_bytes"`
			Content   string `json:"content"`
		}
		call(t, ctx, cs, "sandbox_fs_read", map[string]any{"sandbox_id": sb.SandboxID, "path": "scripts/hello.py"}, &r)
		if r.Content != content || r.SizeBytes != int64(len(content)) || r.Path != "scripts/hello.py" {
			t.Errorf("sandbox_fs_read = %+v, want %q", r, content)
		}
		var run client.ExecResult
		call(t, ctx, cs, "sandbox_exec", map[string]any{"sandbox_id": sb.SandboxID, "cmd": []string{"python3", "scripts/hello.py"}}, &run)
		if run.ExitCode != 0 || run.Stdout != "héllo\n" {
			t.Errorf("running the written script = %+v", run)
		}
	})

	// Files sandbox_fs_read must refuse whole, never cut: one just over the cap, one
	// that is not UTF-8.
	var made client.ExecResult
	call(t, ctx, cs, "sandbox_exec", map[string]any{"sandbox_id": sb.SandboxID, "cmd": []string{"python3", "-c",
		"open('big.txt','w').write('x'*(256*1024+1)); open('blob.bin','wb').write(b'\\xff\\xfe\\x00ok')"}}, &made)
	if made.ExitCode != 0 {
		t.Fatalf("making test files: %+v", made)
	}

	t.Run("tool errors", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			tool string
			args map[string]any
			want []string // in the error's text
		}{
			{"read with ..", "sandbox_fs_read", map[string]any{"sandbox_id": sb.SandboxID, "path": "../etc/passwd"}, []string{"..", "relative to /workspace"}},
			{"read absolute", "sandbox_fs_read", map[string]any{"sandbox_id": sb.SandboxID, "path": "/etc/passwd"}, []string{"relative to /workspace"}},
			{"write with ..", "sandbox_fs_write", map[string]any{"sandbox_id": sb.SandboxID, "path": "a/../../x", "content": "x"}, []string{"..", "relative to /workspace"}},
			{"stage to an absolute path", "sandbox_stage_file", map[string]any{"sandbox_id": sb.SandboxID, "file_key": staged.FileKey, "destination": "/etc/x.csv"}, []string{"/etc/x.csv"}},
			{"publish from ..", "sandbox_publish_file", map[string]any{"sandbox_id": sb.SandboxID, "source": "../x.csv"}, []string{"../x.csv"}},
			{"read over the cap", "sandbox_fs_read", map[string]any{"sandbox_id": sb.SandboxID, "path": "big.txt"}, []string{"262145 bytes", "not read", "sandbox_publish_file"}},
			{"read binary", "sandbox_fs_read", map[string]any{"sandbox_id": sb.SandboxID, "path": "blob.bin"}, []string{"not UTF-8", "sandbox_publish_file"}},
			{"read missing", "sandbox_fs_read", map[string]any{"sandbox_id": sb.SandboxID, "path": "nope.txt"}, []string{"nope.txt"}},
			{"exec in unknown sandbox", "sandbox_exec", map[string]any{"sandbox_id": "sb_unknown", "cmd": []string{"true"}}, []string{"sandbox not found: sb_unknown", "sandbox_create"}},
			{"exec of an empty cmd", "sandbox_exec", map[string]any{"sandbox_id": sb.SandboxID, "cmd": []string{}}, []string{"cmd"}},
			{"exec without cmd", "sandbox_exec", map[string]any{"sandbox_id": sb.SandboxID}, []string{"cmd"}},
			{"stage unknown key", "sandbox_stage_file", map[string]any{"sandbox_id": sb.SandboxID, "file_key": "files/inbox/missing.csv", "destination": "x.csv"}, []string{"not found"}},
			{"publish missing source", "sandbox_publish_file", map[string]any{"sandbox_id": sb.SandboxID, "source": "output/none.csv"}, []string{"output/none.csv"}},
			{"create with a bad idle_timeout", "sandbox_create", map[string]any{"idle_timeout": "soon"}, []string{"idle_timeout"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				msg := callErr(t, ctx, cs, tc.tool, tc.args)
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not say %q", msg, w)
					}
				}
			})
		}
	})

	if err := cs.Close(); err != nil {
		t.Errorf("closing the session: %v", err)
	}
	if stderr.Len() != 0 {
		t.Errorf("skrip mcp wrote to stderr with a working server and token: %s", stderr)
	}
}

// TestMCPBadToken checks that a wrong token shows on stderr at start and comes back from
// every tool as a tool error the agent can read.
func TestMCPBadToken(t *testing.T) {
	env := startServer(t)
	bin := testutil.BuildSkrip(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, stderr := connect(t, ctx, bin, env, "skr_not-a-token")
	msg := callErr(t, ctx, cs, "sandbox_create", map[string]any{})
	if msg == "" {
		t.Error("sandbox_create with a bad token: empty error")
	}
	if err := cs.Close(); err != nil {
		t.Errorf("closing the session: %v", err)
	}
	if !strings.Contains(stderr.String(), "skrip mcp: warning:") || !strings.Contains(stderr.String(), msg) {
		t.Errorf("stderr %q does not warn with %q", stderr, msg)
	}
}

// TestServeInProcess runs Serve on pipes, as the CLI does on stdin and stdout, and checks
// that it ends cleanly when its input ends.
func TestServeInProcess(t *testing.T) {
	env := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- mcpserver.Serve(ctx, env.Admin, "test", inR, outW)
		outW.Close()
	}()
	cl := mcp.NewClient(&mcp.Implementation{Name: "skrip-test", Version: "v0"}, nil)
	cs, err := cl.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := cs.InitializeResult().ServerInfo.Version; v != "test" {
		t.Errorf("server version %q, want test", v)
	}
	var listed struct {
		Files []client.FileInfo `json:"files"`
		Count int               `json:"count"`
	}
	call(t, ctx, cs, "files_list", nil, &listed)
	if listed.Count != 0 || listed.Files == nil {
		t.Errorf("files_list on an empty server = %+v, want an empty list", listed)
	}
	cs.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve ended with %v, want nil when its input ends", err)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not end when its input ended")
	}
}

// counter counts the rows of its CSV file, remembers a count in its state, writes
// output/summary.txt and offers "add", which adds steg to the count.
const counter = `import csv, json, os
def run_tool(input_dir, output_dir):
    act = os.environ.get("SKRIPTOTEKET_ACTION")
    act = json.loads(act) if act else None
    inputs = json.loads(os.environ.get("SKRIPTOTEKET_INPUTS") or "{}")
    manifest = json.loads(os.environ["SKRIPTOTEKET_INPUT_MANIFEST"])
    rows = 0
    for f in manifest["files"]:
        with open(f["path"], newline="") as fh:
            rows += sum(1 for _ in csv.reader(fh)) - 1
    if act is None:
        n, rubrik = rows, inputs.get("rubrik", "rader")
    else:
        n, rubrik = act["state"]["n"] + int(act["input"]["steg"]), act["state"]["rubrik"]
    with open(os.path.join(output_dir, "Sammanfattning 7A.txt"), "w") as out:
        out.write("%s: %d\n" % (rubrik, n))
    return {"outputs": [{"kind": "notice", "level": "info", "message": "%d" % n}],
            "next_actions": [{"action_id": "add", "label": "Lägg till", "kind": "form",
                              "fields": [{"name": "steg", "label": "Steg", "kind": "integer"}]}],
            "state": {"n": n, "rubrik": rubrik}}
`

const counterSchema = `[{"name": "klass", "label": "Klasslista", "kind": "file", "accept": [".csv"], "min": 1, "max": 1},
 {"name": "rubrik", "label": "Rubrik", "kind": "string"},
 {"name": "sortering", "label": "Sortering", "kind": "enum", "options": [{"value": "namn", "label": "Namn"}, {"value": "antal", "label": "Antal"}]}]`

// TestMCPToolsFlow: an independent MCP client (the SDK's, over stdio with a real `skrip
// mcp`) lists skrip's tools with their inputs as JSON Schema, runs one on a staged file,
// takes its next action with the run's state_rev (a stale one is a conflict it is told
// how to handle), reads the run with its artifact copied into the staging area, and
// lists and deletes a sandbox.
func TestMCPToolsFlow(t *testing.T) {
	env := startServer(t)
	bin := testutil.BuildSkrip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ac, author := env.User(t, "ada", "author")
	if _, _, err := ac.AddTool(ctx, client.NewTool{Slug: "rakna", Title: "Räkna rader", Summary: "Räknar raderna i en klasslista",
		Source: counter, InputSchema: json.RawMessage(counterSchema), Publish: true}); err != nil {
		t.Fatal(err)
	}
	uc, u := env.User(t, "ulla", "user")
	if _, err := uc.Upload(ctx, "klass.csv", strings.NewReader(csvIn), client.UploadOptions{Key: "files/klass.csv"}); err != nil {
		t.Fatal(err)
	}
	_ = author
	cs, _ := connect(t, ctx, bin, env, u.Token)

	var tools struct {
		Tools []struct {
			Slug        string         `json:"slug"`
			InputSchema map[string]any `json:"input_schema"`
			Files       *struct {
				Min, Max int
				Accept   []string
			} `json:"files"`
		} `json:"tools"`
		Count int `json:"count"`
	}
	call(t, ctx, cs, "tools_list", map[string]any{"query": "klasslista"}, &tools)
	if tools.Count != 1 || tools.Tools[0].Slug != "rakna" || tools.Tools[0].Files == nil || tools.Tools[0].Files.Max != 1 ||
		!slices.Equal(tools.Tools[0].Files.Accept, []string{".csv"}) {
		t.Fatalf("tools_list: %+v", tools)
	}
	props, _ := tools.Tools[0].InputSchema["properties"].(map[string]any)
	sortering, _ := props["sortering"].(map[string]any)
	if tools.Tools[0].InputSchema["type"] != "object" || len(props) != 2 || props["klass"] != nil || mustJSON(t, sortering["enum"]) != `["namn","antal"]` {
		t.Fatalf("the input schema: %s", mustJSON(t, tools.Tools[0].InputSchema))
	}

	type runOut struct {
		RunID       string `json:"run_id"`
		Status      string `json:"status"`
		StateRev    *int64 `json:"state_rev"`
		NextActions []struct {
			ActionID string `json:"action_id"`
		} `json:"next_actions"`
		Outputs []struct {
			Message string `json:"message"`
		} `json:"outputs"`
		Artifacts []struct {
			Name    string `json:"name"`
			FileKey string `json:"file_key"`
		} `json:"artifacts"`
		Stdout *string `json:"stdout"`
	}
	var first runOut
	call(t, ctx, cs, "tool_run", map[string]any{"tool": "rakna", "inputs": map[string]any{"rubrik": "elever"}, "file_keys": []string{"files/klass.csv"}}, &first)
	if first.Status != "succeeded" || first.StateRev == nil || len(first.Outputs) != 1 || first.Outputs[0].Message != "2" || len(first.NextActions) != 1 {
		t.Fatalf("tool_run: %+v", first)
	}
	if msg := callErr(t, ctx, cs, "tool_run", map[string]any{"tool": "rakna", "inputs": map[string]any{"sortering": "storlek"}, "file_keys": []string{"files/klass.csv"}}); !strings.Contains(msg, "sortering") {
		t.Errorf("tool_run with an input outside the schema: %s", msg)
	}
	var second runOut
	call(t, ctx, cs, "run_action", map[string]any{"run_id": first.RunID, "action_id": "add", "input": map[string]any{"steg": 5}, "expected_state_rev": *first.StateRev}, &second)
	if second.Status != "succeeded" || second.Outputs[0].Message != "7" || *second.StateRev != *first.StateRev+1 {
		t.Fatalf("run_action: %+v", second)
	}
	if msg := callErr(t, ctx, cs, "run_action", map[string]any{"run_id": first.RunID, "action_id": "add", "input": map[string]any{"steg": 1}, "expected_state_rev": *first.StateRev}); !strings.Contains(msg, "run_get") {
		t.Errorf("run_action at a stale state_rev: %s", msg)
	}
	var got runOut
	call(t, ctx, cs, "run_get", map[string]any{"run_id": second.RunID, "stage_artifacts": true}, &got)
	if got.Status != "succeeded" || len(got.Artifacts) != 1 || got.Artifacts[0].FileKey != "files/runs/"+second.RunID+"/Sammanfattning_7A.txt" || got.Stdout == nil {
		t.Fatalf("run_get: %+v", got)
	}
	var body bytes.Buffer
	if _, err := uc.Download(ctx, got.Artifacts[0].FileKey, func(client.FileInfo) (io.Writer, error) { return &body, nil }); err != nil || body.String() != "elever: 7\n" {
		t.Fatalf("the staged artifact: %q, %v", body.String(), err)
	}

	var sb struct {
		SandboxID string `json:"sandbox_id"`
	}
	call(t, ctx, cs, "sandbox_create", map[string]any{}, &sb)
	var boxes struct {
		Sandboxes []struct {
			SandboxID string `json:"sandbox_id"`
		} `json:"sandboxes"`
		Count int `json:"count"`
	}
	call(t, ctx, cs, "sandbox_list", map[string]any{}, &boxes)
	if boxes.Count != 1 || boxes.Sandboxes[0].SandboxID != sb.SandboxID {
		t.Fatalf("sandbox_list: %+v", boxes)
	}
	var deleted struct {
		Deleted string `json:"deleted"`
	}
	call(t, ctx, cs, "sandbox_delete", map[string]any{"sandbox_id": sb.SandboxID}, &deleted)
	call(t, ctx, cs, "sandbox_list", map[string]any{}, &boxes)
	if deleted.Deleted != sb.SandboxID || boxes.Count != 0 {
		t.Fatalf("after sandbox_delete: %+v, %+v", deleted, boxes)
	}
	if msg := callErr(t, ctx, cs, "sandbox_delete", map[string]any{"sandbox_id": sb.SandboxID}); !strings.Contains(msg, "sandbox_create") {
		t.Errorf("deleting a deleted sandbox: %s", msg)
	}
}
