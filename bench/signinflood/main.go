// Command signinflood repeats issue 28's sign-in flood against real `skrip serve`
// processes: it creates a user with a password, sends -n sign-ins with wrong passwords at
// once (half for that user, half for unknown names), and records the server's peak
// memory (VmHWM, and VmRSS sampled every 10 ms), /healthz latency during the flood, the
// answers, and how soon the user can sign in afterwards. Each binary given is measured in
// turn, so two builds (the base commit and the fix) sit side by side in one report. A
// server whose memory passes -kill is killed, and the report says so.
//
// Two floods: from one address (one attacker, or one school behind one address), and from
// -n addresses (a distributed attacker, sent as X-Forwarded-For through a trusted proxy;
// a build without SKRIP_TRUSTED_PROXIES ignores the header and sees one address).
//
//	go build -o /tmp/skrip-new ./cmd/skrip
//	git worktree add /tmp/skrip-base 1f87a80 && (cd /tmp/skrip-base && go build -o /tmp/skrip-old ./cmd/skrip)
//	go run ./bench/signinflood -bin before=/tmp/skrip-old -bin after=/tmp/skrip-new -n 300
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skrip-dev/skrip/bench/benchutil"
)

const (
	adminToken = "skr_benchmark-admin-token"
	userName   = "teacher"
	password   = "the teacher's password"
)

type bins []string

func (b *bins) String() string     { return strings.Join(*b, ",") }
func (b *bins) Set(v string) error { *b = append(*b, v); return nil }

func main() {
	var list bins
	flag.Var(&list, "bin", "label=path of a skrip binary to measure (repeat: each is measured in turn)")
	n := flag.Int("n", 300, "sign-ins sent at once")
	kill := flag.Int64("kill", 8<<30, "kill a server whose resident memory passes this many bytes")
	floods := flag.String("floods", "one,many", "which floods: one (one address), many (-n addresses)")
	flag.Parse()
	if len(list) == 0 {
		log.Fatal("give at least one -bin label=path")
	}
	var rows []*result
	for _, b := range list {
		label, path, ok := strings.Cut(b, "=")
		if !ok {
			label, path = filepath.Base(b), b
		}
		for _, f := range strings.Split(*floods, ",") {
			r := measure(label, path, f, *n, *kill)
			rows = append(rows, r)
			log.Printf("%s", r.line())
		}
	}
	fmt.Println("| build | flood | RSS before | peak RSS | /healthz max (median) | answers | flood took | the user signs in |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Println(r.line())
	}
}

// result is one flood against one build.
type result struct {
	label, flood string
	idle         int64 // bytes: VmRSS before the flood
	peak         int64 // bytes: VmHWM, or the sampled peak when the server was killed
	killed       atomic.Bool
	healthMax    time.Duration
	healthMedian time.Duration
	healthFailed int
	answers      map[string]int
	took         time.Duration
	signIn       string // how soon, and after what, the user signed in
}

func (r *result) line() string {
	peak := fmt.Sprintf("%.0f MiB", float64(r.peak)/(1<<20))
	idle := fmt.Sprintf("%.0f MiB", float64(r.idle)/(1<<20))
	if r.killed.Load() {
		peak = "killed at " + peak
	}
	health := fmt.Sprintf("%s (%s)", r.healthMax.Round(time.Millisecond), r.healthMedian.Round(time.Millisecond))
	if r.healthFailed > 0 {
		health += fmt.Sprintf(", %d failed", r.healthFailed)
	}
	var ans []string
	for k, v := range r.answers {
		ans = append(ans, fmt.Sprintf("%s×%d", k, v))
	}
	slices.Sort(ans)
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", r.label, r.flood, idle, peak, health, strings.Join(ans, " "),
		r.took.Round(10*time.Millisecond), r.signIn)
}

func measure(label, bin, flood string, n int, kill int64) *result {
	dir, err := os.MkdirTemp("", "signinflood-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	addr := benchutil.FreeAddr()
	base := "http://" + addr
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(benchutil.BaseEnv(), "SKRIP_ADDR="+addr, "SKRIP_DATA_DIR="+filepath.Join(dir, "data"),
		"SKRIP_BOOTSTRAP_ADMIN_TOKEN="+adminToken, "SKRIP_RUNNER=bwrap", "SKRIP_LOG_LEVEL=warn",
		"SKRIP_TRUSTED_PROXIES=127.0.0.1")
	logf, _ := os.Create(filepath.Join(dir, "server.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		log.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	waitReady(base, done, filepath.Join(dir, "server.log"))
	createUser(base)

	r := &result{label: label, flood: map[string]string{"one": "one address", "many": fmt.Sprintf("%d addresses", n)}[flood], answers: map[string]int{}}
	pid := cmd.Process.Pid
	time.Sleep(time.Second) // let the user's own hash be collected
	r.idle = status(pid, "VmRSS")

	// Memory: VmRSS every 10 ms; a server past kill is killed at once.
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			rss := status(pid, "VmRSS")
			if rss > peak.Load() {
				peak.Store(rss)
			}
			if rss > kill && !r.killed.Load() {
				r.killed.Store(true)
				cmd.Process.Kill()
				log.Printf("%s: resident memory %d MiB passed %d MiB: killed", label, rss>>20, kill>>20)
			}
			select {
			case <-stopSampling:
				return
			case <-t.C:
			}
		}
	}()
	// /healthz every 100 ms, each with a 30 s timeout.
	var health []time.Duration
	var healthMu sync.Mutex
	stopHealth := make(chan struct{})
	healthDone := make(chan struct{})
	go func() {
		defer close(healthDone)
		hc := &http.Client{Timeout: 30 * time.Second}
		for {
			start := time.Now()
			resp, err := hc.Get(base + "/healthz")
			d := time.Since(start)
			healthMu.Lock()
			if r.killed.Load() {
				// The server is gone: nothing more to measure.
			} else if err != nil || resp.StatusCode != 200 {
				r.healthFailed++
			} else {
				health = append(health, d)
			}
			healthMu.Unlock()
			if resp != nil {
				resp.Body.Close()
			}
			select {
			case <-stopHealth:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Minute, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var wg sync.WaitGroup
	var mu sync.Mutex
	start := time.Now()
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			name := userName
			if i%2 == 1 {
				name = fmt.Sprintf("nobody%d", i)
			}
			from := "198.51.100.1"
			if flood == "many" {
				from = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255+1)
			}
			<-gate
			status := signIn(hc, base, name, "wrong password "+strconv.Itoa(i), from)
			mu.Lock()
			r.answers[status]++
			mu.Unlock()
		})
	}
	close(gate)
	wg.Wait()
	r.took = time.Since(start)
	time.Sleep(300 * time.Millisecond) // a last sample or two after the flood
	close(stopHealth)
	<-healthDone

	if !r.killed.Load() {
		// Right after the flood, from the flood's address (the same school) in the one-address
		// flood, from an address of its own in the other: how long until the user is in.
		from := "198.51.100.1"
		if flood == "many" {
			from = "192.0.2.200"
		}
		t0 := time.Now()
		first := ""
		for tries := 0; ; tries++ {
			status, after := signInOnce(hc, base, userName, password, from)
			if first == "" {
				first = status
			}
			if status == "303" {
				if tries == 0 {
					r.signIn = fmt.Sprintf("at once (%s)", time.Since(t0).Round(10*time.Millisecond))
				} else {
					r.signIn = fmt.Sprintf("after %s (first answer %s)", time.Since(t0).Round(100*time.Millisecond), first)
				}
				break
			}
			if after <= 0 || time.Since(t0) > 5*time.Minute || tries > 20 {
				r.signIn = fmt.Sprintf("no: %s", status)
				break
			}
			time.Sleep(time.Duration(after) * time.Second)
		}
	} else {
		r.signIn = "no (server killed)"
	}
	close(stopSampling)
	<-sampled
	r.peak = peak.Load()
	if hwm := status(pid, "VmHWM"); hwm > r.peak {
		r.peak = hwm
	}
	slices.Sort(health)
	if len(health) > 0 {
		r.healthMax, r.healthMedian = health[len(health)-1], health[len(health)/2]
	}
	return r
}

// signIn posts the sign-in form as a browser on the server's own page would (its Origin)
// from the client address from, and returns the status, or the error's kind.
func signIn(hc *http.Client, base, name, pw, from string) string {
	s, _ := signInOnce(hc, base, name, pw, from)
	return s
}

func signInOnce(hc *http.Client, base, name, pw, from string) (string, int) {
	req, _ := http.NewRequest("POST", base+"/signin", strings.NewReader(url.Values{"name": {name}, "password": {pw}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("X-Forwarded-For", from)
	resp, err := hc.Do(req)
	if err != nil {
		return "error", 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	after, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	return strconv.Itoa(resp.StatusCode), after
}

func createUser(base string) {
	body, _ := json.Marshal(map[string]string{"name": userName, "role": "user", "password": password})
	req, _ := http.NewRequestWithContext(context.Background(), "POST", base+"/api/v1/users", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		log.Fatalf("creating the user: %d %s", resp.StatusCode, b)
	}
}

// status reads one field of /proc/<pid>/status, in bytes (0 when the process is gone).
func status(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func waitReady(base string, done <-chan struct{}, logPath string) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			log.Fatalf("the server exited while starting:\n%s", b)
		default:
		}
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	log.Fatal("the server was not ready within 60 s")
}
