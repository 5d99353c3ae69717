package natsblob

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// The benchmarks below put and get objects of two sizes, natsblob's own and nats.go's
// ObjectStore side by side, on a nats-server in another process (so that the
// allocations counted are the client's, not the server's), over TCP as with
// SKRIP_NATS_URL. Allocations per op grow with the size, one message per chunk; what
// must not grow is allocs/MiB and B/MiB, the cost per byte moved (and the memory held,
// which TestServerMemoryIsFlatForLargeFiles in internal/cli checks).

var benchSizes = []int64{16 << 20, 128 << 20}

// benchStore opens a bucket on a separate nats-server.
func benchStore(b *testing.B) *Store {
	nc, err := nats.Connect(testutil.NATSServer(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return newTestStore(b, nc, Config{Bucket: "bench"})
}

// benchSource yields size bytes of a 1 MiB random block repeated.
func benchSource(b *testing.B, size int64) io.Reader {
	block := make([]byte, 1<<20)
	rand.Read(block)
	return io.LimitReader(&repeat{block: block}, size)
}

type repeat struct {
	block []byte
	off   int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := copy(p, r.block[r.off:])
	r.off = (r.off + n) % len(r.block)
	return n, nil
}

// reportPerMiB adds allocations per MiB moved, from the totals the benchmark measured.
func reportPerMiB(b *testing.B, size int64, run func()) {
	b.ReportAllocs()
	b.SetBytes(size)
	var before, after runtimeStats
	before.read()
	b.ResetTimer()
	n := 0
	for b.Loop() {
		run()
		n++
	}
	b.StopTimer()
	after.read()
	mib := float64(size) / (1 << 20) * float64(n)
	b.ReportMetric(float64(after.mallocs-before.mallocs)/mib, "allocs/MiB")
	b.ReportMetric(float64(after.bytes-before.bytes)/mib, "B/MiB")
	b.ReportMetric(float64((after.cpu-before.cpu).Microseconds())/mib, "cpu-µs/MiB")
}

func BenchmarkPut(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("natsblob/%dMiB", size>>20), func(b *testing.B) {
			s := benchStore(b)
			reportPerMiB(b, size, func() {
				if _, err := s.Put(context.Background(), "files/bench", benchSource(b, size), blob.PutOptions{}); err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(fmt.Sprintf("ObjectStore/%dMiB", size>>20), func(b *testing.B) {
			s := benchStore(b)
			reportPerMiB(b, size, func() {
				if _, err := s.obs.Put(context.Background(), jetstream.ObjectMeta{Name: "files/bench"}, benchSource(b, size)); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("natsblob/%dMiB", size>>20), func(b *testing.B) {
			s := benchStore(b)
			if _, err := s.Put(context.Background(), "files/bench", benchSource(b, size), blob.PutOptions{}); err != nil {
				b.Fatal(err)
			}
			reportPerMiB(b, size, func() {
				rc, _, err := s.Get(context.Background(), "files/bench", 0, -1)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, rc); err != nil || n != size {
					b.Fatalf("read %d of %d bytes: %v", n, size, err)
				}
				rc.Close()
			})
		})
		b.Run(fmt.Sprintf("ObjectStore/%dMiB", size>>20), func(b *testing.B) {
			s := benchStore(b)
			if _, err := s.obs.Put(context.Background(), jetstream.ObjectMeta{Name: "files/bench"}, benchSource(b, size)); err != nil {
				b.Fatal(err)
			}
			reportPerMiB(b, size, func() {
				r, err := s.obs.Get(context.Background(), "files/bench")
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, r); err != nil || n != size {
					b.Fatalf("read %d of %d bytes: %v", n, size, err)
				}
				r.Close()
			})
		})
	}
}

// BenchmarkRange reads 1 KiB at the start, and the last 1 KiB (a suffix range), of a
// 50 MB object: both start at the chunk that holds their first byte.
func BenchmarkRange(b *testing.B) {
	const size = 50_000_000
	s := benchStore(b)
	if _, err := s.Put(context.Background(), "files/bench", benchSource(b, size), blob.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		off  int64
	}{{"start", 0}, {"suffix", size - 1024}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rc, _, err := s.Get(context.Background(), "files/bench", c.off, 1024)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, rc); err != nil || n != 1024 {
					b.Fatalf("read %d bytes: %v", n, err)
				}
				rc.Close()
			}
		})
	}
}

// runtimeStats is the process's allocation totals, and the CPU time it and the
// nats-server it started have used: wall-clock time on a shared machine is noisy, CPU
// time much less.
type runtimeStats struct {
	mallocs, bytes uint64
	cpu            time.Duration
}

func (s *runtimeStats) read() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.mallocs, s.bytes = m.Mallocs, m.TotalAlloc
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s.cpu += childrenCPU()
}

// childrenCPU is the CPU time used so far by the running children of this process (the
// nats-server testutil starts), from /proc, in clock ticks of 10 ms.
func childrenCPU() time.Duration {
	ents, _ := os.ReadDir("/proc")
	var total time.Duration
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command, which is in parentheses: state ppid ... utime(14) stime(15).
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * 10 * time.Millisecond
	}
	return total
}
