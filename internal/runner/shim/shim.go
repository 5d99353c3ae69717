// Package shim embeds skrip's Python runner shim and the modules tools import: skrip's own
// skrip_toolkit and the original hub's skriptoteket_toolkit, tool_errors and pdf_helper
// (docs/spec.md §5b). A runner writes them to a directory it mounts read-only at Dir and starts
// Entry; the shim puts that directory on sys.path, calls the tool's run_tool and writes
// result.json (docs/spec.md §5).
package shim

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FS holds the shim and the modules, at its top: a runner copies every file of it.
//
//go:embed *.py
var FS embed.FS

// Dir is where the runner mounts the shim inside the sandbox.
const Dir = "/skrip"

// Entry is the shim's path inside the sandbox. The runner runs it as
// python3 -s -B /skrip/skrip_shim.py, with cwd /work and contract.Env as environment.
const Entry = Dir + "/skrip_shim.py"

// Args returns the arguments to python3 that start the shim.
func Args() []string { return []string{"-s", "-B", Entry} }

// WriteTo writes the shim's files into dir, creating it if needed, readable by all (the
// sandbox runs as another user). Each file is replaced whole, by rename, so a sandbox
// that mounts dir meanwhile never sees half a file.
func WriteTo(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := fs.ReadDir(FS, ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		data, err := FS.ReadFile(name)
		if err != nil {
			return err
		}
		tmp, err := os.CreateTemp(dir, "."+name+".*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(data)
		cerr := tmp.Close()
		if err := firstErr(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
