package bwrap

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/skrip-dev/skrip/internal/runner"
)

// A persistent sandbox lives in <WorkDir>/sandboxes/<id>: box.json holds its spec and
// workspace/ is its /workspace, a tmpfs of the box's quota that the server mounts (so
// sandboxes need a server that may mount: root). It outlives a server restart, not a
// reboot. Each exec is a fresh bwrap over that directory, in a cgroup of its own.

func (r *Runner) boxDir(id string) (string, error) {
	if id == "" || strings.ContainsAny(id, `/\.`) || strings.ContainsRune(id, 0) {
		return "", fmt.Errorf("sandbox id %q is not a plain name", id)
	}
	return filepath.Join(r.cfg.WorkDir, "sandboxes", id), nil
}

// loadBox returns box id's spec and its workspace directory, or ErrNoBox.
func (r *Runner) loadBox(id string) (runner.BoxSpec, string, error) {
	dir, err := r.boxDir(id)
	if err != nil {
		return runner.BoxSpec{}, "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "box.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return runner.BoxSpec{}, "", fmt.Errorf("sandbox %s: %w", id, runner.ErrNoBox)
	}
	if err != nil {
		return runner.BoxSpec{}, "", err
	}
	var spec runner.BoxSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return runner.BoxSpec{}, "", fmt.Errorf("sandbox %s: box.json: %w", id, err)
	}
	return spec, filepath.Join(dir, "workspace"), nil
}

// CreateBox implements runner.Sandboxes.
func (r *Runner) CreateBox(ctx context.Context, spec runner.BoxSpec) error {
	dir, err := r.boxDir(spec.ID)
	if err != nil {
		return err
	}
	if !r.tmpfsOut {
		// A workspace on the data disk would be capped per file only: an exec could fill
		// the disk the database and the staged files live on.
		return fmt.Errorf("%w: on bubblewrap each sandbox's /workspace is a tmpfs of its quota, which only a server running as root can mount; run skrip serve as root, or use the Docker runner (SKRIP_RUNNER=docker)", runner.ErrNoSandboxes)
	}
	// 0700: what a sandbox leaves in its workspace (a setuid file, say) is no one else's
	// to reach on the host.
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("creating sandbox %s: %w", spec.ID, err)
	}
	ws := filepath.Join(dir, "workspace")
	ok := false
	defer func() {
		if !ok {
			r.removeDir(dir)
		}
	}()
	if err := os.Mkdir(ws, 0o755); err != nil {
		return err
	}
	// The sandbox's uid owns its workspace; no one else on the host may look in.
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700,uid=%d,gid=%d",
		runner.WorkspaceSize(spec.WorkspaceBytes), runner.WorkspaceInodes(spec.WorkspaceBytes), r.uid, r.gid)
	if err := syscall.Mount("tmpfs", ws, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting the workspace tmpfs: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	// box.json is written last: a box without it is one whose creation did not finish.
	if err := writeAtomic(filepath.Join(dir, "box.json"), b); err != nil {
		return err
	}
	ok = true
	return nil
}

// own hands p, which the server made in a workspace, to the sandbox's uid: what the
// server writes there, the sandbox may change like its own files.
func (r *Runner) own(root *os.Root, p string) error {
	if !r.drop {
		return nil
	}
	return root.Lchown(p, r.uid, r.gid)
}

// missing lists dir and those of its parents that do not exist in root yet, outermost
// first.
func missing(root *os.Root, dir string) []string {
	var out []string
	for d := dir; d != "." && d != "/"; d = path.Dir(d) {
		if _, err := root.Lstat(d); err == nil {
			break
		}
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}

func writeAtomic(name string, b []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// removeDir unmounts a box's workspace (when it is a mount) and removes the box.
func (r *Runner) removeDir(dir string) error {
	syscall.Unmount(filepath.Join(dir, "workspace"), syscall.MNT_DETACH)
	return os.RemoveAll(dir)
}

// RemoveBox implements runner.Sandboxes.
func (r *Runner) RemoveBox(ctx context.Context, id string) error {
	dir, err := r.boxDir(id)
	if err != nil {
		return err
	}
	if err := r.removeDir(dir); err != nil {
		return fmt.Errorf("removing sandbox %s: %w", id, err)
	}
	return nil
}

// Boxes implements runner.Sandboxes. A box whose workspace should be a tmpfs but is not
// mounted any more (the machine restarted) is lost: it is removed and not listed.
func (r *Runner) Boxes(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(r.cfg.WorkDir, "sandboxes"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		dir := filepath.Join(r.cfg.WorkDir, "sandboxes", e.Name())
		_, _, err := r.loadBox(e.Name())
		if err == nil && !isMount(filepath.Join(dir, "workspace")) {
			err = errors.New("its workspace tmpfs is gone")
		}
		if err == nil {
			err = r.handOver(filepath.Join(dir, "workspace"))
		}
		if err != nil {
			r.log.Info("removing a sandbox that did not survive", "sandbox", e.Name(), "reason", err)
			r.removeDir(dir)
			continue
		}
		out = append(out, e.Name())
	}
	return out, nil
}

// handOver gives a workspace that another sandbox uid owns (a box made before an upgrade
// or under another SKRIP_BWRAP_UID) to this server's, file by file.
func (r *Runner) handOver(ws string) error {
	fi, err := os.Lstat(ws)
	if err != nil || !r.drop || owner(fi) == r.uid {
		return err
	}
	r.log.Info("handing a sandbox's workspace to the sandbox uid", "workspace", ws, "uid", r.uid)
	return filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, r.uid, r.gid)
	})
}

// isMount reports whether dir is a mount point (its device differs from its parent's).
func isMount(dir string) bool {
	var a, b syscall.Stat_t
	if syscall.Stat(dir, &a) != nil || syscall.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// BoxEnforcement implements runner.Sandboxes.
func (r *Runner) BoxEnforcement(l runner.Limits, workspaceBytes int64) []runner.Enforced {
	out := []runner.Enforced{{Limit: "wall time", How: "per exec (timeout_s), then SIGKILL of the exec's whole sandbox", OK: true}}
	out = append(out, r.limiter.enforced(l)...)
	if r.tmpfsOut {
		out = append(out, runner.Enforced{Limit: "/workspace", How: fmt.Sprintf("%s tmpfs of at most %d files and directories, mounted by the server, kept between execs",
			runner.HumanBytes(workspaceBytes), runner.WorkspaceInodes(workspaceBytes)), OK: true})
	} else {
		out = append(out, runner.Enforced{Limit: "/workspace", How: "cannot be enforced: the server is not root, so it cannot mount a workspace tmpfs; agent sandboxes are refused (run as root, or use Docker)"})
	}
	return append(out,
		runner.Enforced{Limit: "/tmp", How: runner.HumanBytes(l.TmpBytes) + " tmpfs, new for each exec", OK: true},
		runner.Enforced{Limit: "stdout/stderr", How: fmt.Sprintf("first %d bytes of each kept per exec", l.LogBytes), OK: true},
		runner.Enforced{Limit: "network", How: "own network namespace with only loopback, new for each exec", OK: true},
		r.hostUID(), syscalls)
}

// Memory implements runner.Sandboxes: the workspaces are tmpfs mounts of this machine.
func (r *Runner) Memory(ctx context.Context) (runner.Memory, error) { return runner.HostMemory() }

// Exec implements runner.Sandboxes: a fresh bwrap over the box's workspace, in its own
// pid namespace, so that killing it at the timeout ends everything the command started.
func (r *Runner) Exec(ctx context.Context, id string, spec runner.ExecSpec) (runner.ExecResult, error) {
	box, ws, err := r.loadBox(id)
	if err != nil {
		return runner.ExecResult{}, err
	}
	if len(spec.Cmd) == 0 {
		return runner.ExecResult{}, errors.New("exec needs a command")
	}
	l := box.Limits
	l.WallTime, l.LogBytes = spec.Timeout, spec.LogBytes
	name := id + "-" + randomHex(4)
	src := ws
	var m mounts
	defer m.undo()
	if r.view != "" {
		src = filepath.Join(r.view, "runs", name)
		if err := m.bind(ws, src); err != nil {
			return runner.ExecResult{}, err
		}
	}
	tmp := strconv.FormatInt(max(l.TmpBytes, 4096), 10)
	c := &cmdline{}
	if err := r.baseArgs(c); err != nil {
		return runner.ExecResult{}, err
	}
	c.args = append(c.args, "--size", tmp, "--tmpfs", "/tmp",
		"--size", tmp, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--bind", src, runner.Workspace,
		"--remount-ro", "/",
		"--chdir", runner.Workspace)
	c.args = setenv(c.args, runner.Env(runner.Workspace, nil))
	c.command = runner.ExecArgv(spec.Cmd)
	var stdin io.Reader
	if spec.Stdin != nil {
		stdin = bytes.NewReader(spec.Stdin)
	}
	return r.execute(ctx, process{name: name, cmd: c, limits: l, stdin: stdin, onLine: spec.OnLine})
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// WriteFile implements runner.Sandboxes. The server writes on the host through an
// os.Root of the workspace, after resolving the path's symlinks as the sandbox sees them.
func (r *Runner) WriteFile(ctx context.Context, id, p string, src io.Reader) (int64, error) {
	rel, err := runner.CleanPath(p)
	if err != nil {
		return 0, err
	}
	box, ws, err := r.loadBox(id)
	if err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	target, err := resolve(ctx, root, rel)
	if err != nil {
		return 0, err
	}
	if fi, err := root.Lstat(target); err == nil && fi.IsDir() {
		return 0, runner.Refuse(runner.ErrPath, "%s is a directory", p)
	}
	if dir := path.Dir(target); dir != "." {
		made := missing(root, dir)
		err := root.MkdirAll(dir, 0o755)
		for _, d := range made {
			if err == nil {
				err = r.own(root, d)
			}
		}
		if err != nil {
			if errors.Is(err, syscall.ENOSPC) || errors.Is(err, fs.ErrPermission) {
				return 0, fsError(err, p)
			}
			return 0, runner.Refuse(runner.ErrPath, "cannot make the directory %s: %v", dir, pathErr(err))
		}
	}
	tmp := path.Join(path.Dir(target), ".skrip-partial-"+randomHex(8))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, fsError(err, p)
	}
	n, err := io.Copy(f, runner.ContextReader(ctx, src))
	if err == nil && r.drop {
		err = f.Chown(r.uid, r.gid)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, target)
	}
	if err != nil {
		root.Remove(tmp)
		if errors.Is(err, syscall.ENOSPC) {
			return n, runner.Refuse(runner.ErrNoSpace, "%s does not fit in the workspace's %s", p, runner.HumanBytes(box.WorkspaceBytes))
		}
		var pe *fs.PathError
		var le *os.LinkError
		if errors.As(err, &pe) || errors.As(err, &le) {
			return n, fsError(err, p)
		}
		return n, err
	}
	return n, nil
}

// ReadFile implements runner.Sandboxes.
func (r *Runner) ReadFile(ctx context.Context, id, p string) (io.ReadCloser, int64, error) {
	rel, err := runner.CleanPath(p)
	if err != nil {
		return nil, 0, err
	}
	_, ws, err := r.loadBox(id)
	if err != nil {
		return nil, 0, err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	target, err := resolve(ctx, root, rel)
	if err != nil {
		return nil, 0, err
	}
	// O_NONBLOCK: a fifo planted in the workspace must not hang the server. (os.Root
	// follows a last symlink that stays inside; resolve left none, unless one raced in.)
	f, err := root.OpenFile(target, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, runner.Refuse(runner.ErrNoFile, "%s", p)
	}
	if err != nil {
		return nil, 0, fsError(err, p)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		if st.IsDir() {
			return nil, 0, runner.Refuse(runner.ErrPath, "%s is a directory, not a file", p)
		}
		return nil, 0, runner.Refuse(runner.ErrPath, "%s is not a regular file", p)
	}
	return runner.Exactly(f, st.Size(), p), st.Size(), nil
}

// Caps of resolve.
const (
	maxDepth    = 128
	maxSegments = 1024
)

// resolve follows the symlinks of the clean relative path rel inside root as the sandbox
// sees them: a relative target from the link's directory, an absolute one under
// /workspace as that path, anything else as leaving. It returns a path with no symlink
// left in it (its last segments may not exist yet), or ErrPath when it leads out.
//
// Each Lstat walks from the root, so a walk costs its depth squared: the depth and the
// segments looked at (symlink targets included) are capped, and ctx is checked.
func resolve(ctx context.Context, root *os.Root, rel string) (string, error) {
	todo := strings.Split(rel, "/")
	var done []string
	hops, seen := 0, 0
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if seen++; seen > maxSegments || len(done) >= maxDepth {
			return "", runner.Refuse(runner.ErrPath, "%s is deeper than %d directories, or its symlinks lead through more than %d segments", rel, maxDepth, maxSegments)
		}
		seg := todo[0]
		todo = todo[1:]
		switch seg {
		case "", ".":
			continue
		case "..":
			if len(done) == 0 {
				return "", runner.Refuse(runner.ErrPath, "%s leads outside %s through a symlink", rel, runner.Workspace)
			}
			done = done[:len(done)-1]
			continue
		}
		cur := path.Join(append(done, seg)...)
		fi, err := root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			done = append(done, seg)
			continue
		}
		if err != nil {
			return "", fsError(err, rel)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, seg)
			continue
		}
		if hops++; hops > 40 {
			return "", runner.Refuse(runner.ErrPath, "%s goes through too many symlinks", rel)
		}
		target, err := root.Readlink(cur)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			t := path.Clean(target)
			rest, ok := strings.CutPrefix(t, runner.Workspace)
			if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) {
				return "", runner.Refuse(runner.ErrPath, "%s is a symlink to %s, outside %s", cur, target, runner.Workspace)
			}
			done, target = nil, strings.TrimPrefix(rest, "/")
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return "", runner.Refuse(runner.ErrPath, "%s names %s itself, not a file in it", rel, runner.Workspace)
	}
	return path.Join(done...), nil
}

// fsError names what the sandbox did to path p that the server cannot work with (a file
// it made unreadable, a socket, a full workspace) as the caller's problem; anything else
// is passed on.
func fsError(err error, p string) error {
	cause := pathErr(err)
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return runner.Refuse(runner.ErrNoSpace, "%s does not fit in the workspace", p)
	case errors.Is(err, fs.ErrPermission):
		return runner.Refuse(runner.ErrPath, "%s: permission denied (the sandbox changed its permissions)", p)
	case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENAMETOOLONG):
		return runner.Refuse(runner.ErrPath, "%s: %v", p, cause)
	}
	return err
}

// pathErr is the cause of a path error without the path (which is the host's).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

var _ runner.Sandboxes = (*Runner)(nil)
