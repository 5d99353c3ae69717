package hosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var (
	nsName     = regexp.MustCompile(`^sk([0-9a-f]{4})-\S+$`)
	bridgeName = regexp.MustCompile(`^skbr([0-9a-f]{4})$`)
)

// lock serialises making and reaping networks between processes (two test binaries may
// start at once).
func lock() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(StateDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("hosts: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("hosts: lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// Reap removes the networks whose owning process is gone, and namespaces or bridges that
// no state file claims. Errors are ignored: whatever is left, the next Reap tries again.
func Reap(ctx context.Context) {
	live := map[string]bool{}
	entries, _ := os.ReadDir(StateDir)
	for _, e := range entries {
		id := e.Name()
		if strings.HasPrefix(id, ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(StateDir, id))
		first, _, _ := strings.Cut(string(b), "\n")
		pid, perr := strconv.Atoi(strings.TrimSpace(first))
		if err == nil && perr == nil && alive(pid) {
			live[id] = true
			continue
		}
		teardownID(id, true)
	}
	ids := map[string]bool{}
	if out, err := output("ip", "netns", "list"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				if m := nsName.FindStringSubmatch(f[0]); m != nil {
					ids[m[1]] = true
				}
			}
		}
	}
	if out, err := output("ip", "-o", "link", "show", "type", "bridge"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				if m := bridgeName.FindStringSubmatch(strings.TrimSuffix(f[1], ":")); m != nil {
					ids[m[1]] = true
				}
			}
		}
	}
	for id := range ids {
		if !live[id] {
			teardownID(id, true)
		}
	}
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// teardownID kills the processes in network id's namespaces and deletes the namespaces,
// the bridge, the FORWARD rule and the state file; reaped, also the paths the state file
// lists after the owner's pid (ReapAlso).
func teardownID(id string, reaped bool) error {
	var errs []error
	if out, err := output("ip", "netns", "list"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || !strings.HasPrefix(f[0], "sk"+id+"-") {
				continue
			}
			killNS(f[0])
			if err := run(context.Background(), "ip", "netns", "del", f[0]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	br := "skbr" + id
	if _, err := output("ip", "link", "show", br); err == nil {
		if err := run(context.Background(), "ip", "link", "del", br); err != nil {
			errs = append(errs, err)
		}
	}
	rule := []string{"-i", br, "-o", br, "-j", "ACCEPT"}
	for range 10 { // one rule per New, but a reaper racing a crash could add none or two
		if _, err := output(append([]string{"iptables", "-w", "-C", "FORWARD"}, rule...)...); err != nil {
			break
		}
		if err := run(context.Background(), append([]string{"iptables", "-w", "-D", "FORWARD"}, rule...)...); err != nil {
			errs = append(errs, err)
			break
		}
	}
	state := filepath.Join(StateDir, id)
	if b, err := os.ReadFile(state); err == nil && reaped {
		lines := strings.Split(string(b), "\n")
		for _, p := range lines[1:] {
			if filepath.IsAbs(p) && filepath.Clean(p) != "/" {
				os.RemoveAll(p)
			}
		}
	}
	os.Remove(state)
	return errors.Join(errs...)
}

// killNS kills every process in namespace ns and waits up to 5 s for them to go.
func killNS(ns string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := output("ip", "netns", "pids", ns)
		if err != nil {
			return
		}
		pids := strings.Fields(out)
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeSubnet picks n such that no interface has an address in 10.88.n.0/24.
func freeSubnet() (int, error) {
	out, err := output("ip", "-4", "-o", "addr", "show")
	if err != nil {
		return 0, fmt.Errorf("hosts: ip addr show: %w", err)
	}
	used := map[int]bool{}
	for _, f := range strings.Fields(out) {
		var a, b, c, d int
		if _, err := fmt.Sscanf(f, "%d.%d.%d.%d", &a, &b, &c, &d); err == nil && a == 10 && b == 88 {
			used[c] = true
		}
	}
	start := int(time.Now().UnixNano()%250) + 1
	for i := range 250 {
		n := (start+i)%250 + 1
		if !used[n] {
			return n, nil
		}
	}
	return 0, errors.New("hosts: no free subnet in 10.88.0.0/16")
}
