package blobcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func value(c prometheus.Counter) float64 {
	var d dto.Metric
	c.Write(&d)
	return d.GetCounter().GetValue()
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// source serves body and counts how often it was opened.
type source struct {
	body  string
	opens atomic.Int64
}

func (s *source) open(context.Context) (io.ReadCloser, error) {
	s.opens.Add(1)
	return io.NopCloser(strings.NewReader(s.body)), nil
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

type env struct {
	dir          string
	c            *Cache
	hits, misses prometheus.Counter
}

func newEnv(t *testing.T, max int64) *env {
	t.Helper()
	e := &env{dir: t.TempDir(), hits: prometheus.NewCounter(prometheus.CounterOpts{Name: "h"}),
		misses: prometheus.NewCounter(prometheus.CounterOpts{Name: "m"})}
	c, err := Open(Config{Dir: filepath.Join(e.dir, "cache"), MaxBytes: max, Hits: e.hits, Misses: e.misses})
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

// run makes a run's input directory.
func (e *env) run(t *testing.T, name string) string {
	d := filepath.Join(e.dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLinkFetchesOnce: a file is fetched once, then every run gets a hard link of the
// cache's read-only file; Checksum knows those links and nothing else.
func TestLinkFetchesOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1<<20)
	src := &source{body: strings.Repeat("session file ", 1000)}
	sha := sum(src.body)
	for i, name := range []string{"runa", "runb", "runc"} {
		dst := filepath.Join(e.run(t, name), "kept.txt")
		if err := e.c.Link(ctx, sha, int64(len(src.body)), dst, src.open); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(dst)
		fi, _ := os.Stat(dst)
		if string(b) != src.body || fi.Mode().Perm() != 0o444 {
			t.Fatalf("run %d got %d bytes, mode %v", i, len(b), fi.Mode())
		}
		if inode(t, dst) != inode(t, filepath.Join(e.dir, "cache", sha)) {
			t.Fatalf("run %d got a copy, not a link of the cache's file", i)
		}
		if got, ok := e.c.Checksum(fi); !ok || got != sha {
			t.Fatalf("Checksum of a link of the cache's file: %q, %v", got, ok)
		}
	}
	if src.opens.Load() != 1 || value(e.hits) != 2 || value(e.misses) != 1 {
		t.Fatalf("opened %d times, hits %v, misses %v; want 1, 2, 1", src.opens.Load(), value(e.hits), value(e.misses))
	}
	b, err := e.c.Read(ctx, sha, int64(len(src.body)), src.open)
	if err != nil || string(b) != src.body || src.opens.Load() != 1 {
		t.Fatalf("Read: %d bytes, %v, %d opens", len(b), err, src.opens.Load())
	}
	// A file with the same bytes that is no link of the cache's is not vouched for.
	other := filepath.Join(e.dir, "other.txt")
	os.WriteFile(other, []byte(src.body), 0o444)
	fi, _ := os.Stat(other)
	if _, ok := e.c.Checksum(fi); ok {
		t.Fatal("Checksum vouched for a file that is no link of the cache's")
	}
	// Kept across a restart.
	c2, err := Open(Config{Dir: filepath.Join(e.dir, "cache"), MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Link(ctx, sha, -1, filepath.Join(e.run(t, "rund"), "kept.txt"), src.open); err != nil || src.opens.Load() != 1 {
		t.Fatalf("after a restart: %v, %d opens", err, src.opens.Load())
	}
}

// TestConcurrentLinksFetchOnce: runs that want the same missing file at once wait for
// one fetch.
func TestConcurrentLinksFetchOnce(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1<<30)
	src := &source{body: strings.Repeat("x", 3<<20)}
	sha := sum(src.body)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.c.Link(ctx, sha, -1, filepath.Join(e.run(t, "run"+string(rune('a'+i))), "f"), src.open)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if src.opens.Load() != 1 {
		t.Fatalf("fetched %d times", src.opens.Load())
	}
}

// failingReader gives some bytes, then fails.
type failingReader struct{ n int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection lost")
	}
	n := min(len(p), f.n)
	f.n -= n
	return n, nil
}

// TestBadBytesNeverReachARun: bytes that do not match their checksum or size, or a
// fetch that fails halfway, leave nothing in the cache or in the run's directory; an
// entry changed on disk afterwards is fetched again rather than linked.
func TestBadBytesNeverReachARun(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1<<30)
	body := strings.Repeat("the real bytes ", 1000)
	sha := sum(body)
	cases := []struct {
		name string
		size int64
		src  Source
		want error
	}{
		{"other bytes", -1, (&source{body: "other bytes"}).open, ErrMismatch},
		{"truncated", -1, (&source{body: body[:len(body)-1]}).open, ErrMismatch},
		{"wrong size", int64(len(body)) + 1, (&source{body: body}).open, ErrMismatch},
		{"cut halfway", -1, func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(&failingReader{n: 5000}), nil
		}, nil},
		{"no answer", -1, func(context.Context) (io.ReadCloser, error) { return nil, errors.New("store down") }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(e.run(t, "run-"+strings.ReplaceAll(tc.name, " ", "-")), "f")
			err := e.c.Link(ctx, sha, tc.size, dst, tc.src)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Link: %v, want an error (%v)", err, tc.want)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("the run's directory got a file")
			}
			left, _ := os.ReadDir(filepath.Join(e.dir, "cache"))
			if len(left) != 0 {
				t.Fatalf("the cache kept %v", left[0].Name())
			}
		})
	}

	// An entry truncated behind the cache's back is not linked: the bytes are fetched
	// again.
	src := &source{body: body}
	if err := e.c.Link(ctx, sha, int64(len(body)), filepath.Join(e.run(t, "runx"), "f"), src.open); err != nil {
		t.Fatal(err)
	}
	entry := filepath.Join(e.dir, "cache", sha)
	os.Chmod(entry, 0o644)
	os.Truncate(entry, 10)
	dst := filepath.Join(e.run(t, "runy"), "f")
	if err := e.c.Link(ctx, sha, int64(len(body)), dst, src.open); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != body || src.opens.Load() != 2 {
		t.Fatalf("after a truncated entry the run got %d bytes (%d fetches)", len(b), src.opens.Load())
	}
}

// TestTrim: past its cap the cache drops the files used least recently; a file linked
// into a run keeps its bytes there, and Checksum no longer vouches for it.
func TestTrim(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1<<20)
	link := func(body, run string) string {
		dst := filepath.Join(e.run(t, run), sum(body)[:8])
		if err := e.c.Link(ctx, sum(body), -1, dst, (&source{body: body}).open); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	old, used, big := strings.Repeat("o", 300<<10), strings.Repeat("u", 300<<10), strings.Repeat("b", 600<<10)
	oldDst := link(old, "runa")
	link(used, "runa")
	// old was used last (a hit moves it up), so used goes first.
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(e.dir, "cache", sum(used)), past, past)
	os.Chtimes(filepath.Join(e.dir, "cache", sum(old)), past.Add(-time.Hour), past.Add(-time.Hour))
	link(old, "runb")
	link(big, "runb")
	has := func(body string) bool {
		_, err := os.Stat(filepath.Join(e.dir, "cache", sum(body)))
		return err == nil
	}
	if !has(old) || has(used) || !has(big) {
		t.Fatalf("after the trim: old %v, used %v, big %v; want true, false, true", has(old), has(used), has(big))
	}
	link(strings.Repeat("n", 600<<10), "runc")
	if has(old) {
		t.Fatal("the cache kept more than its cap")
	}
	if b, _ := os.ReadFile(oldDst); string(b) != old {
		t.Fatal("a trimmed file linked into a run lost its bytes")
	}
	fi, _ := os.Stat(oldDst)
	if _, ok := e.c.Checksum(fi); ok {
		t.Fatal("Checksum vouched for a file no longer in the cache")
	}
	// A file larger than the whole cache is still given to the run.
	huge := strings.Repeat("h", 2<<20)
	if b, _ := os.ReadFile(link(huge, "rund")); string(b) != huge {
		t.Fatal("a file larger than the cache was not linked whole")
	}
}

// TestTrimLeavesPinnedFiles: a file being linked is never removed under the link.
func TestTrimLeavesPinnedFiles(t *testing.T) {
	e := newEnv(t, 0)
	body := "pinned"
	e.c.pin(sum(body))
	if err := os.WriteFile(filepath.Join(e.dir, "cache", sum(body)), []byte(body), 0o444); err != nil {
		t.Fatal(err)
	}
	e.c.Trim()
	if _, err := os.Stat(filepath.Join(e.dir, "cache", sum(body))); err != nil {
		t.Fatal("a pinned file was trimmed")
	}
	e.c.unpin(sum(body))
	e.c.Trim()
	if _, err := os.Stat(filepath.Join(e.dir, "cache", sum(body))); err == nil {
		t.Fatal("an unpinned file over the cap stayed")
	}
}
