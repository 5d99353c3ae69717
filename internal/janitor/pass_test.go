package janitor_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/account"
	"github.com/skrip-dev/skrip/internal/auth"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/contract"
	"github.com/skrip-dev/skrip/internal/janitor"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/run"
	"github.com/skrip-dev/skrip/internal/runner"
	"github.com/skrip-dev/skrip/internal/runner/bwrap"
	"github.com/skrip-dev/skrip/internal/sandbox"
	"github.com/skrip-dev/skrip/internal/session"
	"github.com/skrip-dev/skrip/internal/staging"
	"github.com/skrip-dev/skrip/internal/store"
	"github.com/skrip-dev/skrip/internal/store/storetest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// deps are the services a janitor cleans up after, over one store, one fsblob store and
// the bubblewrap runner (which holds the agent sandboxes).
type deps struct {
	st        *store.Store
	blobs     blob.Store
	boxes     runner.Sandboxes
	accounts  *account.Service
	files     *staging.Service
	sessions  *session.Service
	sandboxes *sandbox.Service
	janitor   *janitor.Janitor
}

// Retention of the janitor under test.
const (
	sessionTTL   = time.Hour
	artifactsTTL = 7 * 24 * time.Hour
)

func newDeps(t *testing.T, st *store.Store, log *slog.Logger) *deps {
	t.Helper()
	dir := t.TempDir()
	m := metrics.New()
	r, err := bwrap.New(bwrap.Config{WorkDir: filepath.Join(dir, "bwrap")}, log)
	if errors.Is(err, runner.ErrUnavailable) {
		testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap python3")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	blobs, err := fsblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	d := &deps{st: st, blobs: blobs, boxes: r, accounts: account.New(st, account.Limits{})}
	d.files = staging.New(st, blobs, staging.Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 8 << 20, MaxTotalBytes: 16 << 20}, m, log)
	d.sessions = session.New(st, blobs, sessionTTL, log)
	limits := runner.Limits{WallTime: time.Minute, MemoryBytes: 256 << 20, Pids: 64, CPUs: 1, TmpBytes: 1 << 20, OutputBytes: 1 << 20, LogBytes: 1 << 10}
	runs, err := run.New(st, blobs, r, run.Config{Limits: limits, Concurrency: 1, WorkDir: filepath.Join(dir, "inputs"), Policy: contract.DefaultPolicy()}, m, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runs.Shutdown(0) })
	boxLimits := limits
	boxLimits.WallTime, boxLimits.OutputBytes = 0, 0
	d.sandboxes = sandbox.New(st, r, r.Name(), d.files, sandbox.Config{Limits: boxLimits, WorkspaceBytes: 1 << 20, IdleTimeout: 15 * time.Minute,
		MaxIdleTimeout: time.Hour, ExecTimeout: time.Minute, MaxPerUser: 4, MaxTotal: 4, MemoryBudget: 64 << 20,
		SpoolDir: filepath.Join(dir, "spool"), Node: "test"}, log)
	t.Cleanup(func() { d.sandboxes.DestroyAll(context.Background()) })
	d.janitor = janitor.New(janitor.Deps{Accounts: d.accounts, Files: d.files, Sessions: d.sessions, Runs: runs, Sandboxes: d.sandboxes,
		Blobs: blobs, Lease: st.Lease(janitor.LeaseName), Metrics: m, Log: log}, janitor.Config{ArtifactsTTL: artifactsTTL})
	t.Cleanup(func() { d.janitor.Close() })
	return d
}

// item is one thing a pass may remove: made before the pass, looked for after it.
type item struct {
	name string
	// make creates the thing and returns how to tell that it is still there (nil when
	// only the report can tell) and what removing it adds to the pass's report.
	make    func(t *testing.T, d *deps) (present func() bool, adds janitor.Report)
	removed bool
}

// TestPass is the table of what one janitor pass removes and what it keeps. The report
// counts exactly what went, and a second pass finds nothing more.
func TestPass(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	owner := store.User{ID: "u_1", Name: "ada", Role: store.RoleAuthor, CreatedAt: now}
	sessionKey := func(ctxName string) store.SessionKey {
		return store.SessionKey{ToolID: "t_1", UserID: owner.ID, Context: ctxName}
	}
	// putFile stages body under key with ttl (0: none) and returns its entry.
	putFile := func(t *testing.T, d *deps, key, body string, ttl time.Duration) store.File {
		t.Helper()
		f, err := d.files.Put(ctx, staging.Upload{OwnerID: owner.ID, Key: key, Body: strings.NewReader(body), TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	fileThere := func(d *deps, key string) func() bool {
		return func() bool { _, err := d.st.FileOf(ctx, owner.ID, key); return err == nil }
	}
	blobThere := func(d *deps, keys ...string) func() bool {
		return func() bool {
			return slices.ContainsFunc(keys, func(k string) bool { _, err := d.blobs.Stat(ctx, k); return err == nil })
		}
	}
	// replaceSession stores a session file set of two files, last used at lastUsed.
	replaceSession := func(t *testing.T, d *deps, k store.SessionKey, lastUsed time.Time) (func() bool, janitor.Report) {
		t.Helper()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "a.csv"), []byte("1,2,3"), 0o644)
		os.WriteFile(filepath.Join(dir, "b.txt"), []byte("hello"), 0o644)
		if err := d.sessions.Replace(ctx, k, dir, []string{"a.csv", "b.txt"}); err != nil {
			t.Fatal(err)
		}
		set, err := d.st.SessionFiles(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.st.TouchSessionFiles(ctx, k, set.SetID, lastUsed); err != nil {
			t.Fatal(err)
		}
		var fs []session.File
		json.Unmarshal([]byte(set.Files), &fs)
		keys := []string{fs[0].Key, fs[1].Key}
		return func() bool {
			got, err := d.st.SessionFiles(ctx, k)
			return err == nil && got.SetID == set.SetID || blobThere(d, keys...)()
		}, janitor.Report{SessionSets: 1, SessionFiles: 2, SessionBytes: 10}
	}
	// finishedRun stores a run that finished at finished with two artifacts in the blob
	// store.
	finishedRun := func(t *testing.T, d *deps, id string, finished time.Time) (func() bool, janitor.Report) {
		t.Helper()
		var arts []run.Artifact
		var keys []string
		for i, body := range []string{"first", "second!"} {
			key := "runs/" + id + "/output/000" + string(rune('0'+i)) + "-a.txt"
			info, err := d.blobs.Put(ctx, key, strings.NewReader(body), blob.PutOptions{ContentType: "text/plain"})
			if err != nil {
				t.Fatal(err)
			}
			arts = append(arts, run.Artifact{Path: "output/a" + string(rune('0'+i)) + ".txt", Name: "a.txt", Bytes: info.Size, Key: key,
				SHA256: strings.TrimPrefix(info.Checksum, "sha256:")})
			keys = append(keys, key)
		}
		b, _ := json.Marshal(arts)
		if err := d.st.CreateRun(ctx, store.Run{ID: id, ToolID: "t_1", VersionID: "v_1", UserID: owner.ID, Context: "default", Kind: "initial",
			Status: store.StatusSucceeded, Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: string(b), InputManifest: `{"files":[]}`,
			CreatedAt: finished, StartedAt: &finished, FinishedAt: &finished}); err != nil {
			t.Fatal(err)
		}
		return blobThere(d, keys...), janitor.Report{ArtifactRuns: 1, Artifacts: 2, ArtifactBytes: int64(len("first") + len("second!"))}
	}

	items := []item{
		{name: "a staged file past its TTL", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			putFile(t, d, "files/expired.txt", "12345", time.Millisecond)
			return fileThere(d, "files/expired.txt"), janitor.Report{Files: 1, FileBytes: 5}
		}},
		{name: "a staged file before its TTL", make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			putFile(t, d, "files/fresh.txt", "12345", time.Hour)
			return fileThere(d, "files/fresh.txt"), janitor.Report{}
		}},
		{name: "a staged file without a TTL", make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			putFile(t, d, "files/kept.txt", "12345", 0)
			return fileThere(d, "files/kept.txt"), janitor.Report{}
		}},
		{name: "a key an upload claimed and never filled", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			if _, err := d.st.ClaimFileKey(ctx, owner.ID, "files/pending.txt", now.Add(-2*time.Hour), now.Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			return fileThere(d, "files/pending.txt"), janitor.Report{}
		}},
		{name: "the bytes of a version retired longer than RetiredGrace ago", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			f := putFile(t, d, "files/old-version.txt", "12345", 0)
			if _, err := d.st.DeleteFile(ctx, f, now.Add(-staging.RetiredGrace-time.Minute)); err != nil {
				t.Fatal(err)
			}
			return blobThere(d, f.BlobKey), janitor.Report{FileVersions: 1}
		}},
		{name: "the bytes of a version retired within RetiredGrace", make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			f := putFile(t, d, "files/new-version.txt", "12345", 0)
			if err := d.files.Delete(ctx, owner.ID, f.Key); err != nil {
				t.Fatal(err)
			}
			return blobThere(d, f.BlobKey), janitor.Report{}
		}},
		{name: "session files unused for longer than their TTL", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			return replaceSession(t, d, sessionKey("default"), now.Add(-sessionTTL-time.Minute))
		}},
		{name: "session files used within their TTL", make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			present, _ := replaceSession(t, d, sessionKey("sandbox:v_1"), now.Add(-sessionTTL+time.Minute))
			return present, janitor.Report{}
		}},
		{name: "the artifacts of a run that finished longer than their TTL ago", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			return finishedRun(t, d, "r_old", now.Add(-artifactsTTL-time.Hour))
		}},
		{name: "the artifacts of a run that finished within their TTL", make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			present, _ := finishedRun(t, d, "r_recent", now.Add(-artifactsTTL+time.Hour))
			return present, janitor.Report{}
		}},
		{name: "a blob under runs/ of no run", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			key := "runs/r_gone/output/0000-a.txt"
			d.blobs.Put(ctx, key, strings.NewReader("x"), blob.PutOptions{})
			return blobThere(d, key), janitor.Report{OrphanArtifacts: 1}
		}},
		{name: "a blob under sessions/ of no file set", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			key := "sessions/t_1/u_1/" + session.ContextDir("default") + "/s_gone/000-a.csv"
			d.blobs.Put(ctx, key, strings.NewReader("x"), blob.PutOptions{})
			return blobThere(d, key), janitor.Report{OrphanSessionFiles: 1}
		}},
		{name: "a browser sign-in past its expiry", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			ws := store.WebSession{Hash: auth.HashToken(auth.NewToken()), UserID: owner.ID, CreatedAt: now.Add(-31 * 24 * time.Hour), LastSeenAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)}
			if err := d.st.CreateWebSession(ctx, ws); err != nil {
				t.Fatal(err)
			}
			return nil, janitor.Report{SignIns: 1}
		}},
		{name: "a browser sign-in idle longer than SKRIP_WEB_SESSION_IDLE", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			ws := store.WebSession{Hash: auth.HashToken(auth.NewToken()), UserID: owner.ID, CreatedAt: now.Add(-9 * time.Hour), ExpiresAt: now.Add(20 * 24 * time.Hour)}
			if err := d.st.CreateWebSession(ctx, ws); err != nil {
				t.Fatal(err)
			}
			return nil, janitor.Report{SignIns: 1}
		}},
		{name: "a browser sign-in before its expiry", make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			secret := auth.NewToken()
			ws := store.WebSession{Hash: auth.HashToken(secret), UserID: owner.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := d.st.CreateWebSession(ctx, ws); err != nil {
				t.Fatal(err)
			}
			return func() bool { _, err := d.accounts.SessionUser(ctx, secret); return err == nil }, janitor.Report{}
		}},
		{name: "an agent sandbox idle past its timeout", removed: true, make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			return newSandbox(t, d, owner, time.Second), janitor.Report{Sandboxes: 1}
		}},
		{name: "an agent sandbox within its idle timeout", make: func(t *testing.T, d *deps) (func() bool, janitor.Report) {
			return newSandbox(t, d, owner, 0), janitor.Report{}
		}},
	}

	storetest.Each(t, func(t *testing.T, st *store.Store) {
		d := newDeps(t, st, slog.New(slog.DiscardHandler))
		if err := st.CreateUser(ctx, owner); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateTool(ctx, store.Tool{ID: "t_1", Slug: "t", Title: "T", AuthorID: owner.ID, CreatedAt: now, UpdatedAt: now},
			store.ToolVersion{ID: "v_1", ToolID: "t_1", Source: "def run_tool(i, o): pass", Entrypoint: "run_tool", CreatedBy: owner.ID, CreatedAt: now}, true); err != nil {
			t.Fatal(err)
		}
		presents := make([]func() bool, len(items))
		var want janitor.Report
		for i, it := range items {
			var adds janitor.Report
			presents[i], adds = it.make(t, d)
			if it.removed {
				want = sum(want, adds)
			}
			if presents[i] != nil && !presents[i]() {
				t.Fatalf("%s: not there before the pass", it.name)
			}
		}
		time.Sleep(1100 * time.Millisecond) // past the shortest TTL and idle timeout above

		got, err := d.janitor.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, it := range items {
			if presents[i] == nil {
				continue
			}
			if there := presents[i](); there == it.removed {
				t.Errorf("%s: there after the pass: %v, want %v", it.name, there, !it.removed)
			}
		}
		if got != want {
			t.Errorf("report:\n got %+v\nwant %+v", got, want)
		}
		// An expired run stays, its artifacts listed with when they expired.
		old, err := st.GetRun(ctx, "r_old")
		if err != nil {
			t.Fatalf("the run whose artifacts expired: %v", err)
		}
		var arts []run.Artifact
		json.Unmarshal([]byte(old.Artifacts), &arts)
		if len(arts) != 2 || arts[0].ExpiredAt == nil || arts[0].Key != "" {
			t.Errorf("its artifacts after the pass: %s; want both listed, expired, with no key", old.Artifacts)
		}
		if again, err := d.janitor.Pass(ctx); err != nil || again != (janitor.Report{}) {
			t.Errorf("a second pass: %+v, %v; want nothing", again, err)
		}
	})
}

// newSandbox creates an agent sandbox for owner with idle timeout idle (0: the default)
// and returns how to tell that it is there: its record and its box.
func newSandbox(t *testing.T, d *deps, owner store.User, idle time.Duration) func() bool {
	t.Helper()
	ctx := context.Background()
	sb, err := d.sandboxes.Create(ctx, owner, sandbox.CreateRequest{IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	return func() bool {
		_, err := d.st.Sandbox(ctx, sb.ID)
		boxes, _ := d.boxes.Boxes(ctx)
		return err == nil || slices.Contains(boxes, sb.ID)
	}
}

// sum adds the counts of b to a.
func sum(a, b janitor.Report) janitor.Report {
	a.Files += b.Files
	a.FileBytes += b.FileBytes
	a.FileVersions += b.FileVersions
	a.SessionSets += b.SessionSets
	a.SessionFiles += b.SessionFiles
	a.SessionBytes += b.SessionBytes
	a.ArtifactRuns += b.ArtifactRuns
	a.Artifacts += b.Artifacts
	a.ArtifactBytes += b.ArtifactBytes
	a.BlobLeftovers += b.BlobLeftovers
	a.OrphanSessionFiles += b.OrphanSessionFiles
	a.OrphanArtifacts += b.OrphanArtifacts
	a.SignIns += b.SignIns
	a.Sandboxes += b.Sandboxes
	return a
}
