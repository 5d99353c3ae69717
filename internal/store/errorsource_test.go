package store

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestRunErrorSource: where a run's error came from is stored with the run and read
// back, by every way a run ends: recorded with it, ended by a node for its lost worker
// (the runner's), failed by a restart (the runner's), cancelled (none). A value outside
// the five is refused by the database. The reason (error_reason, migration 00033) is
// stored and read back by each of those ways too.
func TestRunErrorSource(t *testing.T) {
	eachDialect(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now().Truncate(time.Millisecond)
		seedRunTool(t, s, now)
		record := func(id, status, source string) error {
			r := queuedRun(id, now)
			if err := s.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.ClaimRun(ctx, id, 1, "w1", now); !ok || err != nil {
				t.Fatalf("ClaimRun(%s) = %v, %v", id, ok, err)
			}
			r.Status, r.ErrorSummary, r.ErrorSource, r.FinishedAt = status, "why", source, &now
			if source != "" {
				r.ErrorReason = `{"code":"` + source + `"}`
			}
			_, ok, err := s.RecordRun(ctx, r, 1, nil)
			if err == nil && !ok {
				t.Fatalf("RecordRun(%s) recorded nothing", id)
			}
			return err
		}
		want := map[string]string{}
		for i, c := range []struct{ status, source string }{
			{StatusFailed, SourceTool}, {StatusFailed, SourceCrash}, {StatusFailed, SourceRunner}, {StatusFailed, SourcePolicy},
			{StatusFailed, SourceInput}, {StatusTimedOut, SourceRunner}, {StatusSucceeded, ""}, {StatusCancelled, ""},
		} {
			id := fmt.Sprintf("r_%d", i)
			if err := record(id, c.status, c.source); err != nil {
				t.Fatalf("recording %s with the source %q: %v", c.status, c.source, err)
			}
			want[id] = c.source
		}
		for id, source := range want {
			if got, err := s.GetRun(ctx, id); err != nil || got.ErrorSource != source {
				t.Errorf("GetRun(%s): source %q, %v; want %q", id, got.ErrorSource, err, source)
			} else if wantReason := map[bool]string{true: `{"code":"` + source + `"}`}[source != ""]; got.ErrorReason != wantReason {
				t.Errorf("GetRun(%s): reason %q; want %q", id, got.ErrorReason, wantReason)
			}
		}
		listed, err := s.ListRuns(ctx, RunFilter{Limit: 100})
		if err != nil || len(listed) != len(want) {
			t.Fatalf("ListRuns = %d runs, %v", len(listed), err)
		}
		for _, r := range listed {
			if r.ErrorSource != want[r.ID] {
				t.Errorf("ListRuns: %s has the source %q; want %q", r.ID, r.ErrorSource, want[r.ID])
			}
		}
		if err := record("r_bad", StatusFailed, "the tool"); err == nil {
			t.Error("a source outside tool, crash, runner, policy and input was stored")
		}

		// EndRun: a lost worker's run failed for the runner's reason; a cancelled one has none.
		for _, c := range []struct{ id, status, want string }{{"r_lost", StatusFailed, SourceRunner}, {"r_gone", StatusCancelled, ""}} {
			if err := s.CreateRun(ctx, queuedRun(c.id, now)); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.EndRun(ctx, c.id, c.status, "worker lost", `{"code":"worker_lost"}`, now); !ok || err != nil {
				t.Fatalf("EndRun(%s) = %v, %v", c.id, ok, err)
			}
			if got, _ := s.GetRun(ctx, c.id); got.Status != c.status || got.ErrorSource != c.want || got.ErrorReason != `{"code":"worker_lost"}` {
				t.Errorf("ended %s: %s with the source %q, reason %q; want %s, %q", c.id, got.Status, got.ErrorSource, got.ErrorReason, c.status, c.want)
			}
		}
		// A restart fails what it finds unfinished, queued or running (r_bad, whose
		// record was refused): the runner's.
		if err := s.CreateRun(ctx, queuedRun("r_restart", now)); err != nil {
			t.Fatal(err)
		}
		if n, err := s.FailUnfinishedRuns(ctx, "interrupted by server restart", `{"code":"restart"}`, now); n != 2 || err != nil {
			t.Fatalf("FailUnfinishedRuns = %d, %v", n, err)
		}
		for _, id := range []string{"r_restart", "r_bad"} {
			if got, _ := s.GetRun(ctx, id); got.Status != StatusFailed || got.ErrorSource != SourceRunner || got.ErrorReason != `{"code":"restart"}` {
				t.Errorf("%s after a restart: %s with the source %q; want failed, runner", id, got.Status, got.ErrorSource)
			}
		}
		// A queued run cancelled has no source either.
		if err := s.CreateRun(ctx, queuedRun("r_cq", now)); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.CancelQueuedRun(ctx, "r_cq", "cancelled", now); !ok {
			t.Fatal("CancelQueuedRun refused a queued run")
		}
		if got, _ := s.GetRun(ctx, "r_cq"); got.ErrorSource != "" {
			t.Errorf("a cancelled queued run has the source %q", got.ErrorSource)
		}
	})
}

// TestErrorSourceMigration: runs recorded before error_source get theirs once, from the
// summaries skrip itself wrote (old words too); any other failure is the tool's own
// message, as the page read it; runs that did not fail get none.
func TestErrorSourceMigration(t *testing.T) {
	ctx := context.Background()
	runs := []struct{ status, summary, want string }{
		{"failed", "Tool execution failed (ValueError).", "crash"},
		{"failed", "Tool execution was interrupted (KeyboardInterrupt).", "crash"},
		{"failed", "The script defines no function run_tool(input_dir, output_dir).", "crash"},
		{"failed", "run_tool returned int; return a str or a dict", "crash"},
		{"failed", "run_tool's outputs, next_actions or state are not JSON-serialisable (ValueError: it contains itself).", "crash"},
		{"failed", "Execution failed (runner contract violation): status is missing", "policy"},
		{"failed", "runner contract violation: status is missing", "policy"},
		{"failed", "The tool ended without a result (exit code 1); see stderr.", "policy"},
		{"failed", "the sandbox failed: see the server log", "runner"},
		{"failed", "the run's artifacts could not be stored: see the server log", "runner"},
		{"failed", "could not read the run's input files", "runner"},
		{"failed", "the tool succeeded but its session could not be saved; see the server log", "runner"},
		{"failed", "memory limit exceeded (256 MiB)", "runner"},
		{"failed", "interrupted by server restart", "runner"},
		{"failed", "worker lost: the run was tried on 2 workers, and each stopped answering", "runner"},
		{"failed", "not queued: the server that took it stopped before it reached the queue; run it again", "runner"},
		{"failed", "the worker could not fetch the run's files: see its log", "runner"},
		{"failed", "the worker's report of the run could not be read", "runner"},
		{"failed", "Filen saknar kolumnen 'namn'.", "tool"},
		{"failed", "tool execution failed, said the tool", "tool"}, // not skrip's words: case counts
		{"failed", "Ett fel inträffade.", "tool"},
		{"timed_out", "Execution timed out after 1m0s", "runner"},
		{"succeeded", "", ""},
		{"cancelled", "cancelled", ""},
		{"queued", "", ""},
	}
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
			// 25 is the last version without error_source.
			if _, err := p.UpTo(ctx, 25); err != nil {
				t.Fatal(err)
			}
			now := time.Now().Truncate(time.Millisecond)
			// The tool in the columns of migration 25 (CreateTool names later ones).
			if err := s.CreateUser(ctx, newUser("u_a", "author", RoleAuthor)); err != nil {
				t.Fatal(err)
			}
			seedToolSQL(t, s, "t_1", "v_1")
			for i, r := range runs {
				if _, err := s.exec(ctx, `INSERT INTO runs (id, tool_id, version_id, user_id, context, kind, status, error_summary, created_at)
					VALUES (?, 't_1', 'v_1', 'u_a', 'default', 'initial', ?, ?, ?)`, fmt.Sprintf("r_%02d", i), r.status, r.summary, ms(now)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for i, r := range runs {
				got, err := s.GetRun(ctx, fmt.Sprintf("r_%02d", i))
				if err != nil || got.ErrorSource != r.want || got.ErrorSummary != r.summary {
					t.Errorf("%s %q: source %q (summary %q), %v; want %q", r.status, r.summary, got.ErrorSource, got.ErrorSummary, err, r.want)
				}
			}
		})
	}
}
