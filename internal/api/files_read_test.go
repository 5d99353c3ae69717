package api_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// objectFile is the file under the fs blob store's dir that holds exactly content.
func objectFile(t *testing.T, env *apptest.Env, content []byte) string {
	t.Helper()
	var found string
	filepath.WalkDir(filepath.Join(env.Config.DataDir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Equal(b, content) {
				found = p
			}
		}
		return nil
	})
	if found == "" {
		t.Fatal("no object file holds the uploaded bytes")
	}
	return found
}

// checkInternal checks a 500 answer: the JSON error with a request id, and nothing of
// the file's.
func checkInternal(t *testing.T, what string, a answer) {
	t.Helper()
	if a.status != 500 || a.errCode() != "internal" || a.body["error"].(map[string]any)["details"].(map[string]any)["request_id"] == "" ||
		a.header.Get("X-Checksum") != "" || a.header.Get("Content-Disposition") != "" {
		t.Fatalf("%s: %d %v %s; want a JSON 500 with a request id", what, a.status, a.header, a.raw)
	}
}

// TestFilesMissingBytes: when a file's bytes are gone from the blob store or shorter than
// recorded, GET and HEAD answer a JSON 500 with a request id before any header of the
// file goes out, and the failure is counted.
func TestFilesMissingBytes(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		c, u := env.User(t, "u", "user")
		ctx := context.Background()
		gone := []byte("these bytes will go")
		if _, err := c.Upload(ctx, "gone.txt", bytes.NewReader(gone), client.UploadOptions{Key: "files/gone.txt"}); err != nil {
			t.Fatal(err)
		}
		if b.Blob == "fs" {
			os.Remove(objectFile(t, env, gone))
		} else if err := env.App.Blobs.Delete(ctx, blobKeyOf(t, env, u.ID, "files/gone.txt")); err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"GET", "HEAD"} {
			a := send(t, env, m, "/api/v1/files/files/gone.txt", u.Token, "", nil)
			if m == "HEAD" {
				if a.status != 500 || a.header.Get("X-Checksum") != "" {
					t.Fatalf("HEAD of missing bytes: %d %v", a.status, a.header)
				}
				continue
			}
			checkInternal(t, "GET of missing bytes", a)
		}
		if n := env.Metric(t, `skrip_blob_read_errors_total{reason="missing"}`); n != 2 {
			t.Fatalf("missing reads counted %v times, want 2", n)
		}
		if b.Blob == "fs" {
			short := bytes.Repeat([]byte("short "), 20000)
			if _, err := c.Upload(ctx, "short.txt", bytes.NewReader(short), client.UploadOptions{Key: "files/short.txt"}); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(objectFile(t, env, short), 1000); err != nil {
				t.Fatal(err)
			}
			checkInternal(t, "GET of short bytes", send(t, env, "GET", "/api/v1/files/files/short.txt", u.Token, "", nil))
			if n := env.Metric(t, `skrip_blob_read_errors_total{reason="short"}`); n != 1 {
				t.Fatalf("short reads counted %v times, want 1", n)
			}
		}
	})
}

// TestFilesStoreDown: with the NATS server gone, GET answers 503 unavailable with
// Retry-After, not a 200 with an empty body.
func TestFilesStoreDown(t *testing.T) {
	cfg := apptest.Config(t, apptest.BlobBackends[1])
	url, stop := testutil.NATSServerWithStop(t)
	cfg.NATSURL = url
	env := apptest.Start(t, cfg)
	c, u := env.User(t, "u", "user")
	if _, err := c.Upload(context.Background(), "a.txt", strings.NewReader("stored in NATS"), client.UploadOptions{Key: "files/a.txt"}); err != nil {
		t.Fatal(err)
	}
	stop()
	a := send(t, env, "GET", "/api/v1/files/files/a.txt", u.Token, "", nil)
	if a.status != 503 || a.errCode() != "unavailable" || a.header.Get("Retry-After") == "" || a.header.Get("X-Checksum") != "" {
		t.Fatalf("GET with NATS down: %d %v %s", a.status, a.header, a.raw)
	}
	if n := env.Metric(t, `skrip_blob_read_errors_total{reason="unavailable"}`); n != 1 {
		t.Fatalf("unavailable reads counted %v times, want 1", n)
	}
}

// TestFilesReadAbortsMidStream: bytes that fail after the headers went out cut the
// connection, so a real HTTP client gets an error, never a clean short body.
func TestFilesReadAbortsMidStream(t *testing.T) {
	t.Run("fs truncated", func(t *testing.T) {
		env := apptest.New(t, apptest.BlobBackends[0])
		_, u := env.User(t, "u", "user")
		data := make([]byte, 64<<20)
		for i := range data {
			data[i] = byte(i * 7)
		}
		if a := send(t, env, "PUT", "/api/v1/files/files/big.bin", u.Token, "", bytes.NewReader(data)); a.status != 201 {
			t.Fatalf("upload: %d %s", a.status, a.raw)
		}
		object := objectFile(t, env, data)
		data = nil
		readAborted(t, env, u.Token, "/api/v1/files/files/big.bin", 64<<20, func() {
			if err := os.Truncate(object, 2<<20); err != nil {
				t.Fatal(err)
			}
		})
		if n := env.Metric(t, `skrip_blob_read_errors_total{reason="short"}`); n != 1 {
			t.Fatalf("the short read counted %v times, want 1", n)
		}
	})
	t.Run("nats stopped", func(t *testing.T) {
		cfg := apptest.Config(t, apptest.BlobBackends[1])
		url, stop := testutil.NATSServerWithStop(t)
		cfg.NATSURL = url
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "u", "user")
		if a := send(t, env, "PUT", "/api/v1/files/files/big.bin", u.Token, "", bytes.NewReader(make([]byte, 64<<20))); a.status != 201 {
			t.Fatalf("upload: %d %s", a.status, a.raw)
		}
		readAborted(t, env, u.Token, "/api/v1/files/files/big.bin", 64<<20, stop)
	})
}

// readAborted GETs path, reads 1 MiB of it, calls breakIt, and checks that reading the
// rest fails with an unexpected EOF before size bytes.
func readAborted(t *testing.T, env *apptest.Env, token, path string, size int64, breakIt func()) {
	t.Helper()
	req, _ := http.NewRequest("GET", env.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != size {
		t.Fatalf("GET: %d, Content-Length %d", resp.StatusCode, resp.ContentLength)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}
	breakIt()
	n, err := io.Copy(io.Discard, resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || 1<<20+n >= size {
		t.Fatalf("after the bytes broke the client read %d more bytes and then %v; want an unexpected EOF before %d", n, err, size)
	}
}

// TestFilesReadsRacingOverwrites: 50 clients at once, half overwriting one key and half
// reading it. Every read is one whole version: its body matches its own X-Checksum, ETag
// and Content-Length, and no read answers 404.
func TestFilesReadsRacingOverwrites(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "u", "user")
		const path = "/api/v1/files/files/hot.bin"
		put := func(seed uint64) string {
			r := rand.New(rand.NewPCG(seed, 1))
			body := bytes.Repeat(fmt.Appendf(nil, "version %d ", seed), 1+r.IntN(16<<10))
			if a := send(t, env, "PUT", path, u.Token, "", bytes.NewReader(body)); a.status != 201 {
				t.Errorf("PUT: %d %s", a.status, a.raw)
			}
			return sum(body)
		}
		put(0)
		const writers, readers, puts = 25, 25, 4
		var written sync.Map
		var done atomic.Bool
		var gets, bad atomic.Int64
		var wg, rg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range puts {
					written.Store(put(uint64(1+i*puts+j)), true)
				}
			}()
		}
		for range readers {
			rg.Add(1)
			go func() {
				defer rg.Done()
				for !done.Load() {
					req, _ := http.NewRequest("GET", env.URL+path, nil)
					req.Header.Set("Authorization", "Bearer "+u.Token)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					gets.Add(1)
					h := sha256.Sum256(body)
					got := "sha256:" + hex.EncodeToString(h[:])
					if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Checksum") != got ||
						resp.Header.Get("ETag") != `"`+hex.EncodeToString(h[:])+`"` || resp.ContentLength != int64(len(body)) {
						bad.Add(1)
						t.Errorf("GET: %d, %v, %d bytes of Content-Length %d, checksum %s, X-Checksum %s",
							resp.StatusCode, err, len(body), resp.ContentLength, got, resp.Header.Get("X-Checksum"))
					}
				}
			}()
		}
		wg.Wait()
		done.Store(true)
		rg.Wait()
		t.Logf("%d GETs during %d overwrites, %d not one whole version", gets.Load(), writers*puts, bad.Load())
		if gets.Load() < 100 {
			t.Fatalf("only %d GETs ran during the overwrites", gets.Load())
		}
	})
}

// TestFilesStageRacingOverwrites: staging a file into a sandbox while its key is
// overwritten stages one whole version, and never answers 404.
func TestFilesStageRacingOverwrites(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		c, u := env.User(t, "u", "user")
		ctx := context.Background()
		var versions sync.Map
		put := func(i int) {
			body := bytes.Repeat([]byte(fmt.Sprintf("version %d\n", i)), 1+i%5000)
			versions.Store(sum(body), true)
			if a := send(t, env, "PUT", "/api/v1/files/files/in.txt", u.Token, "", bytes.NewReader(body)); a.status != 201 {
				t.Errorf("PUT: %d %s", a.status, a.raw)
			}
		}
		put(0)
		boxes := make([]string, 2)
		for i := range boxes {
			sb, err := c.CreateSandbox(ctx, client.SandboxOptions{})
			if err != nil {
				t.Fatal(err)
			}
			boxes[i] = sb.SandboxID
		}
		var done atomic.Bool
		var wg, sg sync.WaitGroup
		for w := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 10 {
					put(1 + w*10 + j)
				}
			}()
		}
		var stages atomic.Int64
		for _, id := range boxes {
			sg.Add(1)
			go func() {
				defer sg.Done()
				for !done.Load() {
					st, err := c.StageFile(ctx, id, "files/in.txt", "in.txt")
					stages.Add(1)
					if err != nil {
						t.Errorf("stage during overwrites: %v", err)
						continue
					}
					if _, ok := versions.Load(st.Checksum); !ok {
						t.Errorf("staged %s, which no upload had", st.Checksum)
					}
				}
			}()
		}
		wg.Wait()
		done.Store(true)
		sg.Wait()
		t.Logf("%d stages during 100 overwrites", stages.Load())
	})
}

// rawRange sends a GET with a Range header over a bare TCP connection, as curl would, and
// returns the status line, the headers and the body.
func rawRange(t *testing.T, env *apptest.Env, token, path, rng string) (string, http.Header, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: skrip\r\nAuthorization: Bearer %s\r\nRange: %s\r\nConnection: close\r\n\r\n", path, token, rng)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.Status, resp.Header, string(body)
}

// TestFilesRanges, with raw requests as curl sends them: a range that selects nothing
// (bytes=-0, or past the end) or is not valid is a JSON 416 with Content-Range:
// bytes */size; ranges that select something are served; another unit is ignored.
func TestFilesRanges(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	_, u := env.User(t, "u", "user")
	if a := send(t, env, "PUT", "/api/v1/files/files/ten.txt", u.Token, "text/plain", strings.NewReader("0123456789")); a.status != 201 {
		t.Fatal(a.raw)
	}
	if a := send(t, env, "PUT", "/api/v1/files/files/empty.txt", u.Token, "text/plain", strings.NewReader("")); a.status != 201 {
		t.Fatal(a.raw)
	}
	tests := []struct {
		path, rng, status, contentRange, body string
	}{
		{"files/ten.txt", "bytes=-0", "416 Requested Range Not Satisfiable", "bytes */10", ""},
		{"files/ten.txt", "bytes=10-", "416 Requested Range Not Satisfiable", "bytes */10", ""},
		{"files/ten.txt", "bytes=-0,20-30", "416 Requested Range Not Satisfiable", "bytes */10", ""},
		{"files/ten.txt", "bytes=5-2", "416 Requested Range Not Satisfiable", "bytes */10", ""},
		{"files/ten.txt", "pages=1", "200 OK", "", "0123456789"},
		// An empty file has no range to serve: its whole (empty) self is.
		{"files/empty.txt", "bytes=-5", "200 OK", "", ""},
		{"files/empty.txt", "bytes=0-", "200 OK", "", ""},
		{"files/ten.txt", "bytes=-0,2-4", "206 Partial Content", "bytes 2-4/10", "234"},
		{"files/ten.txt", "bytes=-3", "206 Partial Content", "bytes 7-9/10", "789"},
		{"files/ten.txt", "bytes=-30", "206 Partial Content", "bytes 0-9/10", "0123456789"},
		{"files/ten.txt", "bytes=9-", "206 Partial Content", "bytes 9-9/10", "9"},
	}
	for _, tt := range tests {
		status, h, body := rawRange(t, env, u.Token, "/api/v1/files/"+tt.path, tt.rng)
		if status != tt.status || h.Get("Content-Range") != tt.contentRange {
			t.Errorf("%s Range %s: %s, Content-Range %q; want %s, %q", tt.path, tt.rng, status, h.Get("Content-Range"), tt.status, tt.contentRange)
			continue
		}
		if !strings.HasPrefix(status, "416") {
			if body != tt.body {
				t.Errorf("%s Range %s: body %q, want %q", tt.path, tt.rng, body, tt.body)
			}
			continue
		}
		if !strings.HasPrefix(h.Get("Content-Type"), "application/json") || !strings.Contains(body, `"code":"range_not_satisfiable"`) ||
			!strings.Contains(body, `"size_bytes":`) || h.Get("Content-Disposition") != "" || h.Get("X-Checksum") != "" {
			t.Errorf("%s Range %s: the 416 is not the JSON error: %v %s", tt.path, tt.rng, h, body)
		}
	}
	// An If-Range that does not match asks for the whole file, whatever the range.
	req, _ := http.NewRequest("GET", env.URL+"/api/v1/files/files/ten.txt", nil)
	req.Header.Set("Authorization", "Bearer "+u.Token)
	req.Header.Set("Range", "bytes=-0")
	req.Header.Set("If-Range", `"not-the-etag"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "0123456789" {
		t.Fatalf("bytes=-0 with a stale If-Range: %d %q", resp.StatusCode, b)
	}
	// An If-Match that does not match is the JSON error too (docs/spec.md §3), on GET and HEAD.
	for _, m := range []string{"GET", "HEAD"} {
		req, _ = http.NewRequest(m, env.URL+"/api/v1/files/files/ten.txt", nil)
		req.Header.Set("Authorization", "Bearer "+u.Token)
		req.Header.Set("If-Match", `"not-the-etag"`)
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 412 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			(m == "GET" && !strings.Contains(string(b), `"code":"precondition_failed"`)) {
			t.Errorf("%s with a stale If-Match: %d %v %q", m, resp.StatusCode, resp.Header, b)
		}
	}
}

// retiredKeys are the blobs of replaced, deleted or expired versions that the janitor
// deletes once their grace is over.
func retiredKeys(t *testing.T, env *apptest.Env) map[string]bool {
	t.Helper()
	rs, err := env.App.Store.RetiredFileBlobs(context.Background(), time.Now().Add(time.Hour), 10000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range rs {
		out[r.BlobKey] = true
	}
	return out
}

// liveKeys is storedKeys without the retired versions' blobs.
func liveKeys(t *testing.T, env *apptest.Env) []string {
	t.Helper()
	retired := retiredKeys(t, env)
	var out []string
	for _, k := range storedKeys(t, env) {
		if !retired[k] {
			out = append(out, k)
		}
	}
	return out
}
