package cli

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/runner/docker"
	"github.com/skrip-dev/skrip/internal/runner/rootfs"
	"github.com/skrip-dev/skrip/internal/testutil"
)

func doctorWith(t *testing.T, vars map[string]string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if vars["SKRIP_DATA_DIR"] == "" {
		vars["SKRIP_DATA_DIR"] = t.TempDir()
	}
	if code := Main(context.Background(), []string{"doctor"}, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] }); code != 0 {
		t.Fatalf("doctor: %d %s", code, errOut.String())
	}
	// Columns are aligned with runs of spaces: one is enough to compare.
	return regexp.MustCompile(` {2,}`).ReplaceAllString(out.String(), " ")
}

// wantRuntime checks that the doctor's Runtime section lists every component with the
// version the real tree holds.
func wantRuntime(t *testing.T, out, dir string) {
	t.Helper()
	rt, err := rootfs.ReadRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	section := out[strings.Index(out, "\nRuntime ("):]
	for _, c := range rt {
		if c.Version == "" {
			t.Fatalf("%s lacks %s", dir, c.Package)
		}
		line := ""
		for _, l := range strings.Split(section, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), c.Name+" ") {
				line = l
			}
		}
		if !strings.Contains(line, c.Version) || !strings.Contains(line, c.Package) {
			t.Errorf("doctor's line for %s is %q, want version %s of %s", c.Name, line, c.Version, c.Package)
		}
	}
	// pandoc's own version, as `pandoc --version` says it, with how 3.8's options reach it.
	var pandoc string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "pandoc's version ") {
			pandoc = l
		}
	}
	if !strings.Contains(pandoc, " 3.1.") || strings.Contains(pandoc, "+ds") || !strings.Contains(pandoc, "--syntax-highlighting") {
		t.Errorf("doctor's line for pandoc's version is %q", pandoc)
	}
	if !strings.Contains(section, "Python ") || !strings.Contains(section, " 3.13.") {
		t.Errorf("doctor does not report Python 3.13:\n%s", section)
	}
}

// TestDoctorRuntimeOnRootfs: with the bwrap runner on the runner rootfs, doctor names the
// tree, says it is of this skrip's recipe, and reports Python and every package's version.
func TestDoctorRuntimeOnRootfs(t *testing.T) {
	dir := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if dir == "" {
		testutil.Missing(t, "docker", "SKRIP_TEST_RUNNER_ROOTFS is empty", "bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
	}
	out := doctorWith(t, map[string]string{"SKRIP_RUNNER": "bwrap", "SKRIP_BWRAP_ROOTFS": dir})
	for _, want := range []string{"root " + dir + ";", "runtime current", "Debian 13, recipe " + rootfs.Recipe()[:12],
		"Runtime (" + dir + ", read from its /var/lib/dpkg/status)"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "WARNING") {
		t.Errorf("doctor warns on the current rootfs:\n%s", out)
	}
	wantRuntime(t, out, dir)
}

// TestDoctorWarnsOnHostUsr: on the host's /usr (SKRIP_BWRAP_ROOTFS=host), doctor warns
// and says how to get the runtime.
func TestDoctorWarnsOnHostUsr(t *testing.T) {
	out := doctorWith(t, map[string]string{"SKRIP_RUNNER": "bwrap", "SKRIP_BWRAP_ROOTFS": "host"})
	if strings.Contains(out, "bwrap unavailable") {
		testutil.Missing(t, "bwrap", "bwrap unavailable", "apt-get install bubblewrap python3")
	}
	for _, want := range []string{"root the host's /usr;", "runtime WARNING", "the host's /usr is a fallback", "scripts/deps.sh",
		"skrip runner-image build", rootfs.DefaultDir, "Runtime (the host's /usr, read from /var/lib/dpkg/status)", "Python "} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
}

// TestDoctorRuntimeOnDocker: with the Docker runner, doctor reads the runtime from the
// image itself, not from a tree on the host.
func TestDoctorRuntimeOnDocker(t *testing.T) {
	image := cmp.Or(os.Getenv("SKRIP_TEST_RUNNER_IMAGE"), docker.DefaultImage())
	dir := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if dir == "" {
		testutil.Missing(t, "docker", "SKRIP_TEST_RUNNER_ROOTFS is empty", "bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
	}
	out := doctorWith(t, map[string]string{"SKRIP_RUNNER": "docker", "SKRIP_RUNNER_IMAGE": image})
	if strings.Contains(out, "docker unavailable") {
		testutil.Missing(t, "docker", "the engine or the image "+image+" is missing", "a running Docker engine and `skrip runner-image build`")
	}
	want := "Runtime (image " + image + ", read from its own /var/lib/dpkg/status)"
	if !strings.Contains(out, want) {
		t.Errorf("doctor lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "WARNING") {
		t.Errorf("doctor warns on an image of this recipe:\n%s", out)
	}
	// The image was imported from the tree, so their packages agree.
	wantRuntime(t, out, dir)
}

// TestDoctorFindsTheDefaultRootfs: with SKRIP_BWRAP_ROOTFS empty, the bwrap runner takes
// the rootfs scripts/deps.sh prepares, when it is built.
func TestDoctorFindsTheDefaultRootfs(t *testing.T) {
	if st, err := rootfs.Inspect(rootfs.DefaultDir); err != nil || !st.Complete {
		testutil.Missing(t, "docker", "no runner rootfs in "+rootfs.DefaultDir, "bash scripts/deps.sh")
	}
	out := doctorWith(t, map[string]string{"SKRIP_RUNNER": "bwrap"})
	for _, want := range []string{"root " + rootfs.DefaultDir + ";", "Runtime (" + rootfs.DefaultDir + ", read from"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
}

func TestUpstreamVersion(t *testing.T) {
	for v, want := range map[string]string{
		"3.1.11.1+ds-2":    "3.1.11.1",
		"1:3.1.11.1+ds-2":  "3.1.11.1",
		"3.8-1~bpo13+1":    "3.8",
		"2.17.1.1-2~deb12": "2.17.1.1",
		"3.8":              "3.8",
	} {
		if got := upstreamVersion(v); got != want {
			t.Errorf("upstreamVersion(%q) = %q, want %q", v, got, want)
		}
	}
}
