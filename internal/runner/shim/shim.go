// Package shim embeds skrip's Python runner shim and the modules tools import: skrip's own
// skrip_toolkit and the original hub's skriptoteket_toolkit, tool_errors and pdf_helper
// (docs/spec.md §5b), and under bin/ the commands a run finds first on its PATH: a pandoc
// wrapper that takes pandoc 3.8's options. A runner writes them to a directory it mounts
// read-only at Dir and starts Entry; the shim puts that directory on sys.path, calls the
// tool's run_tool and writes result.json (docs/spec.md §5).
package shim

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// FS holds the shim and the modules at its top, and under bin/ the commands a run finds
// first on its PATH (the pandoc wrapper): a runner copies every file of it, as Walk
// gives them.
//
//go:embed *.py bin/pandoc
var FS embed.FS

// Dir is where the runner mounts the shim inside the sandbox.
const Dir = "/skrip"

// Entry is the shim's path inside the sandbox. The runner runs it as
// python3 -s -B /skrip/skrip_shim.py, with cwd /work and contract.Env as environment.
const Entry = Dir + "/skrip_shim.py"

// Bin is where a run finds the shim's commands, inside Dir. A runner that puts the shim
// elsewhere puts that directory's bin/ first on PATH instead (runner.RunEnv).
const Bin = Dir + "/bin"

// Walk calls fn for each directory and file of FS, parents first, with the mode it gets
// in the sandbox: directories and commands (bin/) 0755, modules 0644. name is
// slash-separated and relative to FS's top.
func Walk(fn func(name string, mode fs.FileMode, data []byte) error) error {
	return fs.WalkDir(FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		if d.IsDir() {
			return fn(name, fs.ModeDir|0o755, nil)
		}
		data, err := FS.ReadFile(name)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if path.Dir(name) == "bin" {
			mode = 0o755
		}
		return fn(name, mode, data)
	})
}

// Args returns the arguments to python3 that start the shim.
func Args() []string { return []string{"-s", "-B", Entry} }

// WriteTo writes the shim's files into dir, creating it if needed, readable by all (the
// sandbox runs as another user) and the commands executable. Each file is replaced whole, by rename, so a sandbox
// that mounts dir meanwhile never sees half a file.
func WriteTo(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return Walk(func(name string, mode fs.FileMode, data []byte) error {
		if mode.IsDir() {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			return os.Chmod(p, mode.Perm())
		}
		sub, base := filepath.Join(dir, filepath.FromSlash(path.Dir(name))), path.Base(name)
		tmp, err := os.CreateTemp(sub, "."+base+".*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(data)
		cerr := tmp.Close()
		if err := firstErr(werr, cerr, os.Chmod(tmp.Name(), mode.Perm())); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if err := os.Rename(tmp.Name(), filepath.Join(sub, base)); err != nil {
			os.Remove(tmp.Name())
			return err
		}
		return nil
	})
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
