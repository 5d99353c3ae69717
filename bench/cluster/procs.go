package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
)

// proc is one process the benchmark started: nats-server, a `skrip serve` or a
// `skrip worker`, with its own data dir and log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	addr string // its HTTP address (host:port); nats-server's client address
	mon  string // nats-server's monitoring address
	log  string
	done chan struct{} // closed when it has exited
	err  error         // how it exited, once done is closed
	once sync.Once
}

// startProc starts bin with args and env (added to baseEnv) in dir, logging to
// dir/<name>.log.
func startProc(name, bin, dir, addr string, args, env []string) *proc {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatalf("%v", err)
	}
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		fatalf("%v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(benchutil.BaseEnv(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		fatalf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, addr: addr, log: logPath, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); f.Close(); close(p.done) }()
	return p
}

// waitHTTP waits until p answers 200 on /readyz.
func (p *proc) waitHTTP(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			fatalf("%s exited while starting (%v); its log:\n%s", p.name, p.err, tail(p.log))
		default:
		}
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	fatalf("%s was not ready on %s within %s; its log:\n%s", p.name, p.addr, timeout, tail(p.log))
}

// waitTCP waits until p accepts connections on its address.
func (p *proc) waitTCP(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", p.addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	fatalf("%s did not listen on %s within %s; its log:\n%s", p.name, p.addr, timeout, tail(p.log))
}

// stop sends SIGTERM and waits up to 20 s, then kills p. It may be called again.
func (p *proc) stop() {
	p.once.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			log.Printf("%s did not stop within 20 s of SIGTERM; killed", p.name)
			p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// exited reports whether p has exited, with its error.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// machineBusy reads the machine's CPU time spent busy and in all, from /proc/stat.
func machineBusy() (busy, total int64) {
	b, _ := os.ReadFile("/proc/stat")
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
		switch i {
		case 3, 4: // idle, iowait
		case 8, 9: // guest time, already in user time
			total -= n
		default:
			busy += n
		}
	}
	return busy, total
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK) is not in the standard
// library).
const clockTick = 100

// cpu is a process's CPU time: its own, and its waited-for children's (for a worker
// or an all-in-one server, the sandboxes of its runs).
type cpu struct {
	self, children time.Duration
}

func (c cpu) sub(d cpu) cpu { return cpu{c.self - d.self, c.children - d.children} }
func (c cpu) add(d cpu) cpu { return cpu{c.self + d.self, c.children + d.children} }

// cpuOf reads utime+stime and cutime+cstime of pid; a process that is gone reads zero.
func cpuOf(pid int) cpu {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpu{}
	}
	// Fields after the command name, which is in parentheses and may hold spaces:
	// state is field 3, utime 14, stime 15, cutime 16, cstime 17.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return cpu{}
	}
	tick := func(i int) time.Duration {
		n, _ := strconv.ParseInt(f[i-3], 10, 64)
		return time.Duration(n) * time.Second / clockTick
	}
	return cpu{self: tick(14) + tick(15), children: tick(16) + tick(17)}
}

// pgBackends returns the CPU of each PostgreSQL backend whose application_name is app
// (the backends serve this benchmark's connections only: the machine's PostgreSQL is
// shared). A backend that exits between two readings loses what it used since the
// first; the pools keep theirs open.
func pgBackends(ctx context.Context, db *sql.DB, app string) map[int]cpu {
	out := map[int]cpu{}
	if db == nil || app == "" {
		return out
	}
	rows, err := db.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			out[pid] = cpuOf(pid)
		}
	}
	return out
}

// pgDelta is the CPU the backends used between two readings; one that appeared in
// between counts whole.
func pgDelta(before, after map[int]cpu) time.Duration {
	var d time.Duration
	for pid, c := range after {
		d += c.self - before[pid].self
	}
	return d
}

// natsCounts reads nats-server's count of messages in (every publish, request and
// reply from its clients) and of JetStream API requests; zero without a server.
func (p *proc) natsCounts() (msgs, api int64) {
	if p == nil || p.mon == "" {
		return 0, 0
	}
	var varz struct {
		InMsgs int64 `json:"in_msgs"`
	}
	var jsz struct {
		API struct {
			Total int64 `json:"total"`
		} `json:"api"`
	}
	for _, q := range []struct {
		path string
		v    any
	}{{"/varz", &varz}, {"/jsz", &jsz}} {
		resp, err := http.Get("http://" + p.mon + q.path)
		if err != nil {
			return 0, 0
		}
		json.NewDecoder(resp.Body).Decode(q.v)
		resp.Body.Close()
	}
	return varz.InMsgs, jsz.API.Total
}
