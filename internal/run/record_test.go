package run_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// ledger is a run service over a SQLite store in a temp dir and the real bubblewrap
// runner, with runs inserted straight into the store: two users' runs of two tools.
type ledger struct {
	svc               *run.Service
	st                *store.Store
	blobs             *fsblob.Store
	admin, alice, bob store.User
	byUser            map[string][]string // user id -> run ids, newest first
	all               []string            // every run id, newest first
	status            map[string]string   // run id -> status
	tool              map[string]string   // run id -> tool id
}

func newLedger(t *testing.T) *ledger {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(ctx, "", filepath.Join(dir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	blobs, err := fsblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := bwrap.New(bwrap.Config{WorkDir: filepath.Join(dir, "runner"), Rootfs: os.Getenv("SKRIP_TEST_RUNNER_ROOTFS")}, log)
	if errors.Is(err, runner.ErrUnavailable) {
		testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap python3")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	svc, err := run.New(st, blobs, r, run.Config{Concurrency: 1, Queue: 1, WorkDir: filepath.Join(dir, "work")}, metrics.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Shutdown(time.Second) })

	l := &ledger{svc: svc, st: st, blobs: blobs, byUser: map[string][]string{}, status: map[string]string{}, tool: map[string]string{}}
	now := time.Now()
	for _, u := range []struct {
		into     *store.User
		id, role string
	}{{&l.admin, "u_admin", store.RoleAdmin}, {&l.alice, "u_alice", store.RoleUser}, {&l.bob, "u_bob", store.RoleAuthor}} {
		*u.into = store.User{ID: u.id, Name: u.id[2:], Role: u.role, CreatedAt: now}
		if err := st.CreateUser(ctx, *u.into); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"t_1", "t_2"} {
		_, err := st.CreateTool(ctx, store.Tool{ID: tool, Slug: tool[2:], Title: tool, AuthorID: l.bob.ID, CreatedAt: now, UpdatedAt: now},
			store.ToolVersion{ID: "v" + tool[1:], ToolID: tool, Source: "x", Entrypoint: "run_tool", CreatedBy: l.bob.ID, CreatedAt: now}, true)
		if err != nil {
			t.Fatal(err)
		}
	}
	statuses := []string{store.StatusSucceeded, store.StatusFailed, store.StatusSucceeded, store.StatusTimedOut, store.StatusCancelled}
	// Ids sort by creation, as ids.New's ULIDs do: r_0001 is the oldest.
	for i := 1; i <= 12; i++ {
		owner, tool := l.alice, "t_1"
		if i%3 == 0 {
			owner = l.bob
		}
		if i%4 == 0 {
			tool = "t_2"
		}
		id := fmt.Sprintf("r_%04d", i)
		rn := store.Run{ID: id, ToolID: tool, VersionID: "v" + tool[1:], UserID: owner.ID, Context: "default", Kind: "initial",
			Status: statuses[i%len(statuses)], Inputs: "{}", CreatedAt: now.Add(time.Duration(i) * time.Millisecond)}
		if err := st.CreateRun(ctx, rn); err != nil {
			t.Fatal(err)
		}
		l.byUser[owner.ID] = slices.Insert(l.byUser[owner.ID], 0, id)
		l.all = slices.Insert(l.all, 0, id)
		l.status[id], l.tool[id] = rn.Status, tool
	}
	return l
}

func runIDs(runs []store.Run) []string {
	out := []string{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// TestListSelects: a user sees their own runs only, whether or not they name
// themselves; an admin sees anyone's, or everyone's with no user named; a user naming
// someone else, or someone who does not exist, is told there is nothing to show.
func TestListSelects(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	filter := func(user, status, tool string) []string {
		out := []string{}
		for _, id := range l.all {
			if (user == "" || slices.Contains(l.byUser[user], id)) && (status == "" || l.status[id] == status) && (tool == "" || l.tool[id] == tool) {
				out = append(out, id)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		viewer store.User
		q      run.Query
		want   []string
		err    error
	}{
		{"own, unnamed", l.alice, run.Query{Limit: 100}, filter(l.alice.ID, "", ""), nil},
		{"own, named", l.alice, run.Query{UserID: l.alice.ID, Limit: 100}, filter(l.alice.ID, "", ""), nil},
		{"author's own", l.bob, run.Query{Limit: 100}, filter(l.bob.ID, "", ""), nil},
		{"admin, everyone", l.admin, run.Query{Limit: 100}, l.all, nil},
		{"admin, one user", l.admin, run.Query{UserID: l.bob.ID, Limit: 100}, filter(l.bob.ID, "", ""), nil},
		{"admin, own (none)", l.admin, run.Query{UserID: l.admin.ID, Limit: 100}, []string{}, nil},
		{"another's", l.alice, run.Query{UserID: l.bob.ID, Limit: 100}, nil, run.ErrNotFound},
		{"author, another's", l.bob, run.Query{UserID: l.alice.ID, Limit: 100}, nil, run.ErrNotFound},
		{"a missing user's", l.alice, run.Query{UserID: "u_nobody", Limit: 100}, nil, run.ErrNotFound},
		{"status", l.alice, run.Query{Status: store.StatusFailed, Limit: 100}, filter(l.alice.ID, store.StatusFailed, ""), nil},
		{"status, admin", l.admin, run.Query{Status: store.StatusSucceeded, Limit: 100}, filter("", store.StatusSucceeded, ""), nil},
		{"status, none", l.alice, run.Query{Status: store.StatusRunning, Limit: 100}, []string{}, nil},
		{"bad status", l.alice, run.Query{Status: "done", Limit: 100}, nil, run.ErrInvalidQuery},
		{"tool", l.alice, run.Query{ToolID: "t_2", Limit: 100}, filter(l.alice.ID, "", "t_2"), nil},
		{"tool and status", l.admin, run.Query{ToolID: "t_1", Status: store.StatusSucceeded, Limit: 100}, filter("", store.StatusSucceeded, "t_1"), nil},
		{"limit 0", l.alice, run.Query{Limit: 0}, nil, run.ErrInvalidQuery},
		{"limit -1", l.alice, run.Query{Limit: -1}, nil, run.ErrInvalidQuery},
		{"limit 501", l.admin, run.Query{Limit: run.MaxPage + 1}, nil, run.ErrInvalidQuery},
		{"limit 500", l.admin, run.Query{Limit: run.MaxPage}, l.all, nil},
		{"limit 1", l.admin, run.Query{Limit: 1}, l.all[:1], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := l.svc.List(ctx, tc.viewer, tc.q)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("List = %v, %v; want %v", runIDs(p.Runs), err, tc.err)
			}
			if err != nil {
				if len(p.Runs) != 0 || p.NextCursor != "" {
					t.Errorf("refused, but gave %v, cursor %q", runIDs(p.Runs), p.NextCursor)
				}
				return
			}
			if got := runIDs(p.Runs); !slices.Equal(got, tc.want) {
				t.Errorf("List = %v, want %v", got, tc.want)
			}
		})
	}
	// Naming someone else is answered as naming no one: the answer does not say who exists.
	_, other := l.svc.List(ctx, l.alice, run.Query{UserID: l.bob.ID, Limit: 10})
	_, missing := l.svc.List(ctx, l.alice, run.Query{UserID: "u_nobody", Limit: 10})
	if strings.ReplaceAll(other.Error(), l.bob.ID, "REF") != strings.ReplaceAll(missing.Error(), "u_nobody", "REF") {
		t.Errorf("another user's runs: %q; a missing user's: %q", other, missing)
	}
}

// TestListPages: following NextCursor from the first page visits every selected run
// exactly once, newest first, for every page size, and the last page has no cursor.
func TestListPages(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	for _, tc := range []struct {
		viewer store.User
		q      run.Query
		want   []string
	}{
		{l.admin, run.Query{}, l.all},
		{l.alice, run.Query{}, l.byUser[l.alice.ID]},
		{l.admin, run.Query{UserID: l.bob.ID}, l.byUser[l.bob.ID]},
		{l.admin, run.Query{Status: store.StatusSucceeded}, nil},
	} {
		if tc.want == nil {
			for _, id := range l.all {
				if l.status[id] == tc.q.Status {
					tc.want = append(tc.want, id)
				}
			}
		}
		for _, limit := range []int{1, 2, 3, 5, len(tc.want) - 1, len(tc.want), len(tc.want) + 1} {
			q := tc.q
			q.Limit = limit
			var got []string
			pages := 0
			for {
				p, err := l.svc.List(ctx, tc.viewer, q)
				if err != nil {
					t.Fatalf("%s %+v, page %d: %v", tc.viewer.Name, q, pages+1, err)
				}
				pages++
				if len(p.Runs) > limit {
					t.Fatalf("%s %+v: page of %d runs", tc.viewer.Name, q, len(p.Runs))
				}
				got = append(got, runIDs(p.Runs)...)
				if p.NextCursor == "" {
					break
				}
				if pages > len(tc.want)+1 {
					t.Fatalf("%s %+v: still paging after %d pages: %v", tc.viewer.Name, q, pages, got)
				}
				q.Cursor = p.NextCursor
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s %+v, limit %d: paged through %v, want %v", tc.viewer.Name, tc.q, limit, got, tc.want)
			}
			if wantPages := max(1, (len(tc.want)+limit-1)/limit); pages != wantPages {
				t.Errorf("%s %+v, limit %d: %d pages, want %d", tc.viewer.Name, tc.q, limit, pages, wantPages)
			}
		}
	}
	// Not base64; then a run's bare id, and the base64 of "r_", of "hello" and of "r_" and
	// a byte that is not UTF-8, which all decode.
	for _, cursor := range []string{"!!!", "a b", "%%", "A", "cl8wMDA1=", "r_0005", "cl8", "aGVsbG8", "cl__"} {
		p, err := l.svc.List(ctx, l.admin, run.Query{Cursor: cursor, Limit: 10})
		if !errors.Is(err, run.ErrInvalidQuery) {
			t.Errorf("cursor %q: List = %v, %v; want ErrInvalidQuery", cursor, runIDs(p.Runs), err)
		}
	}
}

// TestTypedAccessors: a run's stored JSON decodes into its type; an empty field is the
// zero value; a field that is not valid JSON is an error wrapping ErrCorrupt, never an
// empty answer that would hide the damage.
func TestTypedAccessors(t *testing.T) {
	expired := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		field string
		text  string
		read  func(store.Run) (any, error)
		want  any // what read gives when text is valid
	}{
		{"outputs", "outputs", `[{"kind":"notice","level":"info","message":"hej"},{"kind":"markdown","markdown":"# A"}]`,
			func(r store.Run) (any, error) { return run.OutputsOf(r) },
			[]contract.Output{{Kind: "notice", Level: "info", Message: "hej"}, {Kind: "markdown", Markdown: "# A"}}},
		{"next actions", "next_actions", `[{"action_id":"go","label":"Go","kind":"form","fields":[]}]`,
			func(r store.Run) (any, error) { return run.NextActionsOf(r) },
			[]contract.NextAction{{ActionID: "go", Label: "Go", Kind: "form", Fields: []contract.Field{}}}},
		{"artifacts", "artifacts", `[{"path":"output/a.txt","name":"a.txt","bytes":3,"sha256":"abc","key":"runs/r_1/output/a.txt"},` +
			`{"path":"output/b.txt","name":"b.txt","bytes":1,"sha256":"def","expired_at":"2026-01-02T03:04:05Z"}]`,
			func(r store.Run) (any, error) { return run.ArtifactsOf(r) },
			[]run.Artifact{{Path: "output/a.txt", Name: "a.txt", Bytes: 3, SHA256: "abc", Key: "runs/r_1/output/a.txt"},
				{Path: "output/b.txt", Name: "b.txt", Bytes: 1, SHA256: "def", ExpiredAt: &expired}}},
		{"manifest", "input_manifest", `{"files":[{"name":"in.csv","bytes":12}]}`,
			func(r store.Run) (any, error) { return run.ManifestOf(r) },
			run.Manifest{Files: []run.ManifestFile{{Name: "in.csv", Bytes: 12}}}},
	} {
		set := func(text string) store.Run {
			r := store.Run{ID: "r_1"}
			switch tc.field {
			case "outputs":
				r.Outputs = text
			case "next_actions":
				r.NextActions = text
			case "artifacts":
				r.Artifacts = text
			case "input_manifest":
				r.InputManifest = text
			}
			return r
		}
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.read(set(tc.text))
			if err != nil || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
				t.Errorf("valid: %#v, %v\nwant %#v", got, err, tc.want)
			}
			if a, ok := got.([]run.Artifact); ok && len(a) == 2 && (a[1].ExpiredAt == nil || !a[1].ExpiredAt.Equal(expired)) {
				t.Errorf("expired_at = %v, want %v", a[1].ExpiredAt, expired)
			}

			got, err = tc.read(set(""))
			if err != nil {
				t.Errorf("empty: %v", err)
			}
			switch v := got.(type) {
			case run.Manifest:
				if v.Files == nil || len(v.Files) != 0 {
					t.Errorf("empty: %#v, want no files (a list, not null)", v)
				}
			default:
				if fmt.Sprintf("%v", v) != "[]" {
					t.Errorf("empty: %#v, want nothing", v)
				}
			}

			for _, corrupt := range []string{tc.text[:len(tc.text)/2], "{", "nul", `"a string"`, "42"} {
				_, err := tc.read(set(corrupt))
				if !errors.Is(err, run.ErrCorrupt) {
					t.Errorf("corrupt %q: error %v, want ErrCorrupt", corrupt, err)
				}
			}
		})
	}
}

// TestOpenArtifact: an artifact is opened by its path; one the run never had, one that
// expired, and one whose bytes went after the run was read (the janitor's expiry racing
// a download) are all ErrNoArtifact, never the blob store's own not-found.
func TestOpenArtifact(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t)
	if _, err := l.blobs.Put(ctx, "runs/r_0001/output/a.txt", strings.NewReader("abc"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rn := store.Run{ID: "r_0001", Artifacts: `[{"path":"output/a.txt","name":"a.txt","bytes":3,"key":"runs/r_0001/output/a.txt"},` +
		`{"path":"output/gone.txt","name":"gone.txt","bytes":3,"key":"runs/r_0001/output/gone.txt"},` +
		`{"path":"output/old.txt","name":"old.txt","bytes":3,"expired_at":"2026-01-02T03:04:05Z"}]`}
	for _, tc := range []struct {
		path string
		want error
		body string
	}{
		{"output/a.txt", nil, "abc"},
		{"a.txt", nil, "abc"},
		{"output/none.txt", run.ErrNoArtifact, ""},
		{"output/old.txt", run.ErrNoArtifact, ""},
		{"output/gone.txt", run.ErrNoArtifact, ""},
	} {
		a, rc, _, err := l.svc.OpenArtifact(ctx, rn, tc.path)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("OpenArtifact(%q) = %v, want %v", tc.path, err, tc.want)
			continue
		}
		if errors.Is(err, blob.ErrNotFound) {
			t.Errorf("OpenArtifact(%q) = %v: the blob store's not-found reached the caller", tc.path, err)
		}
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != tc.body || a.Name != "a.txt" {
			t.Errorf("OpenArtifact(%q) = %+v, %q", tc.path, a, b)
		}
	}
	if _, _, _, err := l.svc.OpenArtifact(ctx, store.Run{ID: "r_0002", Artifacts: "[{"}, "a.txt"); !errors.Is(err, run.ErrCorrupt) {
		t.Errorf("corrupt artifacts: %v, want ErrCorrupt", err)
	}
}
