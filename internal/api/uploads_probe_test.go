package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/blob"
	"github.com/skrip-dev/skrip/internal/store"
)

// Resumable uploads as an attacker or a careless client uses them: racing requests,
// limits pushed from several sides, requests the protocol's handler should never take.

// createConcurrently sends n creations of size bytes at once and returns their statuses.
func createConcurrently(t *testing.T, env *apptest.Env, token string, n, size int) map[int]int {
	t.Helper()
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		wg       sync.WaitGroup
		start    = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", env.URL+"/api/v1/uploads/", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Tus-Resumable", "1.0.0")
			req.Header.Set("Upload-Length", strconv.Itoa(size))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return statuses
}

// TestUploadsConcurrentCreations: creations sent at once cannot together reserve more
// than the quota, nor open more than 100 uploads: the check and the insert are one step.
func TestUploadsConcurrentCreations(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesMaxFileBytes = 1 << 20
		cfg.FilesUserQuotaBytes = 1 << 20
		env := apptest.Start(t, cfg)
		for _, name := range []string{"greta", "gorm", "gull"} {
			_, u := env.User(t, name, "user")
			got := createConcurrently(t, env, u.Token, 16, 700<<10)
			if got[http.StatusCreated] != 1 || got[http.StatusInsufficientStorage] != 15 {
				t.Fatalf("16 creations of 700 KiB at once against a 1 MiB quota: %v", got)
			}
		}

		_, v := env.User(t, "hugo", "user")
		for i := range 95 {
			if _, a := createUpload(t, env, v.Token, 1, ""); a.status != http.StatusCreated {
				t.Fatalf("creation %d: %d %s", i, a.status, a.raw)
			}
		}
		got := createConcurrently(t, env, v.Token, 16, 1)
		if got[http.StatusCreated] != 5 || got[http.StatusConflict] != 11 {
			t.Fatalf("16 creations at once with 95 of 100 open: %v", got)
		}
	})
}

// rawPatch is a PATCH on a connection of its own, its body sent in steps by the caller.
type rawPatch struct {
	conn net.Conn
	r    *bufio.Reader
}

func startPatch(t *testing.T, env *apptest.Env, token, path string, offset, length int) *rawPatch {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "PATCH %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: %d\r\n"+
		"Content-Type: application/offset+octet-stream\r\nContent-Length: %d\r\n\r\n", path, token, offset, length)
	return &rawPatch{conn: conn, r: bufio.NewReader(conn)}
}

func (p *rawPatch) send(t *testing.T, b []byte) {
	t.Helper()
	if _, err := p.conn.Write(b); err != nil {
		t.Fatal(err)
	}
}

func (p *rawPatch) answer(t *testing.T) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(p.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestUploadsConcurrentPatches: two clients send the same bytes at the same offset at
// once, from two connections: one wins and finishes the file, the other is 409, and the
// file has every byte once.
func TestUploadsConcurrentPatches(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "ines", "user")
		data := randomBytes(t, 2<<20+11)
		path, a := createUpload(t, env, u.Token, len(data), tusMeta("key", "files/twice.bin"))
		if path == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		if a := patchUpload(t, env, u.Token, path, 0, data[:1000]); a.status != http.StatusNoContent {
			t.Fatalf("first PATCH: %d %s", a.status, a.raw)
		}
		rest := data[1000:]
		p1 := startPatch(t, env, u.Token, path, 1000, len(rest))
		p2 := startPatch(t, env, u.Token, path, 1000, len(rest))
		half := len(rest) / 2
		p1.send(t, rest[:half])
		p2.send(t, rest[:half])
		p1.send(t, rest[half:])
		p2.send(t, rest[half:])
		// With the upload's lock, the second asks the first to let go: the first stops
		// (400, keeping what it read) and the second finds the offset moved (409); or
		// one wins. Never do both write, and a resume from HEAD finishes the file.
		r1, r2 := p1.answer(t), p2.answer(t)
		ok := map[int]bool{http.StatusNoContent: true, http.StatusBadRequest: true, http.StatusConflict: true}
		if !ok[r1.StatusCode] || !ok[r2.StatusCode] || r1.StatusCode == http.StatusNoContent && r2.StatusCode == http.StatusNoContent {
			t.Fatalf("two PATCHes at once: %d %v, %d %v", r1.StatusCode, r1.Header, r2.StatusCode, r2.Header)
		}
		if off := uploadOffset(t, env, u.Token, path); off < len(data) {
			if a := patchUpload(t, env, u.Token, path, off, data[off:]); a.status != http.StatusNoContent || a.header.Get("X-Checksum") != sum(data) {
				t.Fatalf("resuming at %d: %d %s %v", off, a.status, a.raw, a.header)
			}
		}
		got := send(t, env, "GET", "/api/v1/files/files/twice.bin", u.Token, "", nil)
		if got.raw != string(data) {
			t.Fatalf("GET: %d, %d bytes of %d", got.status, len(got.raw), len(data))
		}
		if keys := storedKeys(t, env); len(keys) != 1 {
			t.Fatalf("the blob store holds %v", keys)
		}
	})
}

// TestUploadsRefusedRequests: another user's upload, method overrides, path tricks, the
// IETF draft's headers and a huge Upload-Metadata reach nothing they should, and every
// refusal is the JSON envelope.
func TestUploadsRefusedRequests(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "kim", "user")
		_, v := env.User(t, "lars", "user")
		path, a := createUpload(t, env, u.Token, 100, tusMeta("key", "files/mine"))
		if path == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		if a := patchUpload(t, env, u.Token, path, 0, []byte("0123456789")); a.status != http.StatusNoContent {
			t.Fatalf("PATCH: %d %s", a.status, a.raw)
		}
		for _, tok := range []string{v.Token, env.AdminToken} {
			for _, m := range []string{"HEAD", "GET", "DELETE"} {
				if a := send(t, env, m, path, tok, "", nil, "Tus-Resumable", "1.0.0"); a.status != http.StatusNotFound {
					t.Fatalf("%s of another's upload: %d %s", m, a.status, a.raw)
				}
			}
			if a := patchUpload(t, env, tok, path, 10, []byte("x")); a.status != http.StatusNotFound || a.errCode() != "not_found" {
				t.Fatalf("PATCH of another's upload: %d %s", a.status, a.raw)
			}
		}
		// Method overrides on the creation URL do not reach an upload.
		for _, m := range []string{"DELETE", "PATCH", "HEAD", "GET"} {
			a := send(t, env, "POST", "/api/v1/uploads/", u.Token, "", nil, "Tus-Resumable", "1.0.0", "X-HTTP-Method-Override", m, "Upload-Offset", "10")
			if a.status < 400 || a.errCode() == "" {
				t.Fatalf("POST overridden to %s: %d %s", m, a.status, a.raw)
			}
		}
		a = send(t, env, "POST", path, u.Token, "application/offset+octet-stream", strings.NewReader("x"), "Tus-Resumable", "1.0.0",
			"X-HTTP-Method-Override", "PATCH", "Upload-Offset", "10")
		if a.status < 400 || a.errCode() == "" {
			t.Fatalf("POST to an upload overridden to PATCH: %d %s", a.status, a.raw)
		}
		// The IETF draft's headers are not another way in: the request is tus 1.0's.
		a = send(t, env, "POST", "/api/v1/uploads/", u.Token, "", nil, "Upload-Draft-Interop-Version", "6", "Upload-Length", "-1000000", "Upload-Complete", "?0")
		if a.status != http.StatusPreconditionFailed {
			t.Fatalf("a creation in the IETF draft: %d %s", a.status, a.raw)
		}
		// Path tricks.
		id := strings.TrimPrefix(path, "/api/v1/uploads/")
		for _, p := range []string{"/api/v1/uploads/x/../" + id, "/api/v1/uploads/" + id + "/", "/api/v1/uploads/" + id + "/extra",
			"/api/v1/uploads//" + id, "/api/v1/uploads/" + id + "%2Fx"} {
			if a := send(t, env, "HEAD", p, u.Token, "", nil, "Tus-Resumable", "1.0.0"); a.status < 400 || a.header.Get("Upload-Offset") != "" {
				t.Fatalf("HEAD %s: %d %v", p, a.status, a.header)
			}
			if a := patchUpload(t, env, u.Token, p, 10, []byte("x")); a.status < 400 || a.errCode() == "" {
				t.Fatalf("PATCH %s: %d %s", p, a.status, a.raw)
			}
		}
		// Discovery without a token tells nothing of an upload.
		if a := send(t, env, "OPTIONS", path, "", "", nil); a.header.Get("Upload-Offset") != "" || a.header.Get("Upload-Length") != "" || a.raw != "" {
			t.Fatalf("OPTIONS of an upload: %d %v %q", a.status, a.header, a.raw)
		}
		if uploadOffset(t, env, u.Token, path) != 10 {
			t.Fatal("the upload changed")
		}
		// A huge Upload-Metadata: a content type or name far too long is refused or cut,
		// never a 500.
		big := strings.Repeat("a", 600<<10)
		for _, md := range []string{tusMeta("content_type", "text/plain; x="+big), tusMeta("filename", big), tusMeta("key", "files/"+big)} {
			p, a := createUpload(t, env, u.Token, 5, md)
			if a.status >= 500 {
				t.Fatalf("create with %d bytes of metadata: %d %s", len(md), a.status, a.raw)
			}
			if p != "" {
				if a := patchUpload(t, env, u.Token, p, 0, []byte("hello")); a.status >= 500 {
					t.Fatalf("PATCH of an upload with %d bytes of metadata: %d %s", len(md), a.status, a.raw)
				}
			}
		}
		a = send(t, env, "POST", "/api/v1/uploads/", u.Token, "", nil, "Tus-Resumable", "1.0.0", "Upload-Length", "5",
			"Upload-Metadata", tusMeta("filename", strings.Repeat("b", 2<<20)))
		if a.status != http.StatusRequestHeaderFieldsTooLarge || a.errCode() == "" {
			t.Fatalf("a creation with 2 MiB of metadata: %d %.300s", a.status, a.raw)
		}
	})
}

// TestUploadsFinishOverQuota: an upload whose file no longer fits when it is made (the
// quota was lowered meanwhile) ends with 507, in one request or several: its bytes go,
// it answers 404, and its reservation is free for the next upload.
func TestUploadsFinishOverQuota(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesMaxFileBytes = 2 << 20
		cfg.FilesUserQuotaBytes = 3 << 20
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "maja", "user")
		data := randomBytes(t, 3<<19)
		several, a := createUpload(t, env, u.Token, len(data), tusMeta("key", "files/several"))
		if several == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		if a := patchUpload(t, env, u.Token, several, 0, data[:1<<20]); a.status != http.StatusNoContent {
			t.Fatalf("PATCH: %d %s", a.status, a.raw)
		}
		one, a := createUpload(t, env, u.Token, len(data)/2, tusMeta("key", "files/one"))
		if one == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		env.App.Close()
		cfg.FilesUserQuotaBytes = 1 << 19
		env = apptest.Start(t, cfg)

		for _, c := range []struct {
			path string
			off  int
			data []byte
		}{{several, 1 << 20, data}, {one, 0, data[:len(data)/2]}} {
			a := patchUpload(t, env, u.Token, c.path, c.off, c.data[c.off:])
			if a.status != http.StatusInsufficientStorage || a.errCode() != "quota_exceeded" || a.header.Get("X-File-Key") != "" {
				t.Fatalf("the last PATCH of an upload over the lowered quota: %d %s %v", a.status, a.raw, a.header)
			}
			if a := send(t, env, "HEAD", c.path, u.Token, "", nil, "Tus-Resumable", "1.0.0"); a.status != http.StatusNotFound {
				t.Fatalf("HEAD after the failed finish: %d %v", a.status, a.header)
			}
		}
		if keys := storedKeys(t, env); len(keys) != 0 {
			t.Fatalf("after the failed finishes the blob store holds %v", keys)
		}
		if l := send(t, env, "GET", "/api/v1/files", u.Token, "", nil); strings.Contains(l.raw, "files/several") || strings.Contains(l.raw, "files/one") {
			t.Fatalf("a file that did not fit is listed: %s", l.raw)
		}
		// The reservations went with them.
		if _, a := createUpload(t, env, u.Token, 1<<19, ""); a.status != http.StatusCreated {
			t.Fatalf("an upload that fits: %d %s", a.status, a.raw)
		}
	})
}

// TestUploadsFinishInterrupted: a server that stops while it makes an upload's file
// leaves the upload held until its hold runs out; then the upload gives back its last
// part, and sending those bytes again makes the file, with every byte once.
func TestUploadsFinishInterrupted(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "nils", "user")
		data := randomBytes(t, 1<<20+333)
		path, a := createUpload(t, env, u.Token, len(data), tusMeta("key", "files/held"))
		if path == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		id := strings.TrimPrefix(path, "/api/v1/uploads/")
		if a := patchUpload(t, env, u.Token, path, 0, data[:1000]); a.status != http.StatusNoContent {
			t.Fatalf("PATCH: %d %s", a.status, a.raw)
		}
		if a := patchUpload(t, env, u.Token, path, 1000, data[1000:2000]); a.status != http.StatusNoContent {
			t.Fatalf("PATCH: %d %s", a.status, a.raw)
		}
		// The last part as the request that stored it left it when its server went away:
		// recorded, the upload held for a moment.
		st := env.App.Store
		ctx := t.Context()
		blobKey := "files/_objects/b_last"
		if _, err := env.App.Blobs.Put(ctx, blobKey, bytes.NewReader(data[2000:]), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if err := st.AddUploadPart(ctx, id, store.UploadPart{Start: 2000, Size: int64(len(data) - 2000), BlobKey: blobKey, Checksum: "x"},
			10000, now, now.Add(time.Hour), now.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if off := uploadOffset(t, env, u.Token, path); off != len(data) {
			t.Fatalf("while held the offset is %d", off)
		}
		if a := send(t, env, "DELETE", path, u.Token, "", nil, "Tus-Resumable", "1.0.0"); a.status != http.StatusConflict {
			t.Fatalf("DELETE while held: %d %s", a.status, a.raw)
		}
		time.Sleep(1100 * time.Millisecond)
		if off := uploadOffset(t, env, u.Token, path); off != 2000 {
			t.Fatalf("after the hold the offset is %d, not 2000", off)
		}
		fin := patchUpload(t, env, u.Token, path, 2000, data[2000:])
		if fin.status != http.StatusNoContent || fin.header.Get("X-Checksum") != sum(data) {
			t.Fatalf("the last PATCH again: %d %s %v", fin.status, fin.raw, fin.header)
		}
		if got := send(t, env, "GET", "/api/v1/files/files/held", u.Token, "", nil); got.raw != string(data) {
			t.Fatalf("GET: %d, %d bytes", got.status, len(got.raw))
		}
		if keys := storedKeys(t, env); len(keys) != 1 {
			t.Fatalf("the blob store holds %v", keys)
		}
	})
}

// rawRequest sends req as it is on a connection of its own and returns the answer.
func rawRequest(t *testing.T, env *apptest.Env, req string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// chunked is data as one chunk of a chunked body, and the body's end.
func chunked(data []byte) string {
	return fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(data), data)
}

// TestUploadsChunkedBodies: a PATCH without a Content-Length (chunked) that sends past
// the upload's length is 413 and makes no file, as one with a Content-Length is; a
// malformed chunked body is the client's error, not the server's.
func TestUploadsChunkedBodies(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "olga", "user")
		data := randomBytes(t, 5000)
		path, a := createUpload(t, env, u.Token, 4000, tusMeta("key", "files/long"))
		if path == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		head := fmt.Sprintf("PATCH %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: %%d\r\n"+
			"Content-Type: application/offset+octet-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n", path, u.Token)
		resp, body := rawRequest(t, env, fmt.Sprintf(head, 0)+chunked(data))
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("a chunked PATCH of 5000 bytes into 4000: %d %v %s", resp.StatusCode, resp.Header, body)
		}
		if got := send(t, env, "GET", "/api/v1/files/files/long", u.Token, "", nil); got.status != http.StatusNotFound {
			t.Fatalf("a file was made of the first 4000 of 5000 bytes: %d", got.status)
		}
		off := uploadOffset(t, env, u.Token, path)
		resp, body = rawRequest(t, env, fmt.Sprintf(head, off)+"zz\r\nabc\r\n0\r\n\r\n")
		if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("a malformed chunked body: %d %v %s", resp.StatusCode, resp.Header, body)
		}
		// A chunked PATCH of the right bytes finishes it.
		off = uploadOffset(t, env, u.Token, path)
		resp, body = rawRequest(t, env, fmt.Sprintf(head, off)+chunked(data[off:4000]))
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("X-Checksum") != sum(data[:4000]) {
			t.Fatalf("a chunked last PATCH: %d %v %s", resp.StatusCode, resp.Header, body)
		}
		if keys := storedKeys(t, env); len(keys) != 1 {
			t.Fatalf("the blob store holds %v", keys)
		}
	})
}

// TestUploadsStalledPatch: a PATCH whose body stops arriving is cut after the idle
// timeout with 408, and keeps the bytes that came; the next PATCH goes on from there.
func TestUploadsStalledPatch(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.HTTPBodyIdleTimeout = time.Second
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "pia", "user")
		data := randomBytes(t, 300_000)
		path, a := createUpload(t, env, u.Token, len(data), tusMeta("key", "files/slow"))
		if path == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		p := startPatch(t, env, u.Token, path, 0, len(data))
		p.send(t, data[:100_000])
		resp := p.answer(t) // the server gives up on the body after a second
		if resp.StatusCode != http.StatusRequestTimeout || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("a stalled PATCH: %d %v", resp.StatusCode, resp.Header)
		}
		off := uploadOffset(t, env, u.Token, path)
		if off != 100_000 {
			t.Fatalf("after a stalled PATCH the offset is %d", off)
		}
		if a := patchUpload(t, env, u.Token, path, off, data[off:]); a.status != http.StatusNoContent || a.header.Get("X-Checksum") != sum(data) {
			t.Fatalf("the rest: %d %s %v", a.status, a.raw, a.header)
		}
	})
}

// TestUploadsFinishBesidePut: an upload that finishes into a key while a plain PUT is
// writing it: whichever commits last holds the key, and a PUT that then fails leaves the
// upload's file as it is.
func TestUploadsFinishBesidePut(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "rut", "user")
		for _, parts := range []int{1, 2} {
			key := fmt.Sprintf("files/same%d", parts)
			// A PUT that sends half its body, then waits.
			conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			put := randomBytes(t, 200_000)
			fmt.Fprintf(conn, "PUT /api/v1/files/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", key, u.Token, len(put))
			conn.Write(put[:100_000])
			time.Sleep(300 * time.Millisecond)

			data := randomBytes(t, 150_000)
			path, a := createUpload(t, env, u.Token, len(data), tusMeta("key", key))
			if path == "" {
				t.Fatalf("create: %d %s", a.status, a.raw)
			}
			if parts == 2 {
				if a := patchUpload(t, env, u.Token, path, 0, data[:1000]); a.status != http.StatusNoContent {
					t.Fatalf("PATCH: %d %s", a.status, a.raw)
				}
			}
			off := uploadOffset(t, env, u.Token, path)
			if a := patchUpload(t, env, u.Token, path, off, data[off:]); a.status != http.StatusNoContent || a.header.Get("X-Checksum") != sum(data) {
				t.Fatalf("last PATCH: %d %s", a.status, a.raw)
			}
			// The PUT's client goes away: its upload fails, and the key keeps the file.
			conn.Close()
			time.Sleep(300 * time.Millisecond)
			got := send(t, env, "GET", "/api/v1/files/"+key, u.Token, "", nil)
			if got.status != 200 || got.raw != string(data) {
				t.Fatalf("%d parts: GET after the PUT failed: %d, %d bytes", parts, got.status, len(got.raw))
			}
			st := send(t, env, "GET", path, u.Token, "", nil)
			if file, _ := st.body["file"].(map[string]any); file["checksum"] != sum(data) {
				t.Fatalf("GET the upload: %s", st.raw)
			}
		}
	})
}

// TestUploadsReopenRace: requests that arrive at once after a held upload's hold ran
// out all see it reopened: none tells the offset of the part that was given back (a
// client told the whole length would take the upload for finished).
func TestUploadsReopenRace(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "sven", "user")
		data := randomBytes(t, 3000)
		for round := range 5 {
			path, a := createUpload(t, env, u.Token, len(data), "")
			if path == "" {
				t.Fatalf("create: %d %s", a.status, a.raw)
			}
			id := strings.TrimPrefix(path, "/api/v1/uploads/")
			if a := patchUpload(t, env, u.Token, path, 0, data[:1000]); a.status != http.StatusNoContent {
				t.Fatalf("PATCH: %d %s", a.status, a.raw)
			}
			blobKey := fmt.Sprintf("files/_objects/b_last%d", round)
			if _, err := env.App.Blobs.Put(t.Context(), blobKey, bytes.NewReader(data[1000:]), blob.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			if err := env.App.Store.AddUploadPart(t.Context(), id, store.UploadPart{Start: 1000, Size: 2000, BlobKey: blobKey, Checksum: "x"},
				10000, now, now.Add(time.Hour), now.Add(300*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond)
			var wg sync.WaitGroup
			offsets := make([]string, 8)
			for i := range offsets {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req, _ := http.NewRequest("HEAD", env.URL+path, nil)
					req.Header.Set("Authorization", "Bearer "+u.Token)
					req.Header.Set("Tus-Resumable", "1.0.0")
					if resp, err := http.DefaultClient.Do(req); err == nil {
						offsets[i] = resp.Header.Get("Upload-Offset")
						resp.Body.Close()
					}
				}()
			}
			wg.Wait()
			for _, off := range offsets {
				if off != "1000" {
					t.Fatalf("round %d: HEADs at once after the hold ran out tell the offsets %v", round, offsets)
				}
			}
		}
	})
}

// TestUploadsCutCreation: a creation with upload whose request fails (the connection
// dropped) never told the client its Location: nobody can resume it, so it holds
// neither bytes nor a reservation, and the client can start over at once.
func TestUploadsCutCreation(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesMaxFileBytes = 1 << 20
		cfg.FilesUserQuotaBytes = 1 << 20
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "tilda", "user")
		data := randomBytes(t, 800<<10)
		conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /api/v1/uploads/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTus-Resumable: 1.0.0\r\nUpload-Length: %d\r\n"+
			"Content-Type: application/offset+octet-stream\r\nContent-Length: %d\r\n\r\n", u.Token, len(data), len(data))
		conn.Write(data[:100<<10])
		time.Sleep(300 * time.Millisecond)
		conn.Close()
		var a answer
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var path string
			if path, a = createUpload(t, env, u.Token, len(data), ""); path != "" {
				break
			}
		}
		if a.status != http.StatusCreated {
			t.Fatalf("a new creation after a cut one: %d %s", a.status, a.raw)
		}
		if keys := storedKeys(t, env); len(keys) != 0 {
			t.Fatalf("the cut creation left %v", keys)
		}
	})
}
