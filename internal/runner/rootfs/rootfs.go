// Package rootfs owns the runner's root filesystem: the recipe that builds it
// (build-rootfs.sh, embedded), where skrip looks for it, whether a tree is finished and
// built from this recipe, and which runtime it holds (read from its dpkg database). The
// bwrap runner mounts the tree as the sandbox's root; the Docker runner's image is imported
// from it.
package rootfs

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed" // build-rootfs.sh
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// script is deploy/runner/build-rootfs.sh (a link to this file), embedded so the binary
// can build the rootfs without the repository.
//
//go:embed build-rootfs.sh
var script []byte

// Marker is the file build-rootfs.sh writes last into a finished tree. It holds lines
// "recipe=<sha256 of the script>", "debian=13" and "suite=trixie". It is build
// bookkeeping, so it stays out of the Docker image.
const Marker = ".skrip-rootfs-complete"

// Debian is the Debian release the recipe builds.
const Debian = "13"

// DefaultDir is where scripts/deps.sh and `skrip runner-image build` put the rootfs, and
// where the bwrap runner finds it when SKRIP_BWRAP_ROOTFS is empty. The release is in the
// name, so a tree of an older release (runner-rootfs, Debian 12) is never taken for it.
const DefaultDir = "/var/cache/skrip/runner-rootfs-" + Debian

// Recipe is the sha256 (hex) of the embedded build script: a tree whose marker names
// another recipe was built by another version of the script.
func Recipe() string {
	sum := sha256.Sum256(script)
	return hex.EncodeToString(sum[:])
}

// State is what a directory's marker says about the tree in it.
type State struct {
	Dir string
	// Complete: the marker is there, so the build finished.
	Complete bool
	// Recipe and Debian come from the marker; trees built before the marker held them
	// have neither.
	Recipe, Debian string
}

// Current reports whether the tree is finished and was built by this binary's recipe.
func (s State) Current() bool { return s.Complete && s.Recipe == Recipe() }

// Describe says in a few words what the tree is, for `skrip doctor` and the CLI.
func (s State) Describe() string {
	switch {
	case !s.Complete:
		return "not built"
	case s.Current():
		return fmt.Sprintf("Debian %s, recipe %s (this skrip's)", s.Debian, short(s.Recipe))
	case s.Recipe == "":
		return "built by an older recipe (no recipe recorded)"
	default:
		return fmt.Sprintf("Debian %s, recipe %s; this skrip's recipe is %s", cmp.Or(s.Debian, "?"), short(s.Recipe), short(Recipe()))
	}
}

// Inspect reads dir's marker. A missing marker is not an error: the State says so.
func Inspect(dir string) (State, error) {
	st := State{Dir: dir}
	f, err := os.Open(filepath.Join(dir, Marker))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	defer f.Close()
	st.Complete = true
	sc := bufio.NewScanner(io.LimitReader(f, 4096))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "recipe":
			st.Recipe = v
		case "debian":
			st.Debian = v
		}
	}
	return st, sc.Err()
}

// Host is the SKRIP_BWRAP_ROOTFS value that asks for the host's /usr even when the
// runner rootfs is built.
const Host = "host"

// Choose returns the root the bwrap runner mounts: the configured one when set (Host: the
// host's /usr), else DefaultDir when a finished tree is there, else "" (the host's /usr, a
// fallback that `skrip doctor` warns about).
func Choose(configured string) string { return choose(configured, DefaultDir) }

func choose(configured, def string) string {
	if configured == Host {
		return ""
	}
	if configured != "" {
		return configured
	}
	if st, err := Inspect(def); err == nil && st.Complete {
		return def
	}
	return ""
}

// Build builds the runner's root filesystem into dir with the embedded script: Debian 13
// from debootstrap with Python 3.13 and the packages tools use. It returns at once when
// dir holds a tree of this recipe, and rebuilds a tree of another one. It needs root and
// bash, and streams the script's output to out.
func Build(ctx context.Context, dir string, out io.Writer) error {
	if dir == "" {
		return errors.New("build rootfs: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The script hashes itself ($0) for the marker, so it runs from a file holding
	// exactly the embedded bytes.
	f, err := os.CreateTemp("", "skrip-build-rootfs-*.sh")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(script); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "/bin/bash", f.Name(), abs)
	cmd.Stdout, cmd.Stderr = out, out
	// Cancelling stops debootstrap and its children too, not only bash.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the runner rootfs in %s: %w", abs, err)
	}
	return nil
}

func short(recipe string) string {
	if len(recipe) > 12 {
		return recipe[:12]
	}
	return recipe
}
