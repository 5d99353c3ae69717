package docker

// This file makes the runner image without a registry: a debootstrap rootfs (the embedded
// build-rootfs.sh) streamed as a tar into the engine's image import.

import (
	"archive/tar"
	"context"
	_ "embed" // build-rootfs.sh
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/version"
)

// imageBuildScript is deploy/runner/build-rootfs.sh, embedded so the binary can build the
// rootfs without the repository.
//
//go:embed build-rootfs.sh
var imageBuildScript []byte

// imageMarker is the file build-rootfs.sh leaves in a finished rootfs; it is build
// bookkeeping, so it stays out of the image.
const imageMarker = ".skrip-rootfs-complete"

// DefaultImage is the image name for this build: "skrip-runner:" + version.Version.
// Characters a tag cannot hold (such as "+" in build metadata) become "_".
func DefaultImage() string {
	tag := []byte(version.Version)
	for i, c := range tag {
		ok := c == '_' || c == '.' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !ok || i == 0 && (c == '.' || c == '-') {
			tag[i] = '_'
		}
	}
	if len(tag) > 128 {
		tag = tag[:128]
	}
	return "skrip-runner:" + string(tag)
}

// ImageExists reports whether the engine has the image (by reference).
func ImageExists(ctx context.Context, cli *client.Client, ref string) (bool, error) {
	_, err := cli.ImageInspect(ctx, ref)
	switch {
	case err == nil:
		return true, nil
	case cerrdefs.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("inspecting image %s: %w", ref, err)
	}
}

// BuildRootfs builds the runner's root filesystem into dir, as deploy/runner/build-rootfs.sh
// does (it is that script, embedded): Debian bookworm from debootstrap with python3,
// WeasyPrint and fonts. It returns at once when dir is already complete. It needs root and
// bash, and streams the script's output to out.
func BuildRootfs(ctx context.Context, dir string, out io.Writer) error {
	if dir == "" {
		return errors.New("build rootfs: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "skrip-build-rootfs-*.sh")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(imageBuildScript); err != nil {
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

// ImportImage streams the rootfs directory into the engine as an image tagged ref, with the
// labels skrip.runner=1 and skrip.version, user 65534:65534 and workdir /work. It returns
// the image id.
func ImportImage(ctx context.Context, cli *client.Client, rootfs, ref string) (string, error) {
	if _, err := os.Stat(filepath.Join(rootfs, "usr/bin/python3")); err != nil {
		return "", fmt.Errorf("%s is not a runner rootfs (build it with `skrip runner-image build`): %w", rootfs, err)
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(imageWriteTar(ctx, rootfs, pw))
	}()
	// The tar writer stops as soon as the import does, whatever the reason.
	defer func() {
		pr.Close()
		<-done
	}()

	changes := []string{
		fmt.Sprintf("LABEL skrip.runner=1 skrip.version=%q org.opencontainers.image.title=skrip-runner", version.Version),
		"USER 65534:65534",
		"WORKDIR /work",
		"ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8",
	}
	resp, err := cli.ImageImport(ctx, client.ImageImportSource{Source: pr, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: changes, Message: "skrip runner rootfs " + version.Version})
	if err != nil {
		return "", fmt.Errorf("importing %s as %s: %w", rootfs, ref, err)
	}
	defer resp.Close()
	if err := imageReadProgress(resp); err != nil {
		return "", fmt.Errorf("importing %s as %s: %w", rootfs, ref, err)
	}
	img, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspecting the imported image %s: %w", ref, err)
	}
	return img.ID, nil
}

// imageReadProgress drains the engine's JSON message stream and returns the first error it
// reports.
func imageReadProgress(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading the engine's answer: %w", err)
		}
		if m.Error != nil {
			return m.Error
		}
	}
}

// imageWriteTar writes the tree under root to w as a tar: regular files, directories,
// symlinks, hard links, devices and fifos, with their modes and numeric owners. Sockets
// are left out (a tar cannot hold them), and so is what is mounted inside the tree. archive/tar has no directory walker of its own,
// and the engine needs the numeric ids kept as they are, so this is written here.
func imageWriteTar(ctx context.Context, root string, w io.Writer) error {
	tw := tar.NewWriter(w)
	type inode struct{ dev, ino uint64 }
	seen := map[inode]string{}
	rootDev := uint64(0)
	if fi, err := os.Stat(root); err != nil {
		return err
	} else if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		rootDev = uint64(st.Dev)
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel == "." || rel == imageMarker {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		// Owners are numeric inside the image; the host's names for them mean nothing there.
		hdr.Uname, hdr.Gname = "", ""
		skipDir := false
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			hdr.Uid, hdr.Gid = int(st.Uid), int(st.Gid)
			// Like tar --one-file-system: a /proc or /sys left mounted in the tree is an
			// empty directory in the image.
			skipDir = fi.IsDir() && uint64(st.Dev) != rootDev
			if fi.Mode().IsRegular() && st.Nlink > 1 {
				key := inode{uint64(st.Dev), st.Ino}
				if first, ok := seen[key]; ok {
					hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
				} else {
					seen[key] = hdr.Name
				}
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if skipDir {
			return fs.SkipDir
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		return imageCopyFile(tw, path)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// imageCopyFile writes the content of the file at path to w.
func imageCopyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
