package rootfs

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// The binary embeds internal/runner/rootfs/build-rootfs.sh; deploy/runner/build-rootfs.sh
// is the copy people run by hand (a link to it), so the two must not drift.
func TestScriptMatchesDeployCopy(t *testing.T) {
	deployed, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "runner", "build-rootfs.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(deployed, script) {
		t.Fatal("deploy/runner/build-rootfs.sh and internal/runner/rootfs/build-rootfs.sh differ; keep them identical")
	}
}

// tree makes a directory with the given marker content ("-": no marker).
func tree(t *testing.T, marker string) string {
	t.Helper()
	dir := t.TempDir()
	if marker != "-" {
		if err := os.WriteFile(filepath.Join(dir, Marker), []byte(marker), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestInspect(t *testing.T) {
	tests := []struct {
		name, marker      string
		complete, current bool
		describe          string
	}{
		{"no marker", "-", false, false, "not built"},
		{"a bookworm tree's empty marker", "", true, false, "older recipe"},
		{"another recipe", "recipe=0123456789abcdef\ndebian=13\nsuite=trixie\n", true, false, "Debian 13, recipe 0123456789ab; this skrip's recipe is " + Recipe()[:12]},
		{"this recipe", "recipe=" + Recipe() + "\ndebian=13\nsuite=trixie\n", true, true, "(this skrip's)"},
		{"this recipe without a newline", "debian=13\nrecipe=" + Recipe(), true, true, "Debian 13"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Inspect(tree(t, tt.marker))
			if err != nil {
				t.Fatal(err)
			}
			if st.Complete != tt.complete || st.Current() != tt.current || !strings.Contains(st.Describe(), tt.describe) {
				t.Errorf("complete %v current %v %q; want %v %v and %q", st.Complete, st.Current(), st.Describe(), tt.complete, tt.current, tt.describe)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	built, empty := tree(t, "recipe=x\n"), tree(t, "-")
	tests := []struct{ configured, def, want string }{
		{"/srv/rootfs", built, "/srv/rootfs"}, // the setting wins
		{"", built, built},                    // else the default tree, when it is finished
		{"", empty, ""},                       // else the host's /usr
		{"", filepath.Join(empty, "none"), ""},
		{Host, built, ""}, // "host" asks for the host's /usr
	}
	for _, tt := range tests {
		if got := choose(tt.configured, tt.def); got != tt.want {
			t.Errorf("choose(%q, %q) = %q, want %q", tt.configured, tt.def, got, tt.want)
		}
	}
}

func TestPackages(t *testing.T) {
	status := `Package: python3
Status: install ok installed
Priority: optional
Version: 3.13.5-1
Description: interactive high-level object-oriented language
 Python, the high-level, interactive object oriented language,
 Version: 9.9 (a continuation line, not a field)

Package: pandoc
Status: deinstall ok config-files
Version: 3.1.11.1+ds-2

Package: libc6
Architecture: amd64
Version: 2.41-12
Status: install ok installed

Package: libc6
Architecture: i386
Version: 2.40-1
Status: install ok installed
Package: python3-docx
Status: install ok half-installed
Version: 1.1.2
`
	got, err := Packages(strings.NewReader(status))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"python3": "3.13.5-1", "libc6": "2.41-12"}
	if len(got) != len(want) {
		t.Errorf("Packages = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	rt := Runtime(got)
	if rt[0].Name != "Python" || rt[0].Version != "3.13.5-1" || rt[2].Name != "pandoc" || rt[2].Version != "" {
		t.Errorf("Runtime = %+v", rt)
	}
}

// TestReadRuntimeOnRootfs reads the real runner rootfs: every component of docs/spec.md §5b is
// there, with Python 3.13.
func TestReadRuntimeOnRootfs(t *testing.T) {
	dir := os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")
	if dir == "" {
		testutil.Missing(t, "docker", "SKRIP_TEST_RUNNER_ROOTFS is empty", "bash scripts/runner-image.sh, then set SKRIP_TEST_RUNNER_ROOTFS to the path it prints")
	}
	rt, err := ReadRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rt) != len(components) {
		t.Fatalf("Runtime has %d components, want %d", len(rt), len(components))
	}
	for _, c := range rt {
		if c.Version == "" {
			t.Errorf("%s (%s) is not installed in %s", c.Name, c.Package, dir)
		}
	}
	if !strings.HasPrefix(rt[0].Version, "3.13.") {
		t.Errorf("Python %q, want 3.13", rt[0].Version)
	}
	st, err := Inspect(dir)
	if err != nil || !st.Current() || st.Debian != Debian {
		t.Errorf("%s: %+v, %v; want a tree of this recipe, Debian %s", dir, st, err, Debian)
	}
}

// TestBuildIsRecipeAware runs the real script against trees in every state, with a mirror
// that refuses connections so no download happens: a tree of this recipe is kept as it
// is, a tree of another recipe (or of none, like the Debian 12 trees) is rebuilt (the
// attempt reaches debootstrap) and left whole when that fails, and a folder that is not a
// tree is refused.
func TestBuildIsRecipeAware(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the build needs root; run the tests as root")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		t.Skip("debootstrap not installed: apt-get install debootstrap")
	}
	t.Setenv("SKRIP_DEBIAN_MIRROR", "http://127.0.0.1:1/debian")
	build := func(dir string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out bytes.Buffer
		err := Build(ctx, dir, &out)
		return out.String(), err
	}
	current := "recipe=" + Recipe() + "\ndebian=13\nsuite=trixie\n"
	for _, marker := range []string{"", "recipe=0123\ndebian=13\n"} {
		dir := tree(t, marker)
		os.WriteFile(filepath.Join(dir, "old-file"), []byte("old"), 0o644)
		out, err := build(dir)
		if err == nil || !strings.Contains(out, "debootstrap trixie into "+dir+".tmp failed") {
			t.Errorf("a tree with marker %q: %v\n%s\nwant a rebuild that reaches debootstrap", marker, err, out)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "old-file")); err != nil || string(b) != "old" {
			t.Errorf("the failed rebuild did not leave the old tree whole: %v", err)
		}
		if _, err := os.Stat(dir + ".tmp"); err == nil {
			os.RemoveAll(dir + ".tmp")
		}
	}

	dir := tree(t, current)
	if out, err := build(dir); err != nil || out != "" {
		t.Errorf("a tree of this recipe: %v %q; want nothing done", err, out)
	}

	dir = tree(t, "-")
	os.WriteFile(filepath.Join(dir, "mine"), nil, 0o644)
	if out, err := build(dir); err == nil || !strings.Contains(out, "is not a finished rootfs") {
		t.Errorf("a folder that is not a tree: %v %q; want a refusal", err, out)
	}
}

// recipeLists reads build-rootfs.sh's packages (base= and packages="...") and the modules
// its last check imports, each sorted.
func recipeLists(t *testing.T, sh string) (pkgs, mods []string) {
	t.Helper()
	base := regexp.MustCompile(`(?m)^base=(\S+)$`).FindStringSubmatch(sh)
	list := regexp.MustCompile(`(?ms)^packages="([^"]*)"`).FindStringSubmatch(sh)
	imp := regexp.MustCompile(`(?m)^import (weasyprint[^\n]*)$`).FindStringSubmatch(sh)
	if base == nil || list == nil || imp == nil {
		t.Fatalf("build-rootfs.sh: no base=, packages=\"...\" or import line (%v %v %v)", base != nil, list != nil, imp != nil)
	}
	pkgs = append(strings.Split(base[1], ","), strings.Fields(list[1])...)
	return sorted(pkgs), sorted(strings.Split(imp[1], ","))
}

// dockerfileLists reads the Dockerfile's apt-get install list and the modules its check
// imports, each sorted.
func dockerfileLists(t *testing.T, df string) (pkgs, mods []string) {
	t.Helper()
	list := regexp.MustCompile(`(?s)apt-get install -y --no-install-recommends \\\n(.*?)&&`).FindStringSubmatch(df)
	imp := regexp.MustCompile(`python3 -c 'import ([^;']*)`).FindStringSubmatch(df)
	if list == nil || imp == nil {
		t.Fatalf("Dockerfile: no apt-get install list or import check (%v %v)", list != nil, imp != nil)
	}
	return sorted(strings.Fields(strings.ReplaceAll(list[1], `\`, " "))), sorted(strings.Split(imp[1], ","))
}

func sorted(xs []string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// deploy/runner/Dockerfile builds the same environment as the recipe, for networks with a
// registry: the same packages, and the same modules checked.
func TestDockerfileFollowsRecipe(t *testing.T) {
	df, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "runner", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	wantPkgs, wantMods := recipeLists(t, string(script))
	gotPkgs, gotMods := dockerfileLists(t, string(df))
	if !reflect.DeepEqual(gotPkgs, wantPkgs) {
		t.Errorf("deploy/runner/Dockerfile installs %v;\nbuild-rootfs.sh installs %v", gotPkgs, wantPkgs)
	}
	if !reflect.DeepEqual(gotMods, wantMods) {
		t.Errorf("deploy/runner/Dockerfile checks the modules %v;\nbuild-rootfs.sh checks %v", gotMods, wantMods)
	}
	if !strings.Contains(string(df), "internal/runner/rootfs/build-rootfs.sh") {
		t.Error("deploy/runner/Dockerfile does not name its recipe, internal/runner/rootfs/build-rootfs.sh")
	}
}
