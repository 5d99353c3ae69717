package runner

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Memory is how much memory the machine holding the sandboxes' workspaces has, and where
// that figure comes from (for messages).
type Memory struct {
	Bytes  int64
	Source string
}

// String reads "23.5 GiB (MemTotal of /proc/meminfo)".
func (m Memory) String() string { return HumanBytes(m.Bytes) + " (" + m.Source + ")" }

// HostMemory is this machine's memory as this process may use it: MemTotal of
// /proc/meminfo, or the memory limit of the process's cgroup (or of one above it) when
// that is lower.
func HostMemory() (Memory, error) {
	total, err := memTotal("/proc/meminfo")
	if err != nil {
		return Memory{}, err
	}
	m := Memory{Bytes: total, Source: "MemTotal of /proc/meminfo"}
	if limit, file := cgroupMemoryLimit(); limit > 0 && limit < m.Bytes {
		m = Memory{Bytes: limit, Source: "the memory limit of this server's cgroup, " + file}
	}
	return m, nil
}

// memTotal reads MemTotal from a /proc/meminfo file.
func memTotal(name string) (int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, fmt.Errorf("reading the machine's memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil || kb <= 0 {
			return 0, fmt.Errorf("%s: MemTotal %q is not a number of kB", name, rest)
		}
		return kb << 10, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(name + " has no MemTotal line")
}

// cgroupMemoryLimit returns the lowest memory limit set on this process's cgroup or on
// one above it, and the file that sets it; 0 when none is set or none can be read. It
// reads cgroup v2 (memory.max) and v1 (memory.limit_in_bytes). In a cgroup namespace the
// path of /proc/self/cgroup may not exist under /sys/fs/cgroup: the mount's own root is
// then the process's cgroup, and it is read too.
func cgroupMemoryLimit() (int64, string) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, ""
	}
	var best int64
	var where string
	consider := func(file string) {
		raw, err := os.ReadFile(file)
		if err != nil {
			return
		}
		v := strings.TrimSpace(string(raw))
		n, err := strconv.ParseInt(v, 10, 64)
		if v == "max" || err != nil || n <= 0 {
			return
		}
		if best == 0 || n < best {
			best, where = n, file
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var mount, file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			mount, file = "/sys/fs/cgroup", "memory.max"
		case slices.Contains(strings.Split(parts[1], ","), "memory"):
			mount, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for p := filepath.Clean("/" + parts[2]); ; p = filepath.Dir(p) {
			consider(filepath.Join(mount, p, file))
			if p == "/" {
				break
			}
		}
	}
	return best, where
}
