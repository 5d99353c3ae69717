package bwrap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A server that is root starts bwrap as the sandbox's unprivileged uid, and bwrap looks up
// every path it mounts as that uid (even --bind-fd ones, which it resolves with
// realpath), while the data dir is 0750 and must stay closed to it. So the server gives
// the sandbox a view: a private tmpfs at /run/skrip-<hash> (root's, 0711), where it
// bind-mounts exactly what a sandbox needs, as root: the shim and the root filesystem for
// the runner's life, a run's scratch directory (with its input and output) or a box's
// workspace for as long as one run or exec lasts. A server that is not root runs sandboxes
// as itself, reaches its own paths, and makes no view.

// viewParent is where views go: /run, where only root can plant a name and nothing ages
// files out; else the temporary directory.
func viewParent() string {
	if fi, err := os.Lstat("/run"); err == nil && fi.IsDir() && fi.Mode().Perm()&0o022 == 0 && owner(fi) == 0 {
		return "/run"
	}
	return os.TempDir()
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// makeView mounts a fresh view at dir (what a crashed server left there is detached
// first) with the runner's shim and, when it has one, its root filesystem.
func (r *Runner) makeView(dir string) error {
	syscall.Unmount(dir, syscall.MNT_DETACH)
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making the sandbox view %s: %w", dir, err)
	}
	// Under a world-writable parent someone else could have made the name first.
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || owner(fi) != 0 {
		return fmt.Errorf("the sandbox view %s exists and is not root's own directory; remove it", dir)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "size=1m,mode=0711"); err != nil {
		return fmt.Errorf("mounting the sandbox view %s: %w", dir, err)
	}
	// Private: what is mounted under the view is not propagated to other mount namespaces.
	if err := syscall.Mount("", dir, "", syscall.MS_PRIVATE, ""); err != nil {
		syscall.Unmount(dir, syscall.MNT_DETACH)
		return fmt.Errorf("making the sandbox view private: %w", err)
	}
	var m mounts
	err := m.bind(r.shimDir, filepath.Join(dir, "shim"))
	if err == nil && r.cfg.Rootfs != "" {
		err = m.bind(r.cfg.Rootfs, filepath.Join(dir, "rootfs"))
	}
	if err == nil {
		err = os.MkdirAll(filepath.Join(dir, "runs"), 0o711)
	}
	if err != nil {
		syscall.Unmount(dir, syscall.MNT_DETACH)
		return err
	}
	return nil
}

// mounts are the bind mounts one run or exec made, undone in reverse order when it ends.
type mounts []string

// bind mounts src (with what is mounted below it) on dst, a directory or file it makes.
func (m *mounts) bind(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.Mkdir(dst, 0o711)
	} else {
		err = os.WriteFile(dst, nil, 0o600)
	}
	if err != nil {
		return err
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		os.Remove(dst)
		return fmt.Errorf("bind-mounting %s for the sandbox: %w", src, err)
	}
	*m = append(*m, dst)
	return nil
}

// undo detaches the mounts, newest first, and removes their mount points.
func (m *mounts) undo() {
	for i := len(*m) - 1; i >= 0; i-- {
		syscall.Unmount((*m)[i], syscall.MNT_DETACH)
		os.Remove((*m)[i])
	}
	*m = nil
}

// share lets the sandbox's group have the permissions add of the server's file p
// (0o040: read), whatever the server's umask left: p becomes the group's, and stays no
// one else's on the host. A server that is not root runs sandboxes as itself: nothing to
// do.
func (r *Runner) share(p string, add fs.FileMode) error {
	if !r.drop {
		return nil
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if err := os.Lchown(p, -1, r.gid); err != nil {
		return err
	}
	return os.Chmod(p, fi.Mode().Perm()|add)
}

// shareTree shares dir, the server's own directory of input files, with the sandbox's
// group: directories readable and searchable, regular files readable. It holds no
// symlinks; any other kind of file is left alone.
func (r *Runner) shareTree(dir string) error {
	if !r.drop {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return r.share(p, 0o050)
		case d.Type().IsRegular():
			return r.share(p, 0o040)
		}
		return nil
	})
}

// cmdline is a bwrap command line being built: bwrap's options, the command it runs in
// the sandbox, and the files it passes by descriptor (files[i] is descriptor 3+i in
// bwrap).
type cmdline struct {
	args    []string
	command []string
	files   []*os.File
}

// fd passes f to bwrap and returns its descriptor number there.
func (c *cmdline) fd(f *os.File) string {
	c.files = append(c.files, f)
	return strconv.Itoa(2 + len(c.files))
}

// close closes the files passed; bwrap has its own copies once it has started.
func (c *cmdline) close() {
	for _, f := range c.files {
		f.Close()
	}
	c.files = nil
}

// sweepMounts detaches the mounts below dir that a crashed server left, deepest first.
func sweepMounts(dir string) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var found []string
	for _, line := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			found = append(found, f[4])
		}
	}
	for i := len(found) - 1; i >= 0; i-- {
		syscall.Unmount(found[i], syscall.MNT_DETACH)
	}
}
