package api_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// tusMeta is an Upload-Metadata header of pairs.
func tusMeta(pairs ...string) string {
	var out []string
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, pairs[i]+" "+base64.StdEncoding.EncodeToString([]byte(pairs[i+1])))
	}
	return strings.Join(out, ",")
}

// createUpload starts a resumable upload of size bytes and returns its path.
func createUpload(t *testing.T, env *apptest.Env, token string, size int, meta string) (string, answer) {
	t.Helper()
	a := send(t, env, "POST", "/api/v1/uploads/", token, "", nil, "Tus-Resumable", "1.0.0", "Upload-Length", strconv.Itoa(size), "Upload-Metadata", meta)
	if a.status != http.StatusCreated {
		return "", a
	}
	loc := a.header.Get("Location")
	path, ok := strings.CutPrefix(loc, env.URL)
	if !ok || !strings.HasPrefix(path, "/api/v1/uploads/up_") {
		t.Fatalf("Location %q is not an upload of %s", loc, env.URL)
	}
	return path, a
}

func patchUpload(t *testing.T, env *apptest.Env, token, path string, offset int, data []byte) answer {
	t.Helper()
	return send(t, env, "PATCH", path, token, "application/offset+octet-stream", bytes.NewReader(data),
		"Tus-Resumable", "1.0.0", "Upload-Offset", strconv.Itoa(offset))
}

func uploadOffset(t *testing.T, env *apptest.Env, token, path string) int {
	t.Helper()
	a := send(t, env, "HEAD", path, token, "", nil, "Tus-Resumable", "1.0.0")
	if a.status != http.StatusOK {
		t.Fatalf("HEAD %s: %d", path, a.status)
	}
	n, err := strconv.Atoi(a.header.Get("Upload-Offset"))
	if err != nil {
		t.Fatalf("HEAD %s: Upload-Offset %q", path, a.header.Get("Upload-Offset"))
	}
	return n
}

// cutPatch sends a PATCH that announces all of data but sends only its first n bytes,
// then drops the connection, as a client whose network went away.
func cutPatch(t *testing.T, env *apptest.Env, token, path string, offset int, data []byte, n int) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PATCH %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: %d\r\n"+
		"Content-Type: application/offset+octet-stream\r\nContent-Length: %d\r\n\r\n", path, token, offset, len(data))
	if _, err := conn.Write(data[:n]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the bytes reach the server; the drop comes later
	conn.Close()
}

// TestUploadsResume: an upload whose connection drops keeps the bytes that arrived; HEAD
// tells where to go on from; the PATCH that brings the rest makes the file, answering
// with its key and checksum (over the whole file), and only then is it listed.
func TestUploadsResume(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "tove", "user")
		data := randomBytes(t, 3<<20+17)
		path, a := createUpload(t, env, u.Token, len(data), tusMeta("key", "files/big.bin", "filename", "stor.bin", "ttl", "2h"))
		if path == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		if a.header.Get("Upload-Expires") == "" || a.header.Get("Tus-Resumable") != "1.0.0" {
			t.Fatalf("create headers: %v", a.header)
		}

		// HEAD right after the drop waits for the dropped request to store what it
		// received (the upload's lock), so the offset it gives does not move after.
		cutPatch(t, env, u.Token, path, 0, data, 1<<20+5)
		off := uploadOffset(t, env, u.Token, path)
		if off <= 0 || off > 1<<20+5 {
			t.Fatalf("after a dropped PATCH of 1 MiB, the offset is %d", off)
		}
		time.Sleep(300 * time.Millisecond)
		if again := uploadOffset(t, env, u.Token, path); again != off {
			t.Fatalf("HEAD said %d, then %d", off, again)
		}
		if l := send(t, env, "GET", "/api/v1/files", u.Token, "", nil); strings.Contains(l.raw, "files/big.bin") {
			t.Fatalf("an unfinished upload is listed: %s", l.raw)
		}
		if a := patchUpload(t, env, u.Token, path, 0, data); a.status != http.StatusConflict || a.errCode() != "conflict" {
			t.Fatalf("PATCH at a wrong offset: %d %s", a.status, a.raw)
		}
		// One more part, then the rest.
		if a := patchUpload(t, env, u.Token, path, off, data[off:off+1000]); a.status != http.StatusNoContent || a.header.Get("Upload-Offset") != strconv.Itoa(off+1000) {
			t.Fatalf("PATCH: %d %s %v", a.status, a.raw, a.header)
		}
		off += 1000
		fin := patchUpload(t, env, u.Token, path, off, data[off:])
		if fin.status != http.StatusNoContent || fin.header.Get("X-File-Key") != "files/big.bin" || fin.header.Get("X-Checksum") != sum(data) {
			t.Fatalf("last PATCH: %d %s %v", fin.status, fin.raw, fin.header)
		}
		got := send(t, env, "GET", "/api/v1/files/files/big.bin", u.Token, "", nil)
		if got.status != 200 || got.raw != string(data) || got.header.Get("X-Checksum") != sum(data) ||
			!strings.Contains(got.header.Get("Content-Disposition"), "stor.bin") || got.header.Get("X-Expires-At") == "" {
			t.Fatalf("GET the file: %d, %d bytes, %v", got.status, len(got.raw), got.header)
		}
		st := send(t, env, "GET", path, u.Token, "", nil)
		file, _ := st.body["file"].(map[string]any)
		if st.status != 200 || st.body["offset"] != float64(len(data)) || file["checksum"] != sum(data) || file["file_key"] != "files/big.bin" {
			t.Fatalf("GET the upload: %d %s", st.status, st.raw)
		}
		// A PATCH or HEAD after the end answers as the protocol says, and changes nothing.
		if uploadOffset(t, env, u.Token, path) != len(data) {
			t.Fatal("a finished upload's offset is not its length")
		}
		// Only the file's blob is left: the parts went.
		if keys := storedKeys(t, env); len(keys) != 1 {
			t.Fatalf("the blob store holds %v", keys)
		}

		// Another user's upload is not there for them.
		_, v := env.User(t, "vera", "user")
		if a := send(t, env, "HEAD", path, v.Token, "", nil, "Tus-Resumable", "1.0.0"); a.status != http.StatusNotFound {
			t.Fatalf("HEAD of another's upload: %d", a.status)
		}
		if a := send(t, env, "GET", path, v.Token, "", nil); a.status != http.StatusNotFound || a.errCode() != "not_found" {
			t.Fatalf("GET of another's upload: %d %s", a.status, a.raw)
		}
	})
}

// TestUploadsOneRequest: creation-with-upload and a lone PATCH keep the part's blob as
// the file's, with nothing else left in the blob store; an empty file finishes at
// creation.
func TestUploadsOneRequest(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "ulf", "user")
		data := randomBytes(t, 300_000)
		a := send(t, env, "POST", "/api/v1/uploads/", u.Token, "application/offset+octet-stream", bytes.NewReader(data),
			"Tus-Resumable", "1.0.0", "Upload-Length", strconv.Itoa(len(data)), "Upload-Metadata", tusMeta("filename", "a.csv"))
		key := a.header.Get("X-File-Key")
		if a.status != http.StatusCreated || a.header.Get("Upload-Offset") != strconv.Itoa(len(data)) || !strings.HasPrefix(key, "files/f_") ||
			a.header.Get("X-Checksum") != sum(data) {
			t.Fatalf("creation with upload: %d %s %v", a.status, a.raw, a.header)
		}
		got := send(t, env, "GET", "/api/v1/files/"+key, u.Token, "", nil)
		if got.raw != string(data) || !strings.HasPrefix(got.header.Get("Content-Type"), "text/csv") {
			t.Fatalf("GET: %d bytes, %v", len(got.raw), got.header)
		}
		if keys := storedKeys(t, env); len(keys) != 1 {
			t.Fatalf("the blob store holds %v", keys)
		}
		empty, a := createUpload(t, env, u.Token, 0, tusMeta("key", "files/empty.txt"))
		if empty == "" || a.header.Get("X-File-Key") != "files/empty.txt" {
			t.Fatalf("empty upload: %d %s %v", a.status, a.raw, a.header)
		}
		if got := send(t, env, "GET", "/api/v1/files/files/empty.txt", u.Token, "", nil); got.status != 200 || got.raw != "" {
			t.Fatalf("GET the empty file: %d %q", got.status, got.raw)
		}
	})
}

// TestUploadsProtocolAnswers: discovery needs no token and names the extensions and the
// size limit; the protocol's own refusals are the API's JSON errors; DELETE ends an
// upload and its bytes.
func TestUploadsProtocolAnswers(t *testing.T) {
	env := apptest.New(t, apptest.Backend{Name: "sqlite+fs", Blob: "fs"})
	_, u := env.User(t, "olle", "user")
	opt := send(t, env, "OPTIONS", "/api/v1/uploads/", "", "", nil)
	if opt.status/100 != 2 || opt.header.Get("Tus-Version") != "1.0.0" ||
		opt.header.Get("Tus-Extension") != "creation,creation-with-upload,termination,expiration" ||
		opt.header.Get("Tus-Max-Size") != strconv.FormatInt(env.Config.FilesMaxFileBytes, 10) {
		t.Fatalf("OPTIONS: %d %v", opt.status, opt.header)
	}
	if a := send(t, env, "POST", "/api/v1/uploads/", "", "", nil, "Tus-Resumable", "1.0.0", "Upload-Length", "10"); a.status != 401 {
		t.Fatalf("create without a token: %d", a.status)
	}
	if a := send(t, env, "POST", "/api/v1/uploads/", u.Token, "", nil, "Tus-Resumable", "0.2.2", "Upload-Length", "10"); a.status != 412 || a.errCode() != "conflict" {
		t.Fatalf("an old protocol version: %d %s", a.status, a.raw)
	}
	if a := send(t, env, "POST", "/api/v1/uploads/", u.Token, "", nil, "Tus-Resumable", "1.0.0", "Upload-Defer-Length", "1"); a.status != 501 || a.errCode() != "invalid_request" {
		t.Fatalf("a deferred length: %d %s", a.status, a.raw)
	}
	if _, a := createUpload(t, env, u.Token, 10, tusMeta("key", "other/x")); a.status != 400 || a.errCode() != "invalid_key" {
		t.Fatalf("a key outside files/: %d %s", a.status, a.raw)
	}
	if _, a := createUpload(t, env, u.Token, 10, tusMeta("ttl", "soon")); a.status != 400 || !strings.Contains(a.errMessage(), "ttl") {
		t.Fatalf("a bad ttl: %d %s", a.status, a.raw)
	}
	path, a := createUpload(t, env, u.Token, 100, tusMeta("key", "files/x"))
	if path == "" {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	if a := send(t, env, "PATCH", path, u.Token, "text/plain", strings.NewReader("x"), "Tus-Resumable", "1.0.0", "Upload-Offset", "0"); a.status != 400 || a.errCode() != "invalid_request" {
		t.Fatalf("PATCH with a wrong content type: %d %s", a.status, a.raw)
	}
	if a := patchUpload(t, env, u.Token, path, 0, randomBytes(t, 101)); a.status != 413 || a.errCode() != "too_large" {
		t.Fatalf("PATCH past the length: %d %s", a.status, a.raw)
	}
	if a := patchUpload(t, env, u.Token, path, 0, randomBytes(t, 60)); a.status != 204 {
		t.Fatalf("PATCH: %d %s", a.status, a.raw)
	}
	if keys := storedKeys(t, env); len(keys) != 1 {
		t.Fatalf("the blob store holds %v", keys)
	}
	if a := send(t, env, "DELETE", path, u.Token, "", nil, "Tus-Resumable", "1.0.0"); a.status != 204 {
		t.Fatalf("DELETE: %d %s", a.status, a.raw)
	}
	if keys := storedKeys(t, env); len(keys) != 0 {
		t.Fatalf("after DELETE the blob store holds %v", keys)
	}
	if a := send(t, env, "HEAD", path, u.Token, "", nil, "Tus-Resumable", "1.0.0"); a.status != 404 {
		t.Fatalf("HEAD after DELETE: %d", a.status)
	}
	if a := patchUpload(t, env, u.Token, path, 60, []byte("x")); a.status != 404 || a.errCode() != "not_found" {
		t.Fatalf("PATCH after DELETE: %d %s", a.status, a.raw)
	}
}

// TestUploadsLimits: the length is checked against the per-file size, the quota and the
// store's total at creation, and an unfinished upload's reservation counts against
// other uploads (resumable or not) until it is finished or deleted.
func TestUploadsLimits(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesMaxFileBytes = 1 << 20
		cfg.FilesUserQuotaBytes = 3 << 20 / 2
		cfg.FilesMaxTotalBytes = 2 << 20
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "lisa", "user")
		_, v := env.User(t, "vide", "user")
		if _, a := createUpload(t, env, u.Token, 1<<20+1, tusMeta("filename", "film.mp4")); a.status != 413 || a.errCode() != "too_large" ||
			!strings.Contains(a.errMessage(), "film.mp4") || !strings.Contains(a.errMessage(), "1 MiB") {
			t.Fatalf("over the file size: %d %s", a.status, a.raw)
		}
		first, a := createUpload(t, env, u.Token, 1<<20, tusMeta("key", "files/a"))
		if first == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		// The quota has 512 KiB left for lisa beside the reservation.
		if _, a := createUpload(t, env, u.Token, 600<<10, ""); a.status != 507 || a.errCode() != "quota_exceeded" {
			t.Fatalf("over the quota with a reservation: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "PUT", "/api/v1/files/files/b", u.Token, "", bytes.NewReader(randomBytes(t, 600<<10))); a.status != 507 {
			t.Fatalf("a PUT over the quota with a reservation: %d %s", a.status, a.raw)
		}
		// The store's total: 2 MiB, 1 MiB reserved by lisa.
		if _, a := createUpload(t, env, v.Token, 1<<20+1, ""); a.status != 413 {
			t.Fatalf("over the file size: %d %s", a.status, a.raw)
		}
		second, a := createUpload(t, env, v.Token, 1<<20, "")
		if second == "" {
			t.Fatalf("vide's create: %d %s", a.status, a.raw)
		}
		if _, a := createUpload(t, env, v.Token, 1, ""); a.status != 507 || !strings.Contains(a.errMessage(), "file store is full") {
			t.Fatalf("over the store's total: %d %s", a.status, a.raw)
		}
		// Finishing turns the reservation into the file; deleting frees it.
		if a := patchUpload(t, env, u.Token, first, 0, randomBytes(t, 1<<20)); a.status != 204 || a.header.Get("X-File-Key") != "files/a" {
			t.Fatalf("finish: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "DELETE", second, v.Token, "", nil, "Tus-Resumable", "1.0.0"); a.status != 204 {
			t.Fatalf("DELETE: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "PUT", "/api/v1/files/files/b", u.Token, "", bytes.NewReader(randomBytes(t, 500<<10))); a.status != 201 {
			t.Fatalf("a PUT that fits: %d %s", a.status, a.raw)
		}
	})
}

// TestUploadsExpire: an unfinished upload past its time is gone for the client, and the
// janitor deletes its bytes and reports them.
func TestUploadsExpire(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesUploadTTL = 2 * time.Second
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "ebba", "user")
		path, a := createUpload(t, env, u.Token, 5000, "")
		if path == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		exp, err := http.ParseTime(a.header.Get("Upload-Expires"))
		if err != nil || exp.After(time.Now().Add(3*time.Second)) {
			t.Fatalf("Upload-Expires %q", a.header.Get("Upload-Expires"))
		}
		if a := patchUpload(t, env, u.Token, path, 0, randomBytes(t, 3000)); a.status != 204 {
			t.Fatalf("PATCH: %d %s", a.status, a.raw)
		}
		time.Sleep(2500 * time.Millisecond)
		if a := send(t, env, "HEAD", path, u.Token, "", nil, "Tus-Resumable", "1.0.0"); a.status != 404 {
			t.Fatalf("HEAD of an expired upload: %d", a.status)
		}
		c := send(t, env, "POST", "/api/v1/admin/cleanup", env.AdminToken, "", nil)
		removed, _ := c.body["removed"].(map[string]any)
		if c.status != 200 || removed["uploads"] != float64(1) || removed["upload_bytes"] != float64(3000) {
			t.Fatalf("cleanup: %d %s", c.status, c.raw)
		}
		if keys := storedKeys(t, env); len(keys) != 0 {
			t.Fatalf("after the cleanup the blob store holds %v", keys)
		}
	})
}

// TestUploadsAcrossNodes: in a cluster, every request of an upload may reach another API
// node: the state is in PostgreSQL and the parts in the shared NATS object store, so
// nothing of it is on one node.
func TestUploadsAcrossNodes(t *testing.T) {
	cfg := apptest.Config(t, apptest.ClusterBackend)
	a := apptest.Start(t, cfg)
	cfg.DataDir = t.TempDir()
	b := apptest.Start(t, cfg)
	_, u := a.User(t, "nora", "user")
	data := randomBytes(t, 2<<20+3)
	path, ans := createUpload(t, a, u.Token, len(data), tusMeta("key", "files/spread.bin"))
	if path == "" {
		t.Fatalf("create on node a: %d %s", ans.status, ans.raw)
	}
	if ans := patchUpload(t, b, u.Token, path, 0, data[:1<<20]); ans.status != 204 {
		t.Fatalf("PATCH on node b: %d %s", ans.status, ans.raw)
	}
	off := uploadOffset(t, a, u.Token, path)
	if off != 1<<20 {
		t.Fatalf("node a sees offset %d", off)
	}
	if ans := patchUpload(t, a, u.Token, path, off, data[off:]); ans.status != 204 || ans.header.Get("X-Checksum") != sum(data) {
		t.Fatalf("last PATCH on node a: %d %s", ans.status, ans.raw)
	}
	if got := send(t, b, "GET", "/api/v1/files/files/spread.bin", u.Token, "", nil); got.raw != string(data) {
		t.Fatalf("GET on node b: %d, %d bytes", got.status, len(got.raw))
	}
}

// TestUploadsHeadAfterDrop: a client that resumes at once, from the offset HEAD gives
// right after its connection dropped, is never refused for a stale offset, on either
// blob store (storing a part on NATS takes long enough for that to show).
func TestUploadsHeadAfterDrop(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "hugo", "user")
		data := randomBytes(t, 24<<20)
		path, a := createUpload(t, env, u.Token, len(data), "")
		if path == "" {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		off := 0
		for i := range 3 {
			cutPatch(t, env, u.Token, path, off, data[off:], 4<<20)
			next := uploadOffset(t, env, u.Token, path)
			if next < off {
				t.Fatalf("drop %d: the offset went back from %d to %d", i, off, next)
			}
			off = next
		}
		if a := patchUpload(t, env, u.Token, path, off, data[off:]); a.status != 204 || a.header.Get("X-Checksum") != sum(data) {
			t.Fatalf("the rest from %d: %d %s", off, a.status, a.raw)
		}
	})
}
