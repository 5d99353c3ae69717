// Package shim embeds skrip's Python runner shim and the skrip_toolkit module tools import.
// A runner writes them to a directory it mounts read-only at Dir and starts Entry; the shim
// calls the tool's run_tool and writes result.json (SPEC §5).
package shim

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
)

// FS holds skrip_shim.py and skrip_toolkit.py.
//
//go:embed skrip_shim.py skrip_toolkit.py
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
	for _, name := range []string{"skrip_shim.py", "skrip_toolkit.py"} {
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
