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

	"github.com/skrip-dev/skrip/internal/apptest"
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
		r1, r2 := p1.answer(t), p2.answer(t)
		won, lost := r1, r2
		if r2.StatusCode == http.StatusNoContent {
			won, lost = r2, r1
		}
		if won.StatusCode != http.StatusNoContent || lost.StatusCode != http.StatusConflict || won.Header.Get("X-Checksum") != sum(data) {
			t.Fatalf("two PATCHes at once: %d %v, %d %v", r1.StatusCode, r1.Header, r2.StatusCode, r2.Header)
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

// TestUploadsTerminateRacesPatch: a DELETE that races a PATCH leaves no part behind in
// the blob store, whichever of them wins.
func TestUploadsTerminateRacesPatch(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "jens", "user")
		data := randomBytes(t, 64<<10)
		for i := range 40 {
			path, a := createUpload(t, env, u.Token, 2*len(data), "")
			if path == "" {
				t.Fatalf("create: %d %s", a.status, a.raw)
			}
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("PATCH", env.URL+path, bytes.NewReader(data))
				req.Header.Set("Authorization", "Bearer "+u.Token)
				req.Header.Set("Tus-Resumable", "1.0.0")
				req.Header.Set("Upload-Offset", "0")
				req.Header.Set("Content-Type", "application/offset+octet-stream")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("DELETE", env.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+u.Token)
				req.Header.Set("Tus-Resumable", "1.0.0")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			wg.Wait()
			// Whatever won, a second DELETE ends the upload if it is still there.
			send(t, env, "DELETE", path, u.Token, "", nil, "Tus-Resumable", "1.0.0")
			if keys := storedKeys(t, env); len(keys) != 0 {
				t.Fatalf("round %d: after DELETE the blob store holds %v", i, keys)
			}
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
