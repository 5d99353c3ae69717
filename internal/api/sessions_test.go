package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// counterTool keeps a counter in the session state and reports what it sees.
const counterTool = `
import json, os, skrip_toolkit as tk
ACTIONS = [{"action_id": "inc", "label": "Öka", "kind": "form", "fields": [{"name": "by", "label": "By", "kind": "integer"}]},
           {"action_id": "boom", "label": "Fail", "kind": "form", "fields": []}]
def run_tool(input_dir, output_dir):
    act = tk.action()
    files = sorted(f["name"] + ":" + open(f["path"]).read() for f in tk.input_files())
    names = sorted(f["name"] for f in tk.manifest()["files"])
    if act is None:
        return {"outputs": [{"kind": "json", "value": {"files": files, "names": names}}], "next_actions": ACTIONS, "state": {"n": 0}}
    if act["action_id"] == "boom":
        raise ValueError("boom")
    same = json.loads(os.environ["SKRIPTOTEKET_ACTION"]) == json.load(open("/work/input/action.json"))
    n = act["state"].get("n", 0) + act["input"].get("by", 1)
    return {"outputs": [{"kind": "json", "value": {"n": n, "files": files, "names": names, "same": same}}],
            "next_actions": ACTIONS, "state": {"n": n}}
`

type actionAnswer struct {
	RunID    string     `json:"run_id"`
	StateRev *int64     `json:"state_rev"`
	Run      client.Run `json:"run"`
}

func act(t *testing.T, env *apptest.Env, token, toolID, ctxName, actionID string, input map[string]any, expected int64) answer {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"tool_id": toolID, "context": ctxName, "action_id": actionID, "input": input, "expected_state_rev": expected})
	return send(t, env, "POST", "/api/v1/start_action", token, "application/json", strings.NewReader(string(b)))
}

func jsonOut(t *testing.T, raw string, path ...string) map[string]any {
	t.Helper()
	var v map[string]any
	json.Unmarshal([]byte(raw), &v)
	for _, p := range path {
		v, _ = v[p].(map[string]any)
	}
	outs, _ := v["outputs"].([]any)
	for _, o := range outs {
		m := o.(map[string]any)
		if m["kind"] == "json" {
			return m["value"].(map[string]any)
		}
	}
	t.Fatalf("no json output in %s", raw)
	return nil
}

func sessionFiles(t *testing.T, env *apptest.Env, token, tool, ctxName string) answer {
	t.Helper()
	return send(t, env, "GET", "/api/v1/tools/"+tool+"/session-files?context="+ctxName, token, "", nil)
}

func TestSessionFlow(t *testing.T) {
	apptest.EachOf(t, append(apptest.BlobBackends, apptest.ClusterBackend), func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		tool := publish(t, env, "counter", counterTool)
		_, u := env.User(t, "u", "user")

		first := runUpload(t, env, u.Token, "counter", []string{"a.txt", "b.txt"}, []string{"A", "B"}, "", "")
		if first.status != 201 || first.body["state_rev"] != 1.0 {
			t.Fatalf("initial run: %d %s", first.status, first.raw)
		}
		s := send(t, env, "GET", "/api/v1/tools/counter/sessions/default", u.Token, "", nil)
		if s.status != 200 || s.body["state_rev"] != 1.0 || fmt.Sprint(s.body["state"]) != "map[n:0]" {
			t.Fatalf("session: %d %s", s.status, s.raw)
		}
		a := act(t, env, u.Token, tool.ID, "default", "inc", map[string]any{"by": 2}, 1)
		if a.status != 201 || a.body["state_rev"] != 2.0 {
			t.Fatalf("action: %d %s", a.status, a.raw)
		}
		v := jsonOut(t, a.raw, "run")
		if v["n"] != 2.0 || fmt.Sprint(v["files"]) != "[a.txt:A b.txt:B]" || fmt.Sprint(v["names"]) != "[a.txt b.txt]" || v["same"] != true {
			t.Fatalf("the action run saw %v", v)
		}
		// The same revision again: 409 with expected and current.
		c := act(t, env, u.Token, tool.ID, "default", "inc", map[string]any{"by": 1}, 1)
		d, _ := c.body["error"].(map[string]any)["details"].(map[string]any)
		if c.status != 409 || c.errCode() != "conflict" || d["expected"] != 1.0 || d["current"] != 2.0 || !strings.Contains(c.errMessage(), "another tab") {
			t.Fatalf("stale revision: %d %s", c.status, c.raw)
		}
		bad := []struct {
			name, body, code string
			status           int
		}{
			{"unknown action", `{"tool_id":"` + tool.ID + `","action_id":"nope","expected_state_rev":2}`, "unknown_action", 400},
			{"bad input", `{"tool_id":"` + tool.ID + `","action_id":"inc","input":{"by":"x"},"expected_state_rev":2}`, "invalid_request", 400},
			{"unknown input", `{"tool_id":"` + tool.ID + `","action_id":"inc","input":{"hack":1},"expected_state_rev":2}`, "invalid_request", 400},
			{"client state", `{"tool_id":"` + tool.ID + `","action_id":"inc","state":{"n":99},"expected_state_rev":2}`, "invalid_request", 400},
			{"no expected rev", `{"tool_id":"` + tool.ID + `","action_id":"inc"}`, "invalid_request", 400},
			{"sandbox context", `{"tool_id":"` + tool.ID + `","context":"sandbox:v_1","action_id":"inc","expected_state_rev":2}`, "invalid_request", 400},
		}
		for _, tc := range bad {
			if a := send(t, env, "POST", "/api/v1/start_action", u.Token, "application/json", strings.NewReader(tc.body)); a.status != tc.status || a.errCode() != tc.code {
				t.Errorf("%s: %d %s", tc.name, a.status, a.raw)
			}
		}
		// A failing action leaves the session as it was.
		f := act(t, env, u.Token, tool.ID, "default", "boom", nil, 2)
		if f.status != 201 || f.body["state_rev"] != nil || jsonRun(f).Status != "failed" {
			t.Fatalf("failing action: %d %s", f.status, f.raw)
		}
		if s := send(t, env, "GET", "/api/v1/tools/counter/sessions/default", u.Token, "", nil); s.body["state_rev"] != 2.0 || fmt.Sprint(s.body["state"]) != "map[n:2]" {
			t.Fatalf("after a failed action: %s", s.raw)
		}
		// An initial run without files keeps and injects the files; one with files replaces them.
		keep := runUpload(t, env, u.Token, "counter", nil, nil, "", "")
		if v := jsonOut(t, keep.raw); fmt.Sprint(v["files"]) != "[a.txt:A b.txt:B]" || keep.body["state_rev"] != 3.0 {
			t.Fatalf("run without files: %s", keep.raw)
		}
		repl := runUpload(t, env, u.Token, "counter", []string{"c.txt"}, []string{"C"}, "", "")
		if v := jsonOut(t, repl.raw); fmt.Sprint(v["files"]) != "[c.txt:C]" {
			t.Fatalf("run with new files: %s", repl.raw)
		}
		sf := sessionFiles(t, env, u.Token, "counter", "default")
		files, _ := sf.body["files"].([]any)
		if sf.status != 200 || len(files) != 1 || sf.body["expires_at"] == nil || files[0].(map[string]any)["sha256"] == "" {
			t.Fatalf("session files: %s", sf.raw)
		}
		a = act(t, env, u.Token, tool.ID, "default", "inc", nil, 4)
		if v := jsonOut(t, a.raw, "run"); fmt.Sprint(v["files"]) != "[c.txt:C]" || v["n"] != 1.0 {
			t.Fatalf("action after replacing: %s", a.raw)
		}
		if keys := storedKeys(t, env); len(keys) != 1 || !strings.HasPrefix(keys[0], "sessions/") {
			t.Fatalf("the blob store holds %v: the replaced set's bytes must go", keys)
		}
		if d := send(t, env, "DELETE", "/api/v1/tools/counter/session-files", u.Token, "", nil); d.status != 204 {
			t.Fatalf("clear: %d %s", d.status, d.raw)
		}
		if sf := sessionFiles(t, env, u.Token, "counter", "default"); sf.status != 404 {
			t.Fatalf("after clearing: %d", sf.status)
		}
		if keys := storedKeys(t, env); len(keys) != 0 {
			t.Fatalf("after clearing the blob store holds %v", keys)
		}
	})
}

func jsonRun(a answer) client.Run {
	var aa actionAnswer
	json.Unmarshal([]byte(a.raw), &aa)
	return aa.Run
}

func TestRejectedUploadKeepsSessionFiles(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.UploadMaxFileBytes = 100
	env := apptest.Start(t, cfg)
	publish(t, env, "counter", counterTool)
	_, u := env.User(t, "u", "user")
	if a := runUpload(t, env, u.Token, "counter", []string{"keep.txt", "also.csv"}, []string{"original", "1,2"}, "", ""); a.status != 201 {
		t.Fatalf("first run: %s", a.raw)
	}
	before := sessionFiles(t, env, u.Token, "counter", "default")
	keysBefore := storedKeys(t, env)
	for _, bad := range [][2][]string{
		{{"x.txt", "X.TXT"}, {"a", "b"}},
		{{"action.json"}, {"{}"}},
		{{"big.txt"}, {strings.Repeat("x", 101)}},
	} {
		if a := runUpload(t, env, u.Token, "counter", bad[0], bad[1], "", ""); a.status < 400 || a.status >= 500 {
			t.Fatalf("upload %v: %d %s", bad[0], a.status, a.raw)
		}
	}
	after := sessionFiles(t, env, u.Token, "counter", "default")
	if fmt.Sprint(before.body["files"]) != fmt.Sprint(after.body["files"]) || fmt.Sprint(keysBefore) != fmt.Sprint(storedKeys(t, env)) {
		t.Fatalf("a rejected upload changed the session files:\nbefore %s\nafter  %s", before.raw, after.raw)
	}
}

// TestConcurrentActions sends 50 start_action calls with the same expected_state_rev at
// once: exactly one wins, every other gets 409, and the state is the winner's.
func TestConcurrentActions(t *testing.T) {
	apptest.EachOf(t, append(apptest.Backends, apptest.ClusterBackend), func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.RunnerConcurrency, cfg.RunnerQueue = 4, 64
		cfg.RunsPerUser = 0 // the 50 actions race for the session, not for the user's share
		env := apptest.Start(t, cfg)
		tool := publish(t, env, "counter", counterTool)
		_, u := env.User(t, "u", "user")
		if a := runUpload(t, env, u.Token, "counter", nil, nil, "", ""); a.body["state_rev"] != 1.0 {
			t.Fatalf("initial: %s", a.raw)
		}
		const n = 50
		answers := make([]answer, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = act(t, env, u.Token, tool.ID, "default", "inc", map[string]any{"by": i + 1}, 1)
			}()
		}
		wg.Wait()
		winners, conflicts := 0, 0
		var winnerN float64
		for _, a := range answers {
			switch a.status {
			case 201:
				winners++
				winnerN = jsonOut(t, a.raw, "run")["n"].(float64)
				if a.body["state_rev"] != 2.0 {
					t.Errorf("winner's state_rev: %v", a.body["state_rev"])
				}
			case 409:
				conflicts++
			default:
				t.Errorf("unexpected answer %d %s", a.status, a.raw)
			}
		}
		if winners != 1 || conflicts != n-1 {
			t.Fatalf("%d winners, %d conflicts of %d", winners, conflicts, n)
		}
		s := send(t, env, "GET", "/api/v1/tools/counter/sessions/default", u.Token, "", nil)
		if s.body["state_rev"] != 2.0 || s.body["state"].(map[string]any)["n"] != winnerN {
			t.Fatalf("final session %s, winner's n %v", s.raw, winnerN)
		}
	})
}

func TestSessionIsolationAndOwnership(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	ac, author := env.User(t, "author", "author")
	ctx := context.Background()
	tool, v, err := ac.CreateTool(ctx, "counter", "Counter", "", counterTool, true)
	if err != nil {
		t.Fatal(err)
	}
	if a := runUpload(t, env, author.Token, "counter", []string{"prod.txt"}, []string{"P"}, "", ""); a.status != 201 {
		t.Fatalf("production: %s", a.raw)
	}
	sb := send(t, env, "POST", "/api/v1/editor/tool-versions/"+v.ID+"/run-sandbox", author.Token, "", nil)
	if sb.status != 201 || sb.body["context"] != "sandbox:"+v.ID || sb.body["state_rev"] != 1.0 {
		t.Fatalf("sandbox run without files: %d %s", sb.status, sb.raw)
	}
	if v := jsonOut(t, sb.raw); fmt.Sprint(v["files"]) != "[]" {
		t.Fatalf("the sandbox run saw production files: %v", v)
	}
	// The sandbox action sees the sandbox's state, not production's.
	act1 := act(t, env, author.Token, tool.ID, "default", "inc", map[string]any{"by": 5}, 1)
	sa := send(t, env, "POST", "/api/v1/editor/tool-versions/"+v.ID+"/start-action", author.Token, "application/json",
		strings.NewReader(`{"action_id":"inc","input":{"by":1},"expected_state_rev":1}`))
	if act1.status != 201 || sa.status != 201 || jsonOut(t, sa.raw, "run")["n"] != 1.0 {
		t.Fatalf("actions: production %d %s; sandbox %d %s", act1.status, act1.raw, sa.status, sa.raw)
	}
	es := send(t, env, "GET", "/api/v1/editor/tool-versions/"+v.ID+"/session", author.Token, "", nil)
	ps := send(t, env, "GET", "/api/v1/tools/counter/sessions/default", author.Token, "", nil)
	if es.body["state_rev"] != 2.0 || fmt.Sprint(es.body["state"]) != "map[n:1]" || fmt.Sprint(ps.body["state"]) != "map[n:5]" {
		t.Fatalf("sessions mixed: sandbox %s, production %s", es.raw, ps.raw)
	}
	if sf := sessionFiles(t, env, author.Token, "counter", "sandbox:"+v.ID); sf.status != 404 {
		t.Fatalf("the sandbox has session files: %s", sf.raw)
	}
	// Another user: 404 on every session and session-file route.
	_, other := env.User(t, "other", "author")
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/tools/counter/sessions/default", ""},
		{"GET", "/api/v1/tools/counter/session-files?context=default", ""},
		{"DELETE", "/api/v1/tools/counter/session-files?context=default", ""},
		{"GET", "/api/v1/editor/tool-versions/" + v.ID + "/session", ""},
		{"POST", "/api/v1/editor/tool-versions/" + v.ID + "/run-sandbox", ""},
		{"POST", "/api/v1/editor/tool-versions/" + v.ID + "/start-action", `{"action_id":"inc","expected_state_rev":2}`},
		{"POST", "/api/v1/start_action", `{"tool_id":"` + tool.ID + `","action_id":"inc","expected_state_rev":2}`},
	} {
		ct := ""
		if c.body != "" {
			ct = "application/json"
		}
		if a := send(t, env, c.method, c.path, other.Token, ct, strings.NewReader(c.body)); a.status != 404 {
			t.Errorf("%s %s by another user: %d %s", c.method, c.path, a.status, a.raw)
		}
	}
	// And the owner's files are as they were.
	if sf := sessionFiles(t, env, author.Token, "counter", "default"); sf.status != 200 || !strings.Contains(sf.raw, "prod.txt") {
		t.Fatalf("owner's files: %s", sf.raw)
	}
}

func TestSessionFilesExpire(t *testing.T) {
	cfg := apptest.Config(t, apptest.BlobBackends[0])
	cfg.SessionFilesTTL = time.Second
	env := apptest.Start(t, cfg)
	publish(t, env, "counter", counterTool)
	_, u := env.User(t, "u", "user")
	runUpload(t, env, u.Token, "counter", []string{"a.txt", "b.txt"}, []string{"AAAA", "BB"}, "", "")
	time.Sleep(1200 * time.Millisecond)
	r, err := env.Admin.Cleanup(context.Background())
	if err != nil || r.SessionSets != 1 || r.SessionFiles != 2 || r.SessionBytes != 6 {
		t.Fatalf("cleanup = %+v, %v; want 1 set of 2 files, 6 bytes", r, err)
	}
	if sf := sessionFiles(t, env, u.Token, "counter", "default"); sf.status != 404 {
		t.Fatalf("expired files still there: %s", sf.raw)
	}
	if keys := storedKeys(t, env); len(keys) != 0 {
		t.Fatalf("blob store holds %v", keys)
	}
}

func TestOversizeActionIsRefused(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	tool := publish(t, env, "texty", `
A = [{"action_id": "go", "label": "Go", "kind": "form", "fields": [{"name": "t", "label": "T", "kind": "text"}]}]
def run_tool(i, o):
    return {"outputs": [], "next_actions": A, "state": {"pad": "x" * 60000}}
`)
	_, u := env.User(t, "u", "user")
	if a := runUpload(t, env, u.Token, "texty", nil, nil, "", ""); a.body["state_rev"] != 1.0 {
		t.Fatalf("initial: %s", a.raw)
	}
	a := act(t, env, u.Token, tool.ID, "default", "go", map[string]any{"t": strings.Repeat("<", 30000)}, 1)
	if a.status != 413 || a.errCode() != "too_large" || !strings.Contains(a.errMessage(), "120 KiB") {
		t.Fatalf("oversize action: %d %s", a.status, a.raw)
	}
	if s := send(t, env, "GET", "/api/v1/tools/texty/sessions/default", u.Token, "", nil); s.body["state_rev"] != 1.0 {
		t.Fatalf("the refused action changed the session: %s", s.raw)
	}
}

// TestRefusedRunKeepsSessionFiles: an initial run with new files, refused because the
// queue is full, leaves the session's files as they were.
func TestRefusedRunKeepsSessionFiles(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.RunnerConcurrency, cfg.RunnerQueue = 1, 0
	env := apptest.Start(t, cfg)
	publish(t, env, "counter", counterTool)
	publish(t, env, "sleep", sleepTool)
	_, u := env.User(t, "u", "user")
	if a := runUpload(t, env, u.Token, "counter", []string{"keep.txt"}, []string{"K"}, "", ""); a.status != 201 {
		t.Fatalf("first run: %s", a.raw)
	}
	busy := runUpload(t, env, u.Token, "sleep", nil, nil, `{"s": 10}`, "?wait=0s")
	if busy.status != 202 {
		t.Fatalf("busy run: %d %s", busy.status, busy.raw)
	}
	if a := runUpload(t, env, u.Token, "counter", []string{"new.txt"}, []string{"N"}, "", ""); a.status != 503 {
		t.Fatalf("run while the worker is busy: %d %s", a.status, a.raw)
	}
	sf := sessionFiles(t, env, u.Token, "counter", "default")
	if !strings.Contains(sf.raw, "keep.txt") || strings.Contains(sf.raw, "new.txt") {
		t.Fatalf("a refused run changed the session files: %s", sf.raw)
	}
	send(t, env, "POST", "/api/v1/runs/"+busy.body["run_id"].(string)+"/cancel", u.Token, "", nil)
}
