package runnertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skrip-dev/skrip/internal/runner"
)

// The security cases: what a tool runs as, seen from the host, and the system calls and
// files of the host it must not reach. They hold for runs and for sandbox execs alike.

// uidProbe names its process after its argument (what the host sees in
// /proc/<pid>/comm) and waits, up to 20 seconds, for the host's SIGUSR1.
const uidProbe = `
import ctypes, os, signal, sys
def probe(name):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
    return {"signalled": signal.sigtimedwait([signal.SIGUSR1], 20) is not None, "uid": os.getuid()}
`

// hostIDs waits for the process named name to show on the host, reads the uids and gids
// the host sees it as, and signals it to go on. It gives up after 30 seconds.
func hostIDs(name string) (uids, gids []string, err error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			if comm, err := os.ReadFile(d + "/comm"); err != nil || strings.TrimSpace(string(comm)) != name {
				continue
			}
			status, err := os.ReadFile(d + "/status")
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(line, "Uid:"); ok {
					uids = strings.Fields(v)
				}
				if v, ok := strings.CutPrefix(line, "Gid:"); ok {
					gids = strings.Fields(v)
				}
			}
			pid, _ := strconv.Atoi(filepath.Base(d))
			syscall.Kill(pid, syscall.SIGUSR1)
			return uids, gids, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, nil, fmt.Errorf("no process named %s showed on the host", name)
}

// checkHostIDs fails t when the host sees the process as root, in any of its real,
// effective, saved or filesystem ids.
func checkHostIDs(t *testing.T, uids, gids []string) {
	t.Helper()
	if len(uids) != 4 || len(gids) != 4 {
		t.Fatalf("host status Uid %v Gid %v", uids, gids)
	}
	t.Logf("the host sees the tool as uid %v gid %v (real, effective, saved, fs)", uids, gids)
	for i := range 4 {
		if uids[i] == "0" || gids[i] == "0" {
			t.Errorf("the host sees the tool as uid %v gid %v: it must never be root", uids, gids)
			return
		}
	}
}

func probeName() string {
	b := make([]byte, 5)
	rand.Read(b)
	return "skrip" + hex.EncodeToString(b) // 15 bytes, comm's limit
}

// testHostUID: the tool's process, looked up on the host, is not root's.
func testHostUID(t *testing.T, r runner.Runner) {
	name := probeName()
	var uids, gids []string
	var err error
	done := make(chan struct{})
	go func() { defer close(done); uids, gids, err = hostIDs(name) }()
	o := Exec(t, r, uidProbe+fmt.Sprintf(`
def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "json", "value": probe(%q)}]}
`, name), nil, nil, Limits())
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if v := jsonValue(t, o); v["signalled"] != true {
		t.Errorf("the tool did not get the host's signal: %v", v)
	}
	checkHostIDs(t, uids, gids)
}

// syscallProbe makes, through libc's syscall(2) with amd64's numbers, the calls a tool
// must not make, and reads what only root may read; probe() returns what happened.
// Arguments are chosen so that a call the filter lets through succeeds or fails with
// another errno than the filter's (EPERM).
const syscallProbe = `
import ctypes, errno, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def sc(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return r, ctypes.get_errno()
def verdict(r, e):
    return "allowed" if r >= 0 else errno.errorcode.get(e, str(e))
def cstr(b):
    buf = ctypes.create_string_buffer(b)
    keep.append(buf)
    return ctypes.addressof(buf)
keep = []
def probe():
    # Files first: an unshare the filter let through would change what they show.
    files = {}
    for p in ["/proc/slabinfo", "/proc/vmallocinfo", "/proc/pagetypeinfo", "/proc/kpageflags", "/proc/kpagecount", "/proc/timer_list", "/proc/kmsg"]:
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
            try:
                files[p] = "read %d" % len(os.read(fd, 256))
            finally:
                os.close(fd)
        except OSError as e:
            files[p] = errno.errorcode.get(e.errno, str(e.errno))
    keys = ""
    try:
        keys = open("/proc/keys").read()
    except OSError:
        pass
    calls = {}
    calls["keyctl"] = verdict(*sc(250, 0, -4, 1))  # KEYCTL_GET_KEYRING_ID of @u, creating it
    calls["add_key"] = verdict(*sc(248, cstr(b"user"), cstr(b"skrip-probe"), cstr(b"x"), 1, -1))
    calls["request_key"] = verdict(*sc(249, cstr(b"user"), cstr(b"skrip-none"), 0, 0))
    child = os.fork()
    if child == 0:
        import time
        time.sleep(30)
        os._exit(0)
    calls["ptrace"] = verdict(*sc(101, 16, child, 0, 0))  # PTRACE_ATTACH to our own child
    os.kill(child, 9)
    os.waitpid(child, 0)
    attr = ctypes.create_string_buffer(128)  # a software clock of this process, user space only
    ctypes.memmove(attr, (1).to_bytes(4, "little") + (128).to_bytes(4, "little") + (1).to_bytes(8, "little"), 16)
    ctypes.memmove(ctypes.addressof(attr) + 40, (1 | 32 | 64).to_bytes(8, "little"), 8)
    r, e = sc(298, ctypes.addressof(attr), 0, -1, -1, 0)
    calls["perf_event_open"] = verdict(r, e)
    r, e = sc(321, 0, 0, 0)
    calls["bpf"] = verdict(r, e)
    r, e = sc(323, 1)  # userfaultfd(UFFD_USER_MODE_ONLY), open to anyone without a filter
    calls["userfaultfd"] = verdict(r, e)
    calls["mount"] = verdict(*sc(165, cstr(b"none"), cstr(b"/tmp"), cstr(b"tmpfs"), 0, 0))
    calls["umount2"] = verdict(*sc(166, cstr(b"/tmp"), 2))
    fd = os.open("/proc/self/ns/uts", os.O_RDONLY)
    calls["setns"] = verdict(*sc(308, fd, 0))
    os.close(fd)
    r, e = sc(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER | SIGCHLD)
    if r == 0:
        os._exit(0)
    if r > 0:
        os.waitpid(r, 0)
    calls["clone(CLONE_NEWUSER)"] = verdict(r, e)
    calls["personality(ADDR_NO_RANDOMIZE)"] = verdict(*sc(135, 0x0040000))
    # Last: it would move this process into new namespaces.
    calls["unshare(CLONE_NEWUSER|CLONE_NEWNS)"] = verdict(*sc(272, 0x10000000 | 0x20000))

    works = {}
    t = threading.Thread(target=lambda: works.setdefault("thread", "ok"))
    t.start()
    t.join()
    works["subprocess"] = "ok" if subprocess.run(["true"]).returncode == 0 else "failed"

    return {"calls": calls, "works": works, "files": files, "keys": keys}
`

// hostKey puts a key into root's user keyring on the host (when the test runs as root)
// and returns its description, which no sandbox may see; empty when the test is not root.
func hostKey(t *testing.T) string {
	if os.Geteuid() != 0 {
		return ""
	}
	desc := "skrip-host-" + probeName()
	id, err := unix.AddKey("user", desc, []byte("host secret"), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Fatalf("adding a key to root's keyring: %v", err)
	}
	t.Cleanup(func() { unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0) })
	return desc
}

// checkProbe fails t for every call the sandbox made that it must not, and for every
// root-only file it read.
func checkProbe(t *testing.T, v map[string]any, key string) {
	t.Helper()
	calls, _ := v["calls"].(map[string]any)
	if len(calls) == 0 {
		t.Fatalf("the probe reported no calls: %v", v)
	}
	t.Logf("calls: %v", calls)
	for name, got := range calls {
		if got != "EPERM" && got != "ENOSYS" && got != "EACCES" {
			t.Errorf("%s in the sandbox: %v, want EPERM (or ENOSYS, EACCES)", name, got)
		}
	}
	works, _ := v["works"].(map[string]any)
	if works["thread"] != "ok" || works["subprocess"] != "ok" {
		t.Errorf("threads and processes must still work under the filter: %v", works)
	}
	files, _ := v["files"].(map[string]any)
	for p, got := range files {
		var n int
		if _, err := fmt.Sscanf(fmt.Sprint(got), "read %d", &n); err == nil && n > 0 {
			t.Errorf("%s, which only root may read, is readable in the sandbox (%v)", p, got)
		}
	}
	if keys, _ := v["keys"].(string); key != "" && strings.Contains(keys, key) {
		t.Errorf("/proc/keys in the sandbox lists the host root's key %s:\n%s", key, keys)
	}
}

// testSyscalls runs the probe as a tool.
func testSyscalls(t *testing.T, r runner.Runner) {
	key := hostKey(t)
	o := Exec(t, r, syscallProbe+`
def run_tool(input_dir, output_dir):
    return {"outputs": [{"kind": "json", "value": probe()}]}
`, nil, nil, Limits())
	checkProbe(t, jsonValue(t, o), key)
}

// testBoxHostUID: a sandbox exec's process, looked up on the host, is not root's.
func testBoxHostUID(t *testing.T, r runner.Sandboxes) {
	id := NewBox(t, r, 16<<20)
	name := probeName()
	if _, err := r.WriteFile(context.Background(), id, "uid.py", strings.NewReader(uidProbe+fmt.Sprintf("import json\nprint(json.dumps(probe(%q)))\n", name))); err != nil {
		t.Fatal(err)
	}
	var res runner.ExecResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); res = Sh(t, r, id, "python3 uid.py") }()
	uids, gids, err := hostIDs(name)
	wg.Wait()
	if err != nil {
		t.Fatalf("%v; the exec: %+v", err, res)
	}
	var v map[string]any
	if json.Unmarshal(res.Stdout, &v); v["signalled"] != true {
		t.Errorf("the exec did not get the host's signal: %q %q", res.Stdout, res.Stderr)
	}
	checkHostIDs(t, uids, gids)
}

// testBoxSyscalls runs the probe in a sandbox exec.
func testBoxSyscalls(t *testing.T, r runner.Sandboxes) {
	key := hostKey(t)
	id := NewBox(t, r, 16<<20)
	if _, err := r.WriteFile(context.Background(), id, "probe.py", strings.NewReader(syscallProbe+"import json\nprint(json.dumps(probe()))\n")); err != nil {
		t.Fatal(err)
	}
	res := Sh(t, r, id, "python3 probe.py")
	var v map[string]any
	if err := json.Unmarshal(res.Stdout, &v); err != nil {
		t.Fatalf("the probe: %v; exit %d, stdout %q, stderr %q", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	checkProbe(t, v, key)
}
