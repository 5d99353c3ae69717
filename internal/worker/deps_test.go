package worker_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A worker never holds the database URL (docs/cluster.md), so it links no SQL: not
// internal/store, and no SQL driver. It reaches the API nodes through
// internal/dispatch/protocol, never through dispatch, which is the API node's side and
// holds the store.

// sqlModules are the SQL drivers and migration tools a worker must not link: the ones
// go.mod has, and the usual others, should one come in.
var sqlModules = []string{
	"github.com/jackc/pgx",
	"modernc.org/sqlite",
	"github.com/pressly/goose",
	"github.com/lib/pq",
	"github.com/mattn/go-sqlite3",
	"github.com/go-sql-driver/mysql",
}

// sqlUsers may import database/sql without being a driver: Prometheus's collector of a
// database handle's statistics, which internal/metrics links with the rest of
// collectors.
var sqlUsers = map[string]bool{"github.com/prometheus/client_golang/prometheus/collectors": true}

// pkg is one package of `go list -deps`.
type pkg struct {
	path     string
	standard bool
	imports  []string
}

// listDeps runs `go list -deps` on pattern at the module's root.
func listDeps(t *testing.T, pattern string) []pkg {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}} {{join .Imports \" \"}}", pattern)
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", pattern, err, stderr)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("go list printed %q", line)
		}
		pkgs = append(pkgs, pkg{path: f[0], standard: f[1] == "true", imports: f[2:]})
	}
	return pkgs
}

func TestWorkerLinksNoSQL(t *testing.T) {
	pkgs := listDeps(t, "./internal/worker")
	var found bool
	for _, p := range pkgs {
		found = found || p.path == "github.com/skrip-dev/skrip/internal/dispatch/protocol"
		if strings.HasSuffix(p.path, "/internal/store") || strings.Contains(p.path, "/internal/store/") {
			t.Errorf("the worker links %s", p.path)
		}
		if p.path == "github.com/skrip-dev/skrip/internal/dispatch" {
			t.Errorf("the worker links %s, the API node's side of the protocol", p.path)
		}
		for _, m := range sqlModules {
			if p.path == m || strings.HasPrefix(p.path, m+"/") {
				t.Errorf("the worker links the SQL package %s", p.path)
			}
		}
		// A driver registers itself with database/sql: one not named above shows here.
		if !p.standard && !sqlUsers[p.path] {
			for _, imp := range p.imports {
				if imp == "database/sql" {
					t.Errorf("the worker links %s, which imports database/sql", p.path)
				}
			}
		}
	}
	if !found {
		t.Errorf("the worker does not link internal/dispatch/protocol; `go list -deps` printed %d packages", len(pkgs))
	}
}

// protocolLeaves are the packages of the module the protocol may link: leaves that hold
// no state and reach no database, NATS or service. A package joins this list only when
// that stays true; anything else the protocol needs belongs in it or in a leaf.
var protocolLeaves = map[string]bool{
	"internal/dispatch/protocol": true,
	"internal/runjob":            true,
	"internal/runner":            true,
	"internal/contract":          true,
	"internal/blob":              true,
	"internal/errs":              true,
}

func TestProtocolImportsOnlyLeaves(t *testing.T) {
	const module = "github.com/skrip-dev/skrip/"
	for _, p := range listDeps(t, "./internal/dispatch/protocol") {
		if rel, ok := strings.CutPrefix(p.path, module); ok && !protocolLeaves[rel] {
			t.Errorf("internal/dispatch/protocol links %s, which is not a leaf", rel)
		}
	}
}
