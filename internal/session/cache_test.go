package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/blob/natsblob"
	"github.com/skrip-dev/skrip/internal/blobcache"
	"github.com/skrip-dev/skrip/internal/natsserver"
)

func natsBlobs(t testing.TB) *natsblob.Store {
	t.Helper()
	srv, err := natsserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	s, err := natsblob.New(context.Background(), nc, natsblob.Config{Bucket: "skrip-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func counted(c prometheus.Counter) float64 {
	var d dto.Metric
	c.Write(&d)
	return d.GetCounter().GetValue()
}

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestInjectFromCacheOnNATS: on the NATS backend the session files are fetched into the
// cache once; every snapshot after is hard links to the cache's checked, read-only
// files, and the blob store is not read again.
func TestInjectFromCacheOnNATS(t *testing.T) {
	ctx := context.Background()
	st, _, k := setup(t)
	blobs := natsBlobs(t)
	s := New(st, blobs, time.Hour, slog.New(slog.DiscardHandler))
	data := t.TempDir()
	hits := prometheus.NewCounter(prometheus.CounterOpts{Name: "hits"})
	misses := prometheus.NewCounter(prometheus.CounterOpts{Name: "misses"})
	cache, err := blobcache.Open(blobcache.Config{Dir: filepath.Join(data, "cache"), MaxBytes: 1 << 30, Hits: hits, Misses: misses})
	if err != nil {
		t.Fatal(err)
	}
	s.UseCache(cache)
	big := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16)
	dir, names := files(t, map[string]string{"big.bin": string(big), "small.txt": "small"})
	if err := s.Replace(ctx, k, dir, names); err != nil {
		t.Fatal(err)
	}
	kept, _, _ := s.Files(ctx, k)
	for i := range 3 {
		in := filepath.Join(data, "inputs", string(rune('a'+i)))
		os.MkdirAll(in, 0o755)
		if _, err := s.Inject(ctx, k, in); err != nil {
			t.Fatal(err)
		}
		for _, f := range kept {
			p := filepath.Join(in, f.Name)
			b, _ := os.ReadFile(p)
			fi, _ := os.Stat(p)
			want := "small"
			if f.Name == "big.bin" {
				want = string(big)
			}
			if string(b) != want || fi.Mode().Perm()&0o222 != 0 {
				t.Fatalf("snapshot %d: %s has %d bytes, mode %v", i, f.Name, len(b), fi.Mode())
			}
			if ino(t, p) != ino(t, filepath.Join(data, "cache", f.SHA256)) {
				t.Fatalf("snapshot %d: %s is not a link of the cache's file", i, f.Name)
			}
		}
	}
	if counted(misses) != 2 || counted(hits) != 4 {
		t.Fatalf("cache misses %v, hits %v; want 2 and 4: the blob store was read again", counted(misses), counted(hits))
	}

	// Bytes in the blob store that are not what the set recorded never reach a run.
	var bigKey string
	for _, f := range kept {
		if f.Name == "big.bin" {
			bigKey = f.Key
		}
	}
	if _, err := blobs.Put(ctx, bigKey, bytes.NewReader(big[:len(big)-1]), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh, err := blobcache.Open(blobcache.Config{Dir: filepath.Join(data, "cache2"), MaxBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	s.UseCache(fresh)
	in := filepath.Join(data, "inputs", "bad")
	os.MkdirAll(in, 0o755)
	if _, err := s.Inject(ctx, k, in); !errors.Is(err, blobcache.ErrMismatch) {
		t.Fatalf("Inject of changed bytes: %v, want ErrMismatch", err)
	}
	if _, err := os.Stat(filepath.Join(in, "big.bin")); err == nil {
		t.Fatal("the changed bytes reached the run's directory")
	}
}

// BenchmarkInjectNATS: a snapshot of 50 MB of session files on the NATS backend, as a
// streamed copy (no cache) and as hard links of the cache (after its first fill).
func BenchmarkInjectNATS(b *testing.B) {
	ctx := context.Background()
	for _, cached := range []bool{false, true} {
		name := "copy"
		if cached {
			name = "cache"
		}
		b.Run(name, func(b *testing.B) {
			st, _, k := setup(b)
			blobs := natsBlobs(b)
			s := New(st, blobs, time.Hour, slog.New(slog.DiscardHandler))
			data := b.TempDir()
			if cached {
				cache, err := blobcache.Open(blobcache.Config{Dir: filepath.Join(data, "cache"), MaxBytes: 1 << 30})
				if err != nil {
					b.Fatal(err)
				}
				s.UseCache(cache)
			}
			dir := b.TempDir()
			os.WriteFile(filepath.Join(dir, "big.bin"), bytes.Repeat([]byte("0123456789"), 5_000_000), 0o644)
			if err := s.Replace(ctx, k, dir, []string{"big.bin"}); err != nil {
				b.Fatal(err)
			}
			inject := func(i int) {
				in := filepath.Join(data, "in", fmt.Sprint(i))
				os.MkdirAll(in, 0o755)
				if _, err := s.Inject(ctx, k, in); err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(in)
			}
			inject(-1) // fills the cache
			b.SetBytes(50_000_000)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				inject(i)
			}
		})
	}
}
