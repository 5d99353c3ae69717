package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/fsblob"
	"github.com/skrip-dev/skrip/internal/dispatch"
	"github.com/skrip-dev/skrip/internal/metrics"
)

func count(c prometheus.Counter) float64 {
	var d dto.Metric
	c.Write(&d)
	return d.GetCounter().GetValue()
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// TestCacheHardLinksOnRepeat: a file a worker has fetched once is linked into the next
// run's input without being fetched again; a file whose bytes do not match its checksum
// is refused; past its cap the cache drops the files used least recently.
func TestCacheHardLinksOnRepeat(t *testing.T) {
	ctx := context.Background()
	work, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	put := func(key, body string) {
		if _, err := work.Put(ctx, key, strings.NewReader(body), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	body := strings.Repeat("session file ", 1000)
	sha := sum(body)
	put(dispatch.CASKey(sha), body)
	m := metrics.New()
	dir := t.TempDir()
	c, err := NewCache(filepath.Join(dir, "cache"), 1<<20, work, m)
	if err != nil {
		t.Fatal(err)
	}
	var inodes []uint64
	for i := range 2 {
		run := filepath.Join(dir, "run"+string(rune('a'+i)))
		os.MkdirAll(run, 0o755)
		dst := filepath.Join(run, "kept.txt")
		if err := c.Link(ctx, sha, dst); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(dst)
		fi, _ := os.Stat(dst)
		if string(b) != body || fi.Mode().Perm() != 0o444 {
			t.Fatalf("run %d got %d bytes, mode %v", i, len(b), fi.Mode())
		}
		inodes = append(inodes, fi.Sys().(*syscall.Stat_t).Ino)
	}
	if hits, misses := count(m.CacheHits), count(m.CacheMisses); hits != 1 || misses != 1 {
		t.Fatalf("cache hits %v, misses %v; want 1 and 1: the second run fetched again", hits, misses)
	}
	if inodes[0] != inodes[1] {
		t.Fatal("the second run got a copy, not a link of the cached file")
	}
	// Bytes that are not what their checksum says are never given to a run.
	bad := sum("the real bytes")
	put(dispatch.CASKey(bad), "other bytes")
	if err := c.Link(ctx, bad, filepath.Join(dir, "runa", "bad.txt")); err == nil {
		t.Fatal("a file whose bytes do not match its checksum was linked")
	}
	if _, err := os.Stat(filepath.Join(dir, "cache", bad)); err == nil {
		t.Fatal("a file whose bytes do not match its checksum was kept")
	}
	// Over the cap, the least recently used go; a file linked into a run stays there.
	big := strings.Repeat("x", 700<<10)
	put(dispatch.CASKey(sum(big)), big)
	if err := c.Link(ctx, sum(big), filepath.Join(dir, "runa", "big.txt")); err != nil {
		t.Fatal(err)
	}
	big2 := strings.Repeat("y", 700<<10)
	put(dispatch.CASKey(sum(big2)), big2)
	if err := c.Link(ctx, sum(big2), filepath.Join(dir, "runb", "big2.txt")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache", sum(big))); err == nil {
		t.Fatal("the cache kept more than its cap")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "runa", "big.txt")); string(b) != big {
		t.Fatal("an evicted file linked into a run lost its bytes")
	}
}
