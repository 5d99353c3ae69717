package api_test

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// The upload and download paths of the files API stream: what they allocate is a few
// buffers per request, whatever the file's size. The benchmarks report it (-benchmem or
// b.ReportAllocs) at two sizes; TestFilesAllocationsDoNotGrowWithSize asserts it.

// filePath is one way of moving a file through the API.
type filePath struct {
	name string
	// do sends one request moving size bytes (of src, repeated) through env under key
	// and fails unless it succeeded.
	do func(tb testing.TB, env *apptest.Env, key string, size int64, src []byte)
}

var filePaths = []filePath{
	{"multipart POST", func(tb testing.TB, env *apptest.Env, key string, size int64, src []byte) {
		head := "--B\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n" + key + "\r\n" +
			"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.bin\"\r\n" +
			"Content-Type: application/octet-stream\r\n\r\n"
		const tail = "\r\n--B--\r\n"
		body := io.MultiReader(strings.NewReader(head), repeated(src, size), strings.NewReader(tail))
		transfer(tb, env, "POST", "/api/v1/files", "multipart/form-data; boundary=B", body, int64(len(head))+size+int64(len(tail)), 201)
	}},
	{"raw PUT", func(tb testing.TB, env *apptest.Env, key string, size int64, src []byte) {
		transfer(tb, env, "PUT", "/api/v1/files/"+key, "application/octet-stream", repeated(src, size), size, 201)
	}},
	{"GET", func(tb testing.TB, env *apptest.Env, _ string, size int64, src []byte) {
		// The file fsEnv uploaded.
		if n := transfer(tb, env, "GET", "/api/v1/files/"+getKey(size), "", nil, 0, 200); n != size {
			tb.Fatalf("GET %s: %d bytes, want %d", getKey(size), n, size)
		}
	}},
}

// transfer sends one request with a body of n bytes (none when body is nil), reads the
// answer to its end without keeping it, and returns how many bytes the answer had.
func transfer(tb testing.TB, env *apptest.Env, method, path, ctype string, body io.Reader, n int64, want int) int64 {
	req, err := http.NewRequest(method, env.URL+path, body)
	if err != nil {
		tb.Fatal(err)
	}
	req.ContentLength = n
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, resp.Body)
	if err != nil || resp.StatusCode != want {
		tb.Fatalf("%s %s: %d, %v", method, path, resp.StatusCode, err)
	}
	return got
}

// repeated reads size bytes, src over and over, without allocating.
func repeated(src []byte, size int64) io.Reader {
	return &repeatReader{src: src, left: size}
}

type repeatReader struct {
	src  []byte
	off  int
	left int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.left)]
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.src[r.off:])
		n += c
		r.off = (r.off + c) % len(r.src)
	}
	r.left -= int64(n)
	return n, nil
}

// fsEnv starts a server on SQLite and fsblob with no file size limits in the way, and
// one file of size bytes under files/get-<size> for the GET path.
func fsEnv(tb testing.TB, sizes ...int64) (*apptest.Env, []byte) {
	cfg := apptest.Config(tb, apptest.Backend{Name: "sqlite+fs", Blob: "fs"})
	cfg.FilesMaxFileBytes, cfg.FilesUserQuotaBytes, cfg.FilesMaxTotalBytes = 1<<40, 1<<40, 1<<40
	env := apptest.Start(tb, cfg)
	src := make([]byte, 1<<20)
	rand.Read(src)
	for _, size := range sizes {
		filePaths[1].do(tb, env, getKey(size), size, src)
	}
	return env, src
}

func getKey(size int64) string { return fmt.Sprintf("files/get-%d", size) }

func sizeName(size int64) string { return fmt.Sprintf("%dMiB", size>>20) }

// BenchmarkFileTransfer moves 1 MiB and 64 MiB files through each path of the files API
// on fsblob, over loopback HTTP with the client in the same process. B/op and allocs/op
// are the process's, client included; they stay the same at both sizes. cpu-ms/op is the
// CPU time the process took (server and client, user and system), which on a shared
// machine moves less than the wall time.
//
//	go test -run '^$' -bench FileTransfer -benchtime 10x ./internal/api
func BenchmarkFileTransfer(b *testing.B) {
	sizes := []int64{1 << 20, 64 << 20}
	env, src := fsEnv(b, sizes...)
	for _, p := range filePaths {
		for _, size := range sizes {
			b.Run(p.name+"/"+sizeName(size), func(b *testing.B) {
				key := fmt.Sprintf("files/bench-%d", size)
				b.SetBytes(size)
				b.ReportAllocs()
				var before, after syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &before)
				for b.Loop() {
					p.do(b, env, key, size, src)
				}
				syscall.Getrusage(syscall.RUSAGE_SELF, &after)
				cpu := after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano()
				b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// TestFilesAllocationsDoNotGrowWithSize moves a 1 MiB and a 64 MiB file through each path
// of the files API on fsblob and compares what the whole process allocated for each: the
// bigger file may cost a little more (a few reads more, a GC cycle), never anything that
// grows with the bytes. A buffer or an object per chunk would be 64 times more.
func TestFilesAllocationsDoNotGrowWithSize(t *testing.T) {
	const small, big = 1 << 20, 64 << 20
	// Bounds on the extra cost of the 64 MiB file over the 1 MiB one. Copying 63 MiB more
	// in 32 KiB chunks with one 32-byte allocation each would be 2016 allocations and
	// 64 KiB; with a fresh 32 KiB buffer each, 63 MiB.
	const maxExtraAllocs, maxExtraBytes = 400, 512 << 10
	env, src := fsEnv(t, small, big)
	for _, p := range filePaths {
		t.Run(p.name, func(t *testing.T) {
			cost := func(size int64) (allocs, bytes uint64) {
				// The least of a few runs: another goroutine of the server (the janitor,
				// the database's pool) may allocate during one of them.
				allocs, bytes = ^uint64(0), ^uint64(0)
				for range 3 {
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					p.do(t, env, "files/alloc", size, src)
					runtime.ReadMemStats(&after)
					allocs = min(allocs, after.Mallocs-before.Mallocs)
					bytes = min(bytes, after.TotalAlloc-before.TotalAlloc)
				}
				return allocs, bytes
			}
			p.do(t, env, "files/alloc", small, src) // the first request of a path sets up its connection and caches
			sa, sb := cost(small)
			ba, bb := cost(big)
			t.Logf("%s: 1 MiB: %d allocations, %d bytes; 64 MiB: %d allocations, %d bytes", p.name, sa, sb, ba, bb)
			if ba > sa+maxExtraAllocs || bb > sb+maxExtraBytes {
				t.Fatalf("%s of 64 MiB allocated %d objects and %d bytes; of 1 MiB, %d and %d: allocation grows with the file's size",
					p.name, ba, bb, sa, sb)
			}
		})
	}
}
