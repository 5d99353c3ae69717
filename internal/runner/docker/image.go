package docker

// This file makes the runner image without a registry: the runner rootfs (package rootfs)
// streamed as a tar into the engine's image import.

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/version"
)

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

// LabelRecipe is the image label that records the recipe (rootfs.Recipe) of the tree the
// image was imported from, so that an image of an older recipe is imported again.
const LabelRecipe = "skrip.rootfs.recipe"

// ImportImage streams the rootfs directory dir into the engine as an image tagged ref, with
// the labels skrip.runner=1, skrip.version and skrip.rootfs.recipe (from the tree's
// marker), user 65534:65534 and workdir /work. It returns the image id.
func ImportImage(ctx context.Context, cli *client.Client, dir, ref string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "usr/bin/python3")); err != nil {
		return "", fmt.Errorf("%s is not a runner rootfs (build it with `skrip runner-image build`): %w", dir, err)
	}
	st, err := rootfs.Inspect(dir)
	if err != nil {
		return "", err
	}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(imageWriteTar(ctx, dir, pw))
	}()
	// The tar writer stops as soon as the import does, whatever the reason.
	defer func() {
		pr.Close()
		<-done
	}()

	labels := fmt.Sprintf("LABEL skrip.runner=1 skrip.version=%q org.opencontainers.image.title=skrip-runner", version.Version)
	if st.Recipe != "" {
		labels += fmt.Sprintf(" %s=%q", LabelRecipe, st.Recipe)
	}
	changes := []string{
		labels,
		"USER 65534:65534",
		"WORKDIR /work",
		"ENV PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8",
	}
	resp, err := cli.ImageImport(ctx, client.ImageImportSource{Source: pr, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: changes, Message: "skrip runner rootfs " + version.Version})
	if err != nil {
		return "", fmt.Errorf("importing %s as %s: %w", dir, ref, err)
	}
	defer resp.Close()
	if err := imageReadProgress(resp); err != nil {
		return "", fmt.Errorf("importing %s as %s: %w", dir, ref, err)
	}
	img, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspecting the imported image %s: %w", ref, err)
	}
	return img.ID, nil
}

// ImageRecipe returns the recipe label of the image ref ("" when it has none: an image
// imported before the label existed, or not made by skrip).
func ImageRecipe(ctx context.Context, cli *client.Client, ref string) (string, error) {
	img, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", ref, err)
	}
	if img.Config == nil {
		return "", nil
	}
	return img.Config.Labels[LabelRecipe], nil
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
		if rel == "." || rel == rootfs.Marker {
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
