package shim

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakePandoc writes the wrapper into a temp dir with its /usr/bin/pandoc replaced by a
// script that prints its arguments one per NUL, copies stdin to stdout after them, and
// exits 3: what the wrapper hands the real pandoc, and that it keeps streams and code.
func fakePandoc(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("sh not available: apt-get install dash")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "real-pandoc")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nfor a do printf '%s\\0' \"$a\"; done\ncat\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := FS.ReadFile("bin/pandoc")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(src, []byte("exec /usr/bin/pandoc ")); n != 1 {
		t.Fatalf("the wrapper execs /usr/bin/pandoc %d times, want once", n)
	}
	wrapper := filepath.Join(dir, "pandoc")
	if err := os.WriteFile(wrapper, bytes.Replace(src, []byte("exec /usr/bin/pandoc "), []byte("exec "+fake+" "), 1), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

func TestPandocWrapperTranslates(t *testing.T) {
	wrapper := fakePandoc(t)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"none", []string{"-f", "markdown", "--syntax-highlighting=none", "-t", "html"}, []string{"-f", "markdown", "--no-highlight", "-t", "html"}},
		{"none, value apart", []string{"--syntax-highlighting", "none", "in.md"}, []string{"--no-highlight", "in.md"}},
		{"default", []string{"--syntax-highlighting=default", "-o", "x.html"}, []string{"-o", "x.html"}},
		{"default, value apart", []string{"--syntax-highlighting", "default"}, []string{}},
		{"idiomatic", []string{"-t", "latex", "--syntax-highlighting=idiomatic"}, []string{"-t", "latex", "--listings"}},
		{"style", []string{"--syntax-highlighting=tango"}, []string{"--highlight-style=tango"}},
		{"style, value apart", []string{"--syntax-highlighting", "zenburn", "-s"}, []string{"--highlight-style=zenburn", "-s"}},
		{"theme file with a space", []string{"--syntax-highlighting", "my style.theme"}, []string{"--highlight-style=my style.theme"}},
		{"3.1's own options", []string{"--highlight-style=kate", "--no-highlight", "--listings"}, []string{"--highlight-style=kate", "--no-highlight", "--listings"}},
		{"everything else unchanged", []string{"a b.md", "line\nbreak", "", "-M", "title=x=y", "--syntax-highlightingx"}, []string{"a b.md", "line\nbreak", "", "-M", "title=x=y", "--syntax-highlightingx"}},
		{"file names after --", []string{"--syntax-highlighting=none", "--", "--syntax-highlighting=none"}, []string{"--no-highlight", "--", "--syntax-highlighting=none"}},
		{"no value: pandoc says so", []string{"-s", "--syntax-highlighting"}, []string{"-s", "--syntax-highlighting"}},
		{"no arguments", nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(wrapper, c.args...)
			cmd.Stdin = strings.NewReader("# stdin\n")
			out, err := cmd.Output()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("exit: %v, want the real pandoc's 3", err)
			}
			i := bytes.LastIndexByte(out, 0)
			if got := string(out[i+1:]); got != "# stdin\n" {
				t.Errorf("stdin reached pandoc as %q", got)
			}
			got := []string{}
			if i >= 0 {
				got = strings.Split(string(out[:i]), "\x00")
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("pandoc %q reaches 3.1 as %q, want %q", c.args, got, c.want)
			}
		})
	}
}
