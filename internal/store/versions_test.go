package store

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestVersionNotesAndNumbers: a version keeps its note; a tool's versions are numbered
// 1, 2, 3… as they are made, each tool on its own, also when many are saved at once; the
// summaries list them newest first with the status of each one's latest sandbox run.
func TestVersionNotesAndNumbers(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		if err := s.CreateUser(ctx, newUser("u_a", "anna", RoleAuthor)); err != nil {
			t.Fatal(err)
		}
		ver := func(id, tool, note string, at time.Time) ToolVersion {
			return ToolVersion{ID: id, ToolID: tool, Source: "src " + id, Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: at, Note: note}
		}
		for _, tl := range []string{"t_1", "t_2"} {
			if _, err := s.CreateTool(ctx, Tool{ID: tl, Slug: tl[2:], Title: tl, AuthorID: "u_a", CreatedAt: now, UpdatedAt: now},
				ver("v_"+tl+"_1", tl, "första", now), false); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateVersion(ctx, ver("v_t_1_2", "t_1", "Rättade stavningen", now.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
		v, err := s.ToolVersion(ctx, "v_t_1_2")
		if err != nil || v.Number != 2 || v.Note != "Rättade stavningen" {
			t.Fatalf("second version: %+v %v", v, err)
		}
		if v, _ := s.ToolVersion(ctx, "v_t_2_1"); v.Number != 1 || v.Note != "första" {
			t.Fatalf("another tool's first version: %+v", v)
		}
		// Many saves at once take distinct numbers, 3 to 12.
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for i := range 10 {
			wg.Go(func() {
				errs <- s.CreateVersion(ctx, ver(fmt.Sprintf("v_c%d", i), "t_1", "", now.Add(2*time.Second)))
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		list, err := s.VersionSummaries(ctx, "t_1")
		if err != nil || len(list) != 12 {
			t.Fatalf("summaries: %d %v", len(list), err)
		}
		for i, v := range list {
			if v.Number != 12-i {
				t.Fatalf("summary %d has number %d; want %d (%+v)", i, v.Number, 12-i, list)
			}
		}
		// The latest sandbox run of a version, by its context; a production run of it
		// does not count.
		run := func(id, version, context, status string, at time.Time) {
			t.Helper()
			if err := s.CreateRun(ctx, Run{ID: id, ToolID: "t_1", VersionID: version, UserID: "u_a", Context: context, Kind: KindInitial,
				Status: status, CreatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		run("r_1", "v_t_1_1", "sandbox:v_t_1_1", StatusSucceeded, now)
		run("r_2", "v_t_1_1", "sandbox:v_t_1_1", StatusFailed, now.Add(time.Second))
		run("r_3", "v_t_1_1", "default", StatusSucceeded, now.Add(2*time.Second))
		run("r_4", "v_t_1_2", "default", StatusSucceeded, now)
		list, _ = s.VersionSummaries(ctx, "t_1")
		first, second := list[len(list)-1], list[len(list)-2]
		if first.ID != "v_t_1_1" || first.LastSandboxStatus != StatusFailed || first.Note != "första" || first.CreatorName != "anna" || !first.CreatedAt.Equal(now) {
			t.Errorf("version 1: %+v", first)
		}
		if second.ID != "v_t_1_2" || second.LastSandboxStatus != "" {
			t.Errorf("version 2 has no sandbox run: %+v", second)
		}
	})
}

// TestVersionNumbersMigration: migration 34 numbers the versions a database holds
// already by (created_at, id), each tool from 1.
func TestVersionNumbersMigration(t *testing.T) {
	ctx := context.Background()
	for _, d := range []Dialect{SQLite, Postgres} {
		t.Run(string(d), func(t *testing.T) {
			var s *Store
			var err error
			gd := goose.DialectSQLite3
			if d == SQLite {
				s, err = openSQLite(ctx, filepath.Join(t.TempDir(), "skrip.db"))
			} else {
				s, err = openPostgres(ctx, testutil.PostgresURL(t))
				gd = goose.DialectPostgres
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			dir, _ := fs.Sub(migrations, "migrations/"+string(d))
			p, err := goose.NewProvider(gd, s.db, dir)
			if err != nil {
				t.Fatal(err)
			}
			// 32 is the last version on main before version numbers.
			if _, err := p.UpTo(ctx, 32); err != nil {
				t.Fatal(err)
			}
			if err := s.CreateUser(ctx, newUser("u_a", "anna", RoleAuthor)); err != nil {
				t.Fatal(err)
			}
			now := ms(time.Now())
			seedToolSQL(t, s, "t_1", "")
			seedToolSQL(t, s, "t_2", "")
			want := map[string]int{}
			for _, v := range []struct {
				id, tool string
				at       int64
				number   int
			}{{"v_b", "t_1", now, 3}, {"v_a", "t_1", now, 2}, {"v_c", "t_1", now - 1000, 1}, {"v_z", "t_2", now, 1}} {
				if _, err := s.exec(ctx, "INSERT INTO tool_versions (id, tool_id, source, entrypoint, created_by, created_at) VALUES (?, ?, 'x', 'run_tool', 'u_a', ?)",
					v.id, v.tool, v.at); err != nil {
					t.Fatal(err)
				}
				want[v.id] = v.number
			}
			if err := s.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for id, n := range want {
				if v, err := s.ToolVersion(ctx, id); err != nil || v.Number != n || v.Note != "" {
					t.Errorf("%s: number %d note %q, %v; want %d", id, v.Number, v.Note, err, n)
				}
			}
			// The next version goes on from there.
			if err := s.CreateVersion(ctx, ToolVersion{ID: "v_d", ToolID: "t_1", Source: "y", Entrypoint: "run_tool", CreatedBy: "u_a", CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			if v, _ := s.ToolVersion(ctx, "v_d"); v.Number != 4 {
				t.Errorf("next version: number %d; want 4", v.Number)
			}
		})
	}
}

// seedToolSQL stores tool id of user u_a, and its version versionID unless that is "",
// in the columns every migration has had since tools came: for tests that migrate a
// database part of the way, where CreateTool would name columns not there yet.
func seedToolSQL(t *testing.T, s *Store, id, versionID string) {
	t.Helper()
	ctx := context.Background()
	now := ms(time.Now())
	if _, err := s.exec(ctx, "INSERT INTO tools (id, slug, title, description, author_id, created_at, updated_at) VALUES (?, ?, ?, '', 'u_a', ?, ?)",
		id, id[2:], id, now, now); err != nil {
		t.Fatal(err)
	}
	if versionID == "" {
		return
	}
	if _, err := s.exec(ctx, "INSERT INTO tool_versions (id, tool_id, source, entrypoint, created_by, created_at) VALUES (?, ?, 'def run_tool(i, o): pass', 'run_tool', 'u_a', ?)",
		versionID, id, now); err != nil {
		t.Fatal(err)
	}
}
