package hosts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Command is what a Proc runs, and runs again on Restart.
type Command struct {
	Name string   // names the log file <Dir>/<host>-<Name>.log
	Path string   // the binary
	Args []string // its arguments
	Env  []string // its whole environment; nil: this process's
	User string   // run as this user (setpriv), "" as root
}

// Proc is a process running in a host's network namespace, and in every other namespace
// of this process (it sees the same files, cgroups included). Its Pid is the program's
// own (nsenter and setpriv exec in place), so Kill hits the program and nothing else.
type Proc struct {
	Host    *Host
	Cmd     Command
	LogPath string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process has been reaped
	err  error         // its exit
}

// Start runs c in the host's namespace, its output appended to a log file. Close on the
// network kills it.
func (h *Host) Start(c Command) (*Proc, error) {
	if c.Name == "" {
		c.Name = filepath.Base(c.Path)
	}
	p := &Proc{Host: h, Cmd: c, LogPath: filepath.Join(h.net.Dir, h.Name+"-"+c.Name+".log")}
	if err := p.start(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p, nil
}

func (p *Proc) start() error {
	// nsenter, not ip netns exec: ip also remounts /sys for the namespace, which hides
	// /sys/fs/cgroup, and the bubblewrap runner of a worker needs it.
	args := []string{"--net=/run/netns/" + p.Host.NS}
	if p.Cmd.User != "" {
		u, err := user.Lookup(p.Cmd.User)
		if err != nil {
			return fmt.Errorf("hosts: %w", err)
		}
		args = append(args, "setpriv", "--reuid="+u.Uid, "--regid="+u.Gid, "--init-groups")
	}
	args = append(append(args, p.Cmd.Path), p.Cmd.Args...)
	log, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("hosts: %w", err)
	}
	fmt.Fprintf(log, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), p.Cmd.Path, strings.Join(p.Cmd.Args, " "))
	cmd := exec.Command("nsenter", args...)
	cmd.Env = p.Cmd.Env
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so a ^C to the test does not reach it before the cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("hosts: starting %s on %s: %w", p.Cmd.Name, p.Host.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.err = cmd, done, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		log.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Pid is the process id of the program (of its latest start).
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Exited reports whether the program has exited, and how.
func (p *Proc) Exited() (bool, error) {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Wait waits for the program to exit, until ctx ends.
func (p *Proc) Wait(ctx context.Context) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("hosts: %s on %s did not exit: %w", p.Cmd.Name, p.Host.Name, ctx.Err())
	}
}

// Kill sends SIGKILL (a crash: no chance to clean up) and waits until the process is
// reaped.
func (p *Proc) Kill() error {
	return p.signal(syscall.SIGKILL, 10*time.Second)
}

// Stop sends SIGTERM and waits up to grace for the program to exit. If it has not, Stop
// kills it and says so in its error.
func (p *Proc) Stop(grace time.Duration) error {
	err := p.signal(syscall.SIGTERM, grace)
	if err == nil {
		return nil
	}
	if kerr := p.Kill(); kerr != nil {
		return errors.Join(err, kerr)
	}
	return fmt.Errorf("%w; killed it", err)
}

func (p *Proc) signal(sig syscall.Signal, wait time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	select {
	case <-done:
		return nil
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("hosts: %s on %s: %w", p.Cmd.Name, p.Host.Name, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("hosts: %s on %s still runs %s after %v", p.Cmd.Name, p.Host.Name, wait, sig)
	}
}

// Restart starts the command again, killing the program first if it still runs.
func (p *Proc) Restart() error {
	if err := p.Kill(); err != nil {
		return err
	}
	return p.start()
}

// Log returns the last n bytes of the program's log (n <= 0: all of it).
func (p *Proc) Log(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if n > 0 && len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
