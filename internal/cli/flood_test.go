package cli

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// floodTools print 100 MiB on stdout and 100 MiB on stderr each: empty lines, and one
// line with no newline at all.
var floodTools = map[string]string{
	"newlines": "import sys\n\ndef run_tool(input_dir, output_dir):\n    chunk = b'\\n' * (1 << 20)\n" +
		"    for _ in range(100):\n        sys.stdout.buffer.write(chunk)\n        sys.stdout.buffer.flush()\n" +
		"        sys.stderr.buffer.write(chunk)\n        sys.stderr.buffer.flush()\n    return 'done'\n",
	"oneline": "import sys\n\ndef run_tool(input_dir, output_dir):\n    chunk = b'x' * (1 << 20)\n" +
		"    for _ in range(100):\n        sys.stdout.buffer.write(chunk)\n        sys.stdout.buffer.flush()\n" +
		"        sys.stderr.buffer.write(chunk)\n        sys.stderr.buffer.flush()\n    return 'done'\n",
}

// procStatus reads a field of /proc/<pid>/status given in kB, in bytes.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTime reads the CPU time a process used so far (user and system).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: utime and stime are the 12th
	// and 13th, in clock ticks (100 a second).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// healthzDeadline is how long /healthz may take to answer while a flood runs: far more
// than it ever takes, so that only a server that got stuck (its handlers or its
// listener starved by the flood) fails it. How fast it answers is logged, not asserted.
const healthzDeadline = 10 * time.Second

// watch polls /healthz at once and then every 50 ms, and the server's memory with it,
// until end is called; it keeps the slowest answer, how many answered, and the first
// failure: an answer that is not 200, or none within healthzDeadline. A server that
// grows past 1 GiB over base is killed: the test has shown what it shows, and the
// machine is shared.
type watch struct {
	stop     chan struct{}
	done     chan struct{}
	slowest  time.Duration
	answered int
	failed   string
	maxRSS   int64
}

func startWatch(base string, pid int, baseRSS int64, kill func()) *watch {
	w := &watch{stop: make(chan struct{}), done: make(chan struct{})}
	hc := &http.Client{Timeout: healthzDeadline}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			rss := procStatus(pid, "VmRSS")
			w.maxRSS = max(w.maxRSS, rss)
			if rss-baseRSS > 1<<30 {
				w.failed = fmt.Sprintf("RSS reached %d MiB (%d MiB over the start): the server was killed", rss>>20, (rss-baseRSS)>>20)
				kill()
				return
			}
			start := time.Now()
			resp, err := hc.Get(base + "/healthz")
			d := time.Since(start)
			switch {
			case err != nil:
				if w.failed == "" {
					w.failed = fmt.Sprintf("/healthz did not answer within %s: %v", healthzDeadline, err)
				}
			case resp.StatusCode != http.StatusOK:
				resp.Body.Close()
				if w.failed == "" {
					w.failed = fmt.Sprintf("/healthz answered %d", resp.StatusCode)
				}
			default:
				resp.Body.Close()
				w.answered++
				w.slowest = max(w.slowest, d)
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *watch) end() {
	close(w.stop)
	<-w.done
}

// sse follows a run's events to their end, counting them; with stall it reads nothing
// after the headers, like a client that went away without closing.
type sse struct {
	events  map[string]int
	notices []string
	err     error
	done    chan struct{}
}

func follow(ctx context.Context, url, token string, stall bool) *sse {
	s := &sse{events: map[string]int{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			s.err = err
			return
		}
		defer resp.Body.Close()
		if stall {
			<-ctx.Done()
			return
		}
		rd := bufio.NewReaderSize(resp.Body, 1<<20)
		kind := ""
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				kind = strings.TrimPrefix(line, "event: ")
				s.events[kind]++
			case strings.HasPrefix(line, "data: ") && kind == "notice" && len(s.notices) < 20:
				s.notices = append(s.notices, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return s
}

// unmountUnder detaches what a server left mounted under dir (run outputs and
// sandbox workspaces), so that the test's temp dir can go.
func unmountUnder(dir string) {
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			syscall.Unmount(f[4], syscall.MNT_DETACH)
		}
	}
}

// floodServer is a real `skrip serve` for one flood, warmed up by a small run and an
// exec, so that what is measured is the flood.
type floodServer struct {
	base   string
	runner string
	token  string
	c      *client.Client
	pid    int
	kill   func()
	box    string
}

func startFloodServer(t *testing.T, bin, rn string) *floodServer {
	t.Helper()
	addr := testutil.FreeAddr(t)
	s := &floodServer{base: "http://" + addr, runner: rn, token: "skr_flood-test-admin-token"}
	data := t.TempDir()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", data, "--runner", rn, "--runner-concurrency", "1")
	cmd.Env = append(os.Environ(), "SKRIP_BOOTSTRAP_ADMIN_TOKEN="+s.token)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.pid = cmd.Process.Pid
	var once sync.Once
	var killed atomic.Bool
	s.kill = func() { once.Do(func() { killed.Store(true); cmd.Process.Signal(syscall.SIGKILL) }) }
	t.Cleanup(func() {
		if s.box != "" && !killed.Load() {
			s.c.DeleteSandbox(context.Background(), s.box)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		// Sandboxes outlive a server on purpose; a killed one could not delete its own.
		unmountUnder(data)
	})
	testutil.WaitHealthy(t, s.base)
	s.c, _ = client.New(s.base, s.token)
	ctx := context.Background()
	if _, _, err := s.c.CreateTool(ctx, "hello", "Hello", "", "def run_tool(i, o):\n    print('hi')\n    return 'hi'\n", true); err != nil {
		t.Fatal(err)
	}
	if r, err := s.c.RunFiles(ctx, "hello", nil, nil, time.Minute); err != nil || r.Status != "succeeded" {
		t.Fatalf("warm-up run: %+v %v", r, err)
	}
	box, err := s.c.CreateSandbox(ctx, client.SandboxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.box = box.SandboxID
	if _, err := s.c.ExecStream(ctx, s.box, client.ExecRequest{Cmd: []string{"echo", "hi"}}, func(string, string) {}); err != nil {
		t.Fatal(err)
	}
	return s
}

// measure runs fn while it watches the server: its RSS must grow by less than 64 MiB,
// and /healthz must answer (200, within healthzDeadline) every time it is asked
// throughout, and at least once. fn's error is reported after what the watch saw, which
// explains it when the server had to be killed. How long /healthz took at its slowest
// is logged: speed is measured by benchmarks, not asserted here.
func (s *floodServer) measure(t *testing.T, what string, fn func() error) {
	t.Helper()
	baseRSS, cpu := procStatus(s.pid, "VmRSS"), cpuTime(s.pid)
	w := startWatch(s.base, s.pid, baseRSS, s.kill)
	start := time.Now()
	err := fn()
	w.end()
	grew := w.maxRSS - baseRSS
	t.Logf("%s on %s: %.1fs, server CPU %s, RSS %d MiB at start, highest %d MiB (+%d MiB), /healthz answered %d times, slowest %s",
		what, s.runner, time.Since(start).Seconds(), cpuTime(s.pid)-cpu, baseRSS>>20, w.maxRSS>>20, grew>>20, w.answered, w.slowest.Round(time.Millisecond))
	if w.failed != "" {
		t.Fatalf("%s: %s", what, w.failed)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if grew >= 64<<20 {
		t.Errorf("%s: the server's RSS grew by %d MiB (limit 64 MiB)", what, grew>>20)
	}
	if w.answered == 0 {
		t.Errorf("%s: /healthz never answered while the flood ran", what)
	}
}

// TestToolOutputFloods runs the real server on each runner and lets tools print 100 MiB
// of empty lines, and 100 MiB with no newline, on stdout and on stderr, while one SSE
// subscriber follows the run and another stalls; then a sandbox exec streams as much. The
// server's RSS must grow by less than 64 MiB, and /healthz keep answering throughout
// (issue 13: each time within healthzDeadline, a bound only a stuck server passes; its
// speed is logged). The log keeps exactly its first 200000 bytes, marked cut, and
// the subscriber is told that lines were left out.
func TestToolOutputFloods(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	ctx := context.Background()
	for _, rn := range []string{"bwrap", "docker"} {
		t.Run(rn, func(t *testing.T) {
			if rn == "docker" {
				needDocker(t)
			}
			for _, name := range []string{"newlines", "oneline"} {
				t.Run(name, func(t *testing.T) {
					s := startFloodServer(t, bin, rn)
					if _, _, err := s.c.CreateTool(ctx, name, name, "", floodTools[name], true); err != nil {
						t.Fatal(err)
					}
					var r client.Run
					var live *sse
					s.measure(t, name, func() error {
						var err error
						if r, err = s.c.RunFiles(ctx, name, nil, nil, 0); err != nil {
							return err
						}
						sctx, cancel := context.WithCancel(ctx)
						url := s.base + "/api/v1/runs/" + r.RunID + "/events"
						live = follow(sctx, url, s.token, false)
						stalled := follow(sctx, url, s.token, true)
						defer func() { cancel(); <-stalled.done }()
						if r, err = s.c.GetRun(ctx, r.RunID, 3*time.Minute); err != nil {
							return err
						}
						select {
						case <-live.done:
						case <-time.After(30 * time.Second):
							t.Error("the live subscriber did not see the run end")
						}
						return nil
					})
					if r.Status != "succeeded" {
						t.Fatalf("run: %s %v", r.Status, r.ErrorSummary)
					}
					for _, log := range []*string{r.Stdout, r.Stderr} {
						want := strings.Repeat("\n", 200000)
						if name == "oneline" {
							want = strings.Repeat("x", 200000)
						}
						want += "\n[output truncated: only the first 200000 bytes were kept]"
						if log == nil || *log != want {
							n := -1
							if log != nil {
								n = len(*log)
							}
							t.Errorf("a log of %d bytes, want the first 200000 bytes and the mark", n)
						}
					}
					t.Logf("%s: the live subscriber saw %v; notices %q", name, live.events, live.notices)
					if live.err != nil || live.events["status"] < 2 {
						t.Errorf("live subscriber: %v, events %v", live.err, live.events)
					}
					if len(live.notices) == 0 {
						t.Error("the live subscriber was not told that lines were left out")
					}
				})
			}

			t.Run("sandbox exec", func(t *testing.T) {
				s := startFloodServer(t, bin, rn)
				var lines, notices atomic.Int64
				var res client.ExecResult
				s.measure(t, "sandbox exec", func() error {
					var err error
					res, err = s.c.ExecStream(ctx, s.box, client.ExecRequest{TimeoutS: 180, Cmd: []string{"sh", "-c",
						"head -c 104857600 /dev/zero | tr '\\0' '\\n'; head -c 104857600 /dev/zero | tr '\\0' x >&2"}},
						func(stream, line string) {
							if stream == "notice" {
								notices.Add(1)
								return
							}
							lines.Add(1)
						})
					return err
				})
				t.Logf("sandbox exec: %d lines and %d notices streamed", lines.Load(), notices.Load())
				if res.ExitCode != 0 || len(res.Stdout) != 200000 || !res.StdoutTruncated || len(res.Stderr) != 200000 || !res.StderrTruncated {
					t.Errorf("exec result: exit %d, stdout %d bytes (cut %v), stderr %d bytes (cut %v)",
						res.ExitCode, len(res.Stdout), res.StdoutTruncated, len(res.Stderr), res.StderrTruncated)
				}
				if notices.Load() == 0 {
					t.Error("the stream did not say that lines were left out")
				}
			})
		})
	}
}
