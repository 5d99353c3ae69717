// Package runnertest is the conformance suite every runner passes: a script inside the
// sandbox sees exactly the runner contract of docs/spec.md §5 and the original hub's runtime of
// §5b, cannot write, read or reach what it must not, and abuse (endless loops, memory,
// fork bombs, floods of output) is contained while other runs go on.
package runnertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/ids"
	"github.com/skrip-dev/skrip/internal/runner"
)

// Limits are small limits that keep the suite fast.
func Limits() runner.Limits {
	return runner.Limits{WallTime: 20 * time.Second, MemoryBytes: 256 << 20, Pids: 64, CPUs: 1,
		TmpBytes: 16 << 20, OutputBytes: 8 << 20, LogBytes: 64 << 10}
}

// Outcome is a finished run as the suite sees it.
type Outcome struct {
	Result runner.Result
	Parsed contract.Result
	Files  map[string]string // what Collect saw in /work/output: name -> "file:<content>", "symlink:<target>", "dir", "other"
	// Output holds a copy of the regular files Collect saw, when the Job asked for it.
	Output string
}

// Job is one run for the suite.
type Job struct {
	Script string
	Files  map[string]string // the input files
	Inputs map[string]any
	// Action makes it an action run: action.json in the input, SKRIPTOTEKET_ACTION set.
	Action *contract.Action
	Memory []byte // /work/memory.json
	Limits runner.Limits
	// KeepOutput copies /work/output's regular files into Outcome.Output.
	KeepOutput bool
	// Unparsed leaves result.json unparsed (Outcome.Parsed empty), for a case that checks
	// how it breaks the contract.
	Unparsed bool
}

// Exec runs script on r with input files and inputs, and parses its result.json.
func Exec(t *testing.T, r runner.Runner, script string, files map[string]string, inputs map[string]any, lim runner.Limits) Outcome {
	t.Helper()
	return ExecJob(t, r, Job{Script: script, Files: files, Inputs: inputs, Limits: lim})
}

// ExecJob runs j on r and parses its result.json.
func ExecJob(t *testing.T, r runner.Runner, j Job) Outcome {
	t.Helper()
	in := t.TempDir()
	write := func(name string, body []byte) {
		if err := os.WriteFile(filepath.Join(in, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range j.Files {
		write(name, []byte(body))
	}
	if j.Action != nil {
		b, err := json.Marshal(j.Action)
		if err != nil {
			t.Fatal(err)
		}
		write(contract.ActionFileName, b)
	}
	// The manifest as the run service makes it: action.json stays out of it.
	m, err := contract.ListInputs(in)
	if err != nil {
		t.Fatal(err)
	}
	out := Outcome{Files: map[string]string{}}
	if j.KeepOutput {
		out.Output = t.TempDir()
	}
	spec := runner.Spec{
		ID: ids.New("r"), ToolID: "t_test", Script: []byte(j.Script), InputDir: in,
		Env: contract.Env(m, j.Inputs, j.Action), Memory: j.Memory, Limits: j.Limits,
		Collect: func(dir string) error {
			return filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
				if err != nil || p == dir {
					return err
				}
				rel, _ := filepath.Rel(dir, p)
				switch {
				case info.Mode()&os.ModeSymlink != 0:
					target, _ := os.Readlink(p)
					out.Files[rel] = "symlink:" + target
				case info.Mode().IsRegular():
					b, _ := os.ReadFile(p)
					if len(b) > 200 {
						out.Files[rel] = fmt.Sprintf("file:%d bytes", len(b))
					} else {
						out.Files[rel] = "file:" + string(b)
					}
					if out.Output != "" {
						dst := filepath.Join(out.Output, rel)
						if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
							return err
						}
						return os.WriteFile(dst, b, 0o644)
					}
				case info.IsDir():
					out.Files[rel] = "dir"
				default:
					out.Files[rel] = "other"
				}
				return nil
			})
		},
	}
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	out.Result = res
	if len(res.ResultJSON) > 0 && !j.Unparsed {
		parsed, err := contract.ParseResult(res.ResultJSON, contract.DefaultPolicy())
		if err != nil {
			t.Fatalf("result.json: %v\n%s\nstderr: %s", err, res.ResultJSON, res.Stderr)
		}
		out.Parsed = parsed
	}
	return out
}

// jsonValue returns the value of the first json output.
func jsonValue(t *testing.T, o Outcome) map[string]any {
	t.Helper()
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %q (%s); exit %d; stderr:\n%s", o.Parsed.Status, o.Parsed.ErrorSummary, o.Result.ExitCode, o.Result.Stderr)
	}
	for _, out := range o.Parsed.Outputs {
		if out.Kind == "json" {
			b, _ := json.Marshal(out.Value)
			var v map[string]any
			json.Unmarshal(b, &v)
			return v
		}
	}
	t.Fatalf("no json output in %+v", o.Parsed.Outputs)
	return nil
}

// Run runs every case against the runner newRunner makes.
func Run(t *testing.T, newRunner func(t *testing.T) runner.Runner) {
	r := newRunner(t)
	t.Run("contract", func(t *testing.T) { testContract(t, r) })
	t.Run("writes", func(t *testing.T) { testWrites(t, r) })
	t.Run("kernel settings", func(t *testing.T) { testKernelSettings(t, r) })
	t.Run("host uid", func(t *testing.T) { testHostUID(t, r) })
	t.Run("system calls", func(t *testing.T) { testSyscalls(t, r) })
	t.Run("exit 125", func(t *testing.T) { testExit125(t, r) })
	t.Run("result.json cap", func(t *testing.T) { testResultCap(t, r) })
	t.Run("network", func(t *testing.T) { testNetwork(t, r) })
	t.Run("visibility", func(t *testing.T) { testVisibility(t, r) })
	t.Run("symlinks", func(t *testing.T) { testSymlinks(t, r) })
	t.Run("timeout keeps artifacts", func(t *testing.T) { testTimeout(t, r) })
	t.Run("memory", func(t *testing.T) { testMemory(t, r) })
	t.Run("fork bomb", func(t *testing.T) { testForkBomb(t, r) })
	t.Run("stdout flood", func(t *testing.T) { testStdoutFlood(t, r) })
	t.Run("output cap", func(t *testing.T) { testOutputCap(t, r) })
	t.Run("sparse output", func(t *testing.T) { testSparseOutput(t, r) })
	t.Run("abuse beside a normal run", func(t *testing.T) { testConcurrent(t, r) })
	t.Run("original runtime", func(t *testing.T) { runRuntime(t, r) })
	t.Run("fidelity", func(t *testing.T) { runFidelity(t, r) })
}

func testContract(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
import json, os, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    env = {k: v for k, v in os.environ.items() if k.startswith("SKRIPTOTEKET_")}
    return {"outputs": [{"kind": "json", "value": {
        "args": [input_dir, output_dir], "env": env, "home": os.environ.get("HOME"),
        "uid": os.getuid(), "listing": sorted(os.listdir("/work/input")),
        "content": open("/work/input/a.csv").read(), "manifest": tk.manifest(), "inputs": tk.inputs(),
        "action": tk.action(), "cwd": os.getcwd(), "envkeys": sorted(os.environ)}}]}
`, map[string]string{"a.csv": "x,y\n1,2\n", "bild ö.png": "PNG"}, map[string]any{"n": 3.0}, Limits())
	v := jsonValue(t, o)
	env := v["env"].(map[string]any)
	want := map[string]string{
		"SKRIPTOTEKET_INPUT_DIR": "/work/input", "SKRIPTOTEKET_OUTPUT_DIR": "/work/output",
		"SKRIPTOTEKET_RESULT_PATH": "/work/result.json", "SKRIPTOTEKET_SCRIPT_PATH": "/work/script.py",
		"SKRIPTOTEKET_ENTRYPOINT": "run_tool",
	}
	for k, w := range want {
		if env[k] != w {
			t.Errorf("%s = %v, want %q", k, env[k], w)
		}
	}
	if _, ok := env["SKRIPTOTEKET_ACTION"]; ok {
		t.Error("SKRIPTOTEKET_ACTION is set on an initial run")
	}
	if fmt.Sprint(v["args"]) != "[/work/input /work/output]" || v["home"] != "/tmp/home" || v["cwd"] != "/work" {
		t.Errorf("args %v, HOME %v, cwd %v", v["args"], v["home"], v["cwd"])
	}
	if v["uid"] == 0.0 {
		t.Error("the script runs as root")
	}
	if fmt.Sprint(v["listing"]) != "[a.csv bild ö.png]" || v["content"] != "x,y\n1,2\n" {
		t.Errorf("input listing %v, content %q", v["listing"], v["content"])
	}
	files := v["manifest"].(map[string]any)["files"].([]any)
	if len(files) != 2 {
		t.Fatalf("manifest %v", v["manifest"])
	}
	for _, f := range files {
		m := f.(map[string]any)
		if m["path"] != "/work/input/"+m["name"].(string) || m["bytes"] == nil {
			t.Errorf("manifest entry %v", m)
		}
	}
	if fmt.Sprint(v["inputs"]) != "map[n:3]" || v["action"] != nil {
		t.Errorf("inputs %v, action %v", v["inputs"], v["action"])
	}
	for _, k := range v["envkeys"].([]any) {
		ks := k.(string)
		if strings.HasPrefix(ks, "SKRIP_") || ks == "SKRIP_TEST_DATABASE_URL" || ks == "SKRIP_TOKEN" {
			t.Errorf("the host's %s leaked into the sandbox", ks)
		}
	}
}

func testWrites(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
import os
def run_tool(input_dir, output_dir):
    res = {}
    for p in ["/work/input/new.txt", "/work/input/a.txt", "/work/script.py", "/work/x.txt", "/x.txt",
              "/usr/x.txt", "/etc/x.txt", "/skrip/x.txt", "/proc/x.txt", "/dev/x.txt",
              "/tmp/ok.txt", "/tmp/home/ok.txt", "/work/output/ok.txt"]:
        try:
            with open(p, "w") as f:
                f.write("x")
            res[p] = "written"
        except OSError as e:
            res[p] = type(e).__name__
    return {"outputs": [{"kind": "json", "value": res}]}
`, map[string]string{"a.txt": "original"}, nil, Limits())
	v := jsonValue(t, o)
	for p, got := range v {
		allowed := p == "/tmp/ok.txt" || p == "/tmp/home/ok.txt" || p == "/work/output/ok.txt"
		if allowed != (got == "written") {
			t.Errorf("write to %s: %v (allowed=%v)", p, got, allowed)
		}
	}
	if o.Files["ok.txt"] != "file:x" {
		t.Errorf("output files %v", o.Files)
	}
}

// testKernelSettings opens host-wide kernel settings for writing (without writing, so a
// failing runner does not change the host): every open must be refused.
func testKernelSettings(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
import os
def run_tool(input_dir, output_dir):
    res = {}
    for p in ["/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches", "/proc/sys/fs/file-max", "/proc/sysrq-trigger"]:
        try:
            os.close(os.open(p, os.O_WRONLY))
            res[p] = "writable"
        except OSError as e:
            res[p] = type(e).__name__
    return {"outputs": [{"kind": "json", "value": res}]}
`, nil, nil, Limits())
	for p, got := range jsonValue(t, o) {
		if got == "writable" {
			t.Errorf("%s is writable from the sandbox", p)
		}
	}
}

// testExit125 ends the tool's process with the code wrappers use for "could not start":
// it is the tool's failure, not the sandbox's (Run returns a result, not an error).
func testExit125(t *testing.T, r runner.Runner) {
	o := Exec(t, r, "import os\ndef run_tool(i, o):\n    os._exit(125)\n", nil, nil, Limits())
	if o.Result.ExitCode != 125 || len(o.Result.ResultJSON) != 0 {
		t.Fatalf("exit %d, result %q", o.Result.ExitCode, o.Result.ResultJSON)
	}
}

// testResultCap writes far more than the output cap straight into /work/result.json,
// which no tmpfs bounds on some runners: the writes must stop at the cap.
func testResultCap(t *testing.T, r runner.Runner) {
	lim := Limits()
	o := Exec(t, r, `
def run_tool(input_dir, output_dir):
    written = 0
    try:
        with open("/work/result.json", "wb") as f:
            for _ in range(64):
                f.write(b" " * (1 << 20))
                written += 1 << 20
    except OSError as e:
        pass
    return {"outputs": [{"kind": "json", "value": {"written": written}}]}
`, nil, nil, lim)
	if w := jsonValue(t, o)["written"].(float64); w > float64(max(lim.OutputBytes, 8<<20)) {
		t.Fatalf("wrote %v bytes into result.json; the cap is %d", w, max(lim.OutputBytes, 8<<20))
	}
}

func testNetwork(t *testing.T, r runner.Runner) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	o := Exec(t, r, fmt.Sprintf(`
import socket
def attempt(host, port):
    try:
        s = socket.create_connection((host, port), timeout=2)
        s.close()
        return "connected"
    except OSError as e:
        return type(e).__name__
def run_tool(input_dir, output_dir):
    res = {"loopback": attempt("127.0.0.1", %d), "public": attempt("192.0.2.1", 80)}
    try:
        socket.getaddrinfo("example.com", 80)
        res["dns"] = "resolved"
    except OSError as e:
        res["dns"] = type(e).__name__
    return {"outputs": [{"kind": "json", "value": res}]}
`, port), nil, nil, Limits())
	v := jsonValue(t, o)
	for k, got := range v {
		if got == "connected" || got == "resolved" {
			t.Errorf("%s: the sandbox reached the network (%v)", k, got)
		}
	}
	select {
	case <-accepted:
		t.Error("the host's listener on 127.0.0.1 accepted a connection from the sandbox")
	default:
	}
}

func testVisibility(t *testing.T, r runner.Runner) {
	secret := t.TempDir()
	os.WriteFile(filepath.Join(secret, "skrip.db"), []byte("host data"), 0o600)
	o := Exec(t, r, `
import os, skrip_toolkit as tk
def run_tool(input_dir, output_dir):
    res = {}
    for p in tk.inputs()["paths"]:
        try:
            res[p] = "readable: " + str(len(open(p, "rb").read()))
        except OSError as e:
            res[p] = type(e).__name__
        if os.path.isdir(p):
            try:
                res[p] = "listable: " + str(len(os.listdir(p)))
            except OSError as e:
                res[p] = type(e).__name__
    return {"outputs": [{"kind": "json", "value": res}]}
`, nil, map[string]any{"paths": []any{filepath.Join(secret, "skrip.db"), secret, "/root", "/home", "/etc/shadow"}}, Limits())
	v := jsonValue(t, o)
	for p, got := range v {
		s := fmt.Sprint(got)
		// A directory may exist empty in a runner's image; it must show nothing of the host.
		if strings.HasPrefix(s, "readable") || (strings.HasPrefix(s, "listable") && s != "listable: 0") {
			t.Errorf("%s is visible in the sandbox: %s", p, s)
		}
	}
}

func testSymlinks(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
import os
def run_tool(input_dir, output_dir):
    open(os.path.join(output_dir, "real.txt"), "w").write("real")
    os.symlink("/etc/hostname", os.path.join(output_dir, "link.txt"))
    os.symlink("../../work/script.py", os.path.join(output_dir, "up.txt"))
    return "<p>done</p>"
`, nil, nil, Limits())
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %q: %s", o.Parsed.Status, o.Result.Stderr)
	}
	if o.Files["real.txt"] != "file:real" {
		t.Fatalf("files %v", o.Files)
	}
	for _, name := range []string{"link.txt", "up.txt"} {
		if got, ok := o.Files[name]; ok && !strings.HasPrefix(got, "symlink:") {
			t.Errorf("%s came out as %q: a symlink was followed", name, got)
		}
	}
	for _, a := range o.Parsed.Artifacts {
		if strings.Contains(a, "link") || strings.Contains(a, "up.txt") {
			t.Errorf("the shim lists symlink %s as an artifact", a)
		}
	}
}

func testTimeout(t *testing.T, r runner.Runner) {
	lim := Limits()
	lim.WallTime = 2 * time.Second
	start := time.Now()
	o := Exec(t, r, `
import os
def run_tool(input_dir, output_dir):
    open(os.path.join(output_dir, "partial.txt"), "w").write("so far")
    while True:
        pass
`, nil, nil, lim)
	if !o.Result.TimedOut {
		t.Fatalf("not timed out: %+v", o.Result)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the run took %v to stop after a 2s limit", d)
	}
	if o.Files["partial.txt"] != "file:so far" {
		t.Errorf("artifacts written before the timeout are lost: %v", o.Files)
	}
}

func testMemory(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
def run_tool(input_dir, output_dir):
    blocks = []
    for _ in range(4096):
        blocks.append(bytearray(1 << 20))
    return "allocated 4 GiB"
`, nil, nil, Limits())
	if o.Parsed.Status == "succeeded" {
		t.Fatal("4 GiB allocated under a 256 MiB limit")
	}
	if !o.Result.OOMKilled && !strings.Contains(string(o.Result.Stderr), "MemoryError") && o.Parsed.ErrorSummary != "Tool execution failed (MemoryError)." {
		t.Fatalf("neither killed for memory nor a MemoryError: %+v\n%s", o.Result, o.Result.Stderr)
	}
}

func testForkBomb(t *testing.T, r runner.Runner) {
	lim := Limits()
	lim.WallTime = 5 * time.Second
	o := Exec(t, r, `
import os, time
def run_tool(input_dir, output_dir):
    n = 0
    for _ in range(10000):
        try:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
            n += 1
        except OSError:
            break
    return {"outputs": [{"kind": "json", "value": {"forked": n}}]}
`, nil, nil, lim)
	if o.Parsed.Status == "succeeded" {
		if n := jsonValue(t, o)["forked"].(float64); n >= float64(lim.Pids) {
			t.Fatalf("forked %v processes under a pids limit of %d", n, lim.Pids)
		}
	} else if !o.Result.TimedOut {
		t.Fatalf("the fork bomb neither hit the pids limit nor timed out: %+v", o.Result)
	}
	// The runner still works afterwards.
	after := Exec(t, r, "def run_tool(i, o):\n    return 'fine'\n", nil, nil, Limits())
	if after.Parsed.Status != "succeeded" {
		t.Fatalf("after the fork bomb: %+v %s", after.Result, after.Result.Stderr)
	}
}

func testStdoutFlood(t *testing.T, r runner.Runner) {
	o := Exec(t, r, `
import sys
def run_tool(input_dir, output_dir):
    line = "x" * 1023 + "\n"
    for _ in range(100 * 1024):
        sys.stdout.write(line)
    return "printed 100 MB"
`, nil, nil, Limits())
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %q: %s", o.Parsed.Status, o.Result.Stderr)
	}
	if !o.Result.StdoutTruncated || int64(len(o.Result.Stdout)) != Limits().LogBytes {
		t.Fatalf("stdout: %d bytes kept, truncated=%v; want %d and true", len(o.Result.Stdout), o.Result.StdoutTruncated, Limits().LogBytes)
	}
}

func testOutputCap(t *testing.T, r runner.Runner) {
	lim := Limits()
	o := Exec(t, r, `
import os
def run_tool(input_dir, output_dir):
    written = 0
    try:
        for i in range(64):
            with open(os.path.join(output_dir, "f%02d.bin" % i), "wb") as f:
                f.write(b"\0" * (1 << 20))
            written += 1 << 20
    except OSError as e:
        return {"outputs": [{"kind": "json", "value": {"written": written, "error": type(e).__name__}}]}
    return {"outputs": [{"kind": "json", "value": {"written": written}}]}
`, nil, nil, lim)
	v := jsonValue(t, o)
	if v["error"] == nil || v["written"].(float64) > float64(lim.OutputBytes) {
		t.Fatalf("filling /work/output: %v (cap %d)", v, lim.OutputBytes)
	}
	var total int64
	for _, f := range o.Files {
		var n int64
		if _, err := fmt.Sscanf(f, "file:%d bytes", &n); err == nil {
			total += n
		}
	}
	if total > lim.OutputBytes {
		t.Fatalf("/work/output holds %d bytes, over the %d cap", total, lim.OutputBytes)
	}
}

// testSparseOutput leaves 30 sparse files in /work/output that hold nothing but claim
// 7 MB each: they count by that apparent size, so Collect sees at most the cap of them,
// in path order, and Result.LeftOut lists the rest.
func testSparseOutput(t *testing.T, r runner.Runner) {
	lim := Limits()
	o := Exec(t, r, `
import os
def run_tool(input_dir, output_dir):
    for i in range(30):
        os.truncate(os.open(os.path.join(output_dir, "s%02d.bin" % i), os.O_CREAT | os.O_WRONLY), 7000000)
    return "made 30 sparse files"
`, nil, nil, lim)
	if o.Parsed.Status != "succeeded" {
		t.Fatalf("status %q: %s", o.Parsed.Status, o.Result.Stderr)
	}
	var total int64
	for name, f := range o.Files {
		var n int64
		if _, err := fmt.Sscanf(f, "file:%d bytes", &n); err != nil || name != "s00.bin" {
			t.Errorf("Collect saw %s: %s; want s00.bin alone, of 7000000 bytes", name, f)
		}
		total += n
	}
	if total > lim.OutputBytes {
		t.Errorf("Collect saw %d bytes, over the %d cap", total, lim.OutputBytes)
	}
	l := o.Result.LeftOut
	if l.Count != 29 || l.Bytes != 29*7000000 || len(l.Files) == 0 || l.Files[0] != (runner.OutputFile{Path: "s01.bin", Bytes: 7000000}) {
		t.Errorf("left out: %+v; want s01.bin to s29.bin", l)
	}
}

func testConcurrent(t *testing.T, r runner.Runner) {
	lim := Limits()
	lim.WallTime = 4 * time.Second
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		Exec(t, r, "def run_tool(i, o):\n    while True:\n        pass\n", nil, nil, lim)
	}()
	time.Sleep(300 * time.Millisecond)
	o := Exec(t, r, "def run_tool(i, o):\n    return '<b>still here</b>'\n", nil, nil, Limits())
	if o.Parsed.Status != "succeeded" || !bytes.Contains([]byte(o.Parsed.Outputs[0].HTML), []byte("still here")) {
		t.Fatalf("a normal run beside a busy loop: %+v", o.Parsed)
	}
	wg.Wait()
}

// JSONValue returns the value of the first json output of a succeeded run.
func JSONValue(t *testing.T, o Outcome) map[string]any {
	t.Helper()
	return jsonValue(t, o)
}
