package staging

import (
	"context"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/natsserver"
	"github.com/skrip-dev/skrip/internal/store"
)

// TestExpiryDoesNotTakeAReupload: the janitor lists a file as expired, its owner uploads
// to the same key, then the janitor removes what it listed. The new version stays whole.
func TestExpiryDoesNotTakeAReupload(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "", filepath.Join(dir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.CreateUser(ctx, store.User{ID: "u_1", Name: "u", Role: store.RoleUser, CreatedAt: time.Now()})
	blobs, err := fsblob.New(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	s := New(st, blobs, Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 1 << 20, MaxTotalBytes: 1 << 20}, metrics.New(), slog.New(slog.DiscardHandler))
	u := store.User{ID: "u_1", Role: store.RoleUser}
	if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/k", Body: strings.NewReader("old"), TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	listed, err := st.ExpiredFiles(ctx, time.Now(), 10)
	if err != nil || len(listed) != 1 {
		t.Fatalf("expired = %v, %v", listed, err)
	}
	if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/k", Body: strings.NewReader("new")}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.remove(ctx, listed[0]); err != nil || ok {
		t.Fatalf("remove of the listed version = %v, %v; want nothing removed", ok, err)
	}
	rc, err := s.Open(ctx, u.ID, "files/k")
	if err != nil {
		t.Fatalf("the re-upload's bytes are gone: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "new" {
		t.Fatalf("read %q", b)
	}
}

// newService returns a Service on a fresh SQLite index and the blob backend named by
// backend ("fs", or "nats" for an embedded nats-server), with user u_1.
func newService(t *testing.T, backend string, limits Limits) *Service {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "", filepath.Join(dir, "skrip.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.CreateUser(ctx, store.User{ID: "u_1", Name: "u", Role: store.RoleUser, CreatedAt: time.Now()})
	var blobs blob.Store
	if backend == "fs" {
		blobs, err = fsblob.New(filepath.Join(dir, "blobs"))
	} else {
		srv, serr := natsserver.Start(filepath.Join(dir, "nats"))
		if serr != nil {
			t.Fatal(serr)
		}
		t.Cleanup(srv.Shutdown)
		nc, cerr := srv.Connect()
		if cerr != nil {
			t.Fatal(cerr)
		}
		t.Cleanup(nc.Close)
		blobs, err = natsblob.New(ctx, nc, natsblob.Config{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return New(st, blobs, limits, metrics.New(), slog.New(slog.DiscardHandler))
}

// TestRetiredVersions: a reader that opened a version reads it whole after the key is
// overwritten and deleted; the janitor deletes the retired bytes only after RetiredGrace,
// and an upload that needs their room deletes them sooner.
func TestRetiredVersions(t *testing.T) {
	for _, backend := range []string{"fs", "nats"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			s := newService(t, backend, Limits{MaxFileBytes: 2 << 20, UserQuotaBytes: 4 << 20, MaxTotalBytes: 4 << 20})
			clock := time.Now()
			s.now = func() time.Time { return clock }
			v1 := strings.Repeat("version one ", 100_000) // over a chunk and over headBytes
			if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/k", Body: strings.NewReader(v1)}); err != nil {
				t.Fatal(err)
			}
			r, err := s.Open(ctx, "u_1", "files/k")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/k", Body: strings.NewReader("version two")}); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, "u_1", "files/k"); err != nil {
				t.Fatal(err)
			}
			// The janitor within the grace leaves both retired versions.
			if exp, err := s.Expire(ctx); err != nil || exp.Versions != 0 {
				t.Fatalf("expire within the grace = %+v, %v", exp, err)
			}
			got, err := io.ReadAll(r)
			if err != nil || string(got) != v1 {
				t.Fatalf("the opened version read %d bytes, %v; want its %d", len(got), err, len(v1))
			}
			clock = clock.Add(RetiredGrace + time.Second)
			if exp, err := s.Expire(ctx); err != nil || exp.Versions != 2 {
				t.Fatalf("expire after the grace = %+v, %v; want 2 versions", exp, err)
			}
			if left, _ := s.blobs.List(ctx, ""); len(left) != 0 {
				t.Fatalf("the blob store holds %v", left)
			}

			// Retired bytes give way to an upload that needs their room: 2 MiB live and 1.5
			// MiB retired leave no room for a 2 MiB file in 4 MiB, so they go at once.
			big := strings.Repeat("x", 3<<19)
			for _, k := range []string{"files/a", "files/a", "files/b"} {
				if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: k, Body: strings.NewReader(big)}); err != nil {
					t.Fatal(err)
				}
			}
			if u, _ := s.Usage(ctx, "u_1"); u.Retained != 0 {
				t.Fatalf("%d retired bytes kept while an upload needed their room", u.Retained)
			}
			if left, _ := s.blobs.List(ctx, ""); len(left) != 2 {
				t.Fatalf("the blob store holds %d objects, want the 2 live ones", len(left))
			}
		})
	}
}

func TestFormatTTL(t *testing.T) {
	for d, want := range map[time.Duration]string{
		7 * 24 * time.Hour:         "7d",
		24 * time.Hour:             "1d",
		time.Hour:                  "1h",
		90 * time.Minute:           "1h30m",
		30 * time.Minute:           "30m",
		25 * time.Hour:             "25h",
		time.Second:                "1s",
		time.Hour + 30*time.Second: "1h0m30s",
		1500 * time.Millisecond:    "1.5s",
	} {
		if got := FormatTTL(d); got != want {
			t.Errorf("FormatTTL(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestUsageIsTheOwnersAlone: Usage, what GET /me and the account page show, is what the
// user holds, summed over their rows alone: two other users' runs holding together more
// than an int64 holds make any store-wide sum fail, and Usage still answers.
func TestUsageIsTheOwnersAlone(t *testing.T) {
	ctx := context.Background()
	s := newService(t, "fs", Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 4 << 20, MaxTotalBytes: 1 << 40})
	if _, err := s.Put(ctx, Upload{OwnerID: "u_1", Key: "files/a.txt", Body: strings.NewReader("hello")}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	v := store.ToolVersion{ID: "v_1", ToolID: "t_1", Source: "pass", Entrypoint: "run_tool", CreatedBy: "u_1", CreatedAt: now}
	if _, err := s.st.CreateTool(ctx, store.Tool{ID: "t_1", Slug: "t", Title: "T", AuthorID: "u_1", CreatedAt: now, UpdatedAt: now}, v, true); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"u_2", "u_3"} {
		if err := s.st.CreateUser(ctx, store.User{ID: u, Name: u, Role: store.RoleUser, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		r := store.Run{ID: "r_" + u, ToolID: "t_1", VersionID: "v_1", UserID: u, Context: "default", Kind: "initial", Status: store.StatusQueued,
			Inputs: "{}", Outputs: "[]", NextActions: "[]", Artifacts: "[]", InputManifest: `{"files":[]}`, CreatedAt: now}
		if err := s.st.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.st.ClaimRun(ctx, r.ID, 1, "w", now); !ok || err != nil {
			t.Fatalf("ClaimRun = %v, %v", ok, err)
		}
		r.Status, r.FinishedAt, r.HeldBytes = store.StatusSucceeded, &now, math.MaxInt64/2+1
		if _, ok, err := s.st.RecordRun(ctx, r, 1, nil); !ok || err != nil {
			t.Fatalf("RecordRun = %v, %v", ok, err)
		}
	}
	if u, err := s.Usage(ctx, "u_1"); err != nil || u != (store.Usage{Files: 5}) {
		t.Fatalf("Usage(u_1) = %+v, %v; want the 5 bytes of its file", u, err)
	}
	if _, _, err := s.st.UserUsage(ctx, "u_1", now); err == nil {
		t.Fatal("the store-wide sum did not fail: the test no longer tells it apart")
	}
}
