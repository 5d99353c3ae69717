package docker

// This file copies a run's files: the inputs and the shim in as a tar, result.json and
// /work/output out as a checked tar stream.

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/shim"
)

// maxResultBytes caps how much of result.json is read.
const maxResultBytes = 8 << 20

// inputTar packs what the run sees under /work: script.py, memory.json, input/ and the
// shim under .skrip/ (all root's, read-only to the tool, which runs as 65534) and
// result.json.
func inputTar(spec runner.Spec, env []byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	add := tarAdder(tw, now)
	if err := add("script.py", 0o444, 0, spec.Script); err != nil {
		return nil, err
	}
	if err := add("memory.json", 0o444, 0, runner.MemoryJSON(spec.Memory)); err != nil {
		return nil, err
	}
	// Copied-in files belong to root: result.json is the one the tool may write.
	if err := add("result.json", 0o666, 0, nil); err != nil {
		return nil, err
	}
	if err := add(".skrip/", 0o755, 0, nil); err != nil {
		return nil, err
	}
	if err := add(".skrip/env", 0o444, 0, env); err != nil {
		return nil, err
	}
	if err := addShim(add); err != nil {
		return nil, err
	}
	if err := add("input/", 0o755, 0, nil); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(spec.InputDir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		f, err := os.Open(filepath.Join(spec.InputDir, e.Name()))
		if err != nil {
			return nil, err
		}
		st, _ := f.Stat()
		h := &tar.Header{Name: "input/" + e.Name(), Mode: 0o444, ModTime: now, Size: st.Size(), Typeflag: tar.TypeReg}
		err = tw.WriteHeader(h)
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	return &buf, tw.Close()
}

// tarAdder returns a function that writes one member to tw: a directory when name ends
// in "/", else a regular file holding body.
func tarAdder(tw *tar.Writer, now time.Time) func(name string, mode int64, uid int, body []byte) error {
	return func(name string, mode int64, uid int, body []byte) error {
		h := &tar.Header{Name: name, Mode: mode, Uid: uid, Gid: uid, ModTime: now, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
}

// addShim adds the shim's files under .skrip/.
func addShim(add func(name string, mode int64, uid int, body []byte) error) error {
	// Read-only to the tool: the modules 0444, the commands (bin/) 0555.
	return shim.Walk(func(name string, mode fs.FileMode, data []byte) error {
		if mode.IsDir() {
			return add(".skrip/"+name+"/", 0o755, 0, nil)
		}
		return add(".skrip/"+name, int64(mode.Perm()&0o555), 0, data)
	})
}

// shimTar packs .skrip/ with the shim's files as inputTar does, for a warm container,
// whose Python starts before its run's files come.
func shimTar() (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := tarAdder(tw, time.Now())
	if err := add(".skrip/", 0o755, 0, nil); err != nil {
		return nil, err
	}
	if err := addShim(add); err != nil {
		return nil, err
	}
	return &buf, tw.Close()
}

// collect streams result.json and /work/output out in one tar, made by tar(1) inside the
// container (the engine's copy API cannot see a tmpfs mounted in the container), into a
// temporary directory, hands the output to fn (when set) and returns result.json. Every
// member is checked: only regular files, directories and symlinks (kept as links, never
// followed), no absolute names or "..". Regular files go through an OutputBudget of
// limit, in path order (tar sorts them), and the ones left out are returned. tar keeps
// holes as holes (-S), so a sparse file costs the stream only what it holds.
func (r *Runner) collect(ctx context.Context, id string, limit int64, fn func(dir string) error) ([]byte, runner.LeftOut, error) {
	ex, err := r.cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"tar", "-C", "/work", "--sort=name", "-S", "-cf", "-", "result.json", "output"},
		AttachStdout: true, AttachStderr: true})
	if err != nil {
		return nil, runner.LeftOut{}, fmt.Errorf("copying /work/output out: %w", err)
	}
	att, err := r.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return nil, runner.LeftOut{}, fmt.Errorf("copying /work/output out: %w", err)
	}
	defer att.Close()
	pr, pw := io.Pipe()
	var tarErr bytes.Buffer
	go func() {
		_, err := stdcopy.StdCopy(pw, &limitedWriter{w: &tarErr, n: 64 << 10}, att.Reader)
		pw.CloseWithError(err)
	}()
	dir, err := os.MkdirTemp("", "skrip-output-")
	if err != nil {
		return nil, runner.LeftOut{}, err
	}
	defer os.RemoveAll(dir)
	budget := runner.OutputBudget{Limit: limit}
	result, err := extract(tar.NewReader(pr), dir, &budget)
	if err != nil {
		pr.CloseWithError(err)
		return nil, runner.LeftOut{}, err
	}
	io.Copy(io.Discard, pr)
	if tarErr.Len() > 0 {
		// tar reports files it could not read (the run's own permissions); what it
		// could read is still collected.
		r.log.Warn("tar of /work/output", "stderr", strings.TrimSpace(tarErr.String()))
	}
	if fn == nil {
		return result, budget.LeftOut, nil
	}
	return result, budget.LeftOut, fn(dir)
}

// limitedWriter keeps the first n bytes written to it and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// extract unpacks a tar of result.json and output/ into dir (output's members at its
// top) and returns result.json's bytes. The tar comes from inside the container, so it
// is the tool's to shape: every path is resolved through an os.Root, which no symlink or
// ".." can leave, and symlinks are recreated as links only, for the caller to report.
// A regular file is written only when budget keeps it.
func extract(tr *tar.Reader, dir string, budget *runner.OutputBudget) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var result []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return result, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the output tar: %w", err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if name == "result.json" && (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeGNUSparse) {
			if result, err = io.ReadAll(io.LimitReader(tr, maxResultBytes+1)); err != nil {
				return nil, err
			}
			continue
		}
		if name == "output" {
			continue
		}
		rel, ok := strings.CutPrefix(name, "output/")
		if !ok || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("output tar member %q leaves /work/output", h.Name)
		}
		if d := path.Dir(rel); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return nil, fmt.Errorf("output tar member %q: %w", h.Name, err)
			}
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(rel, 0o755); err != nil {
				return nil, fmt.Errorf("output tar member %q: %w", h.Name, err)
			}
		case tar.TypeSymlink:
			if err := root.Symlink(h.Linkname, rel); err != nil {
				return nil, fmt.Errorf("output tar member %q: %w", h.Name, err)
			}
		case tar.TypeReg, tar.TypeGNUSparse:
			if !budget.Keep(rel, h.Size) {
				continue
			}
			f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return nil, fmt.Errorf("output tar member %q: %w", h.Name, err)
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			f.Close()
			if err != nil {
				return nil, err
			}
		default:
			// Devices, fifos and hard links are not artifacts: leave them out.
		}
	}
}
