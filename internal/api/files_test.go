package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// multipartBody builds an upload with fields (in order) and a file part at position
// filePos (-1: last).
func multipartBody(t *testing.T, fields [][2]string, name string, data []byte) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f[0] == "file" {
			w, _ := mw.CreateFormFile("file", name)
			w.Write(data)
			continue
		}
		mw.WriteField(f[0], f[1])
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func send(t *testing.T, env *apptest.Env, method, path, token, ctype string, body io.Reader, hdr ...string) answer {
	t.Helper()
	req, _ := http.NewRequest(method, env.URL+path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(b)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && len(b) > 0 {
		json_unmarshal(t, b, &a.body)
	}
	return a
}

func upload(t *testing.T, env *apptest.Env, token string, fields [][2]string, name string, data []byte) answer {
	t.Helper()
	if len(fields) == 0 || fields[len(fields)-1][0] != "file" {
		fields = append(fields, [2]string{"file", ""})
	}
	body, ct := multipartBody(t, fields, name, data)
	return send(t, env, "POST", "/api/v1/files", token, ct, body)
}

// storedKeys lists what the blob store itself holds, and fails when the fs backend left
// a temp file behind.
func storedKeys(t *testing.T, env *apptest.Env) []string {
	t.Helper()
	infos, err := env.App.Blobs.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, i := range infos {
		keys = append(keys, i.Key)
	}
	if env.Config.Blob == "fs" {
		tmp, _ := os.ReadDir(filepath.Join(env.Config.DataDir, "blobs", "tmp"))
		if len(tmp) > 0 {
			t.Fatalf("fsblob left %d temp files", len(tmp))
		}
	}
	return keys
}

func TestFilesRoundTrip(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		alice, _ := env.User(t, "alice", "user")
		_, aliceU := env.User(t, "alice2", "user")
		tok := aliceU.Token
		_ = alice
		data := randomBytes(t, 300_000)

		// Multipart upload with a generated key.
		a := upload(t, env, tok, [][2]string{{"ttl", "7d"}}, "report 2024.csv", data)
		if a.status != 201 {
			t.Fatalf("upload: %d %s", a.status, a.raw)
		}
		key := a.body["file_key"].(string)
		if !strings.HasPrefix(key, "files/f_") || a.body["checksum"] != sum(data) || a.body["size_bytes"] != float64(len(data)) ||
			a.body["content_type"] != "text/csv; charset=utf-8" || a.body["expires_at"] == nil || a.body["created_at"] == nil {
			t.Fatalf("upload answer: %v", a.body)
		}
		// Raw PUT to a key with several segments.
		raw := []byte("hello, world\n")
		p := send(t, env, "PUT", "/api/v1/files/files/reports/2024/q1.txt?filename=q1.txt", tok, "text/plain", bytes.NewReader(raw))
		if p.status != 201 || p.body["file_key"] != "files/reports/2024/q1.txt" || p.body["checksum"] != sum(raw) || p.body["expires_at"] != nil {
			t.Fatalf("put: %d %s", p.status, p.raw)
		}

		// GET streams the bytes with every header.
		g := send(t, env, "GET", "/api/v1/files/"+key, tok, "", nil)
		if g.status != 200 || g.raw != string(data) {
			t.Fatalf("get: %d, %d bytes", g.status, len(g.raw))
		}
		for h, want := range map[string]string{
			"Content-Length": fmt.Sprint(len(data)), "Content-Type": "text/csv; charset=utf-8", "X-Checksum": sum(data),
			"ETag": `"` + strings.TrimPrefix(sum(data), "sha256:") + `"`, "Content-Disposition": `attachment; filename="report 2024.csv"; filename*=UTF-8''report%202024.csv`,
			"Accept-Ranges": "bytes", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
		} {
			if got := g.header.Get(h); got != want {
				t.Errorf("GET %s = %q, want %q", h, got, want)
			}
		}
		// A bare f_<ULID> names the same file.
		if bare := send(t, env, "GET", "/api/v1/files/"+strings.TrimPrefix(key, "files/"), tok, "", nil); bare.status != 200 || bare.raw != string(data) {
			t.Fatalf("bare key: %d", bare.status)
		}
		// HEAD: the same headers, no body.
		h := send(t, env, "HEAD", "/api/v1/files/files/reports/2024/q1.txt", tok, "", nil)
		if h.status != 200 || h.raw != "" || h.header.Get("Content-Length") != fmt.Sprint(len(raw)) || h.header.Get("X-Checksum") != sum(raw) ||
			h.header.Get("Content-Disposition") != `attachment; filename="q1.txt"; filename*=UTF-8''q1.txt` || h.header.Get("ETag") == "" ||
			h.header.Get("X-Content-Type-Options") != "nosniff" || h.header.Get("Content-Security-Policy") != "sandbox" {
			t.Fatalf("head: %d %v", h.status, h.header)
		}
		// Ranges.
		ranges := []struct {
			rng, want string
			status    int
		}{
			{"bytes=0-9", string(data[:10]), 206},
			{"bytes=100-", string(data[100:]), 206},
			{"bytes=-5", string(data[len(data)-5:]), 206},
			{"bytes=299999-299999", string(data[299999:]), 206},
			{"bytes=400000-", "", 416},
		}
		for _, r := range ranges {
			got := send(t, env, "GET", "/api/v1/files/"+key, tok, "", nil, "Range", r.rng)
			if got.status != r.status || (r.status == 206 && got.raw != r.want) {
				t.Errorf("Range %s: %d, %d bytes", r.rng, got.status, len(got.raw))
			}
		}
		if nm := send(t, env, "GET", "/api/v1/files/"+key, tok, "", nil, "If-None-Match", g.header.Get("ETag")); nm.status != 304 {
			t.Errorf("If-None-Match: %d, want 304", nm.status)
		}

		// Overwrite in place.
		p2 := send(t, env, "PUT", "/api/v1/files/files/reports/2024/q1.txt", tok, "text/plain", strings.NewReader("v2"))
		if p2.status != 201 || p2.body["checksum"] != sum([]byte("v2")) {
			t.Fatalf("overwrite: %d %s", p2.status, p2.raw)
		}
		if g := send(t, env, "GET", "/api/v1/files/files/reports/2024/q1.txt", tok, "", nil); g.raw != "v2" {
			t.Fatalf("after overwrite: %q", g.raw)
		}

		// Delete.
		if d := send(t, env, "DELETE", "/api/v1/files/files/reports/2024/q1.txt", tok, "", nil); d.status != 204 {
			t.Fatalf("delete: %d %s", d.status, d.raw)
		}
		for _, m := range []string{"GET", "HEAD", "DELETE"} {
			if a := send(t, env, m, "/api/v1/files/files/reports/2024/q1.txt", tok, "", nil); a.status != 404 {
				t.Fatalf("%s after delete: %d", m, a.status)
			}
		}
		if keys := liveKeys(t, env); len(keys) != 1 || keys[0] != blobKeyOf(t, env, aliceU.ID, key) {
			t.Fatalf("blob store holds %v besides the retired versions, want only the bytes of %s", keys, key)
		}
		if n := len(retiredKeys(t, env)); n != 2 {
			t.Fatalf("%d versions retired, want 2: the replaced and the deleted one", n)
		}
	})
}

func TestFilesListPages(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		c, u := env.User(t, "lister", "user")
		other, _ := env.User(t, "other", "user")
		ctx := context.Background()
		want := []string{"files/a/1", "files/a/2", "files/a/3", "files/a_b", "files/a/sub/4", "files/b/1"}
		for _, k := range want {
			if _, err := c.Upload(ctx, "x.txt", strings.NewReader(k), client.UploadOptions{Key: k}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := other.Upload(ctx, "x.txt", strings.NewReader("theirs"), client.UploadOptions{Key: "files/a/9"}); err != nil {
			t.Fatal(err)
		}
		var got []string
		cursor, pages := "", 0
		for {
			page, next, err := c.Files(ctx, "files/a/", cursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, f := range page {
				got = append(got, f.FileKey)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if strings.Join(got, ",") != "files/a/1,files/a/2,files/a/3,files/a/sub/4" || pages != 2 {
			t.Fatalf("pages=%d keys=%v; want files/a/ only, own files only, in order", pages, got)
		}
		all, next, err := c.Files(ctx, "", "", 0)
		if err != nil || len(all) != len(want) || next != "" {
			t.Fatalf("all: %d files, next %q, %v", len(all), next, err)
		}
		for _, bad := range []string{"?limit=0", "?limit=1001", "?limit=x", "?cursor=!!!"} {
			if a := send(t, env, "GET", "/api/v1/files"+bad, u.Token, "", nil); a.status != 400 || a.errCode() != "invalid_request" {
				t.Errorf("list %s: %d %s", bad, a.status, a.raw)
			}
		}
		// A cursor that decodes but holds no key a listing gave out is refused too, not
		// taken as a place to start from (it once answered 200).
		for _, bad := range []string{"garbage", "Zm9v", "ZmlsZXMvLi4veA"} { // foo, files/../x
			if a := send(t, env, "GET", "/api/v1/files?cursor="+bad, u.Token, "", nil); a.status != 400 || !strings.Contains(a.raw, `"reason":"file_cursor"`) {
				t.Errorf("list with cursor %s: %d %s", bad, a.status, a.raw)
			}
		}
	})
}

func TestFilesOwnership(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, owner := env.User(t, "owner", "user")
		_, intruder := env.User(t, "intruder", "author")
		up := upload(t, env, owner.Token, [][2]string{{"key", "files/private/plan.txt"}}, "plan.txt", []byte("secret plan"))
		if up.status != 201 {
			t.Fatalf("upload: %d %s", up.status, up.raw)
		}
		path := "/api/v1/files/files/private/plan.txt"
		for _, m := range []string{"GET", "HEAD", "DELETE"} {
			for _, q := range []string{"", "?owner=" + owner.ID, "?owner=owner", "?owner=nobody"} {
				if a := send(t, env, m, path+q, intruder.Token, "", nil); a.status != 404 {
					t.Errorf("%s%s by another user: %d, want 404", m, q, a.status)
				}
			}
		}
		for _, q := range []string{"?owner=" + owner.ID, "?owner=owner"} {
			if a := send(t, env, "GET", "/api/v1/files"+q, intruder.Token, "", nil); a.status != 404 || a.errCode() != "not_found" {
				t.Errorf("list%s by another user: %d %s, want 404", q, a.status, a.raw)
			}
			if a := send(t, env, "PUT", path+q, intruder.Token, "text/plain", strings.NewReader("pwned")); a.status != 404 {
				t.Errorf("PUT%s by another user: %d %s, want 404", q, a.status, a.raw)
			}
		}
		// An admin works in their own namespace unless they name the owner.
		if a := send(t, env, "GET", path, env.AdminToken, "", nil); a.status != 404 {
			t.Fatalf("admin read without ?owner: %d %q, want 404", a.status, a.raw)
		}
		for _, q := range []string{"?owner=" + owner.ID, "?owner=owner"} {
			if a := send(t, env, "GET", path+q, env.AdminToken, "", nil); a.status != 200 || a.raw != "secret plan" {
				t.Fatalf("admin read%s: %d %q", q, a.status, a.raw)
			}
			if a := send(t, env, "HEAD", path+q, env.AdminToken, "", nil); a.status != 200 || a.header.Get("X-Checksum") != sum([]byte("secret plan")) {
				t.Fatalf("admin HEAD%s: %d", q, a.status)
			}
			if list := send(t, env, "GET", "/api/v1/files"+q, env.AdminToken, "", nil); list.body["count"] != float64(1) {
				t.Fatalf("admin list%s: %s", q, list.raw)
			}
		}
		if a := send(t, env, "GET", path+"?owner=nobody", env.AdminToken, "", nil); a.status != 404 || !strings.Contains(a.errMessage(), `"nobody"`) {
			t.Fatalf("admin read of a user that does not exist: %d %s", a.status, a.raw)
		}
		// An admin may store a file for a user, and delete it.
		if a := send(t, env, "PUT", "/api/v1/files/files/from-admin.txt?owner=owner", env.AdminToken, "text/plain", strings.NewReader("hi")); a.status != 201 {
			t.Fatalf("admin PUT for a user: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/files/files/from-admin.txt", owner.Token, "", nil); a.status != 200 || a.raw != "hi" {
			t.Fatalf("the user reads the admin's upload: %d %q", a.status, a.raw)
		}
		if a := send(t, env, "DELETE", "/api/v1/files/files/from-admin.txt?owner="+owner.ID, env.AdminToken, "", nil); a.status != 204 {
			t.Fatalf("admin DELETE for a user: %d %s", a.status, a.raw)
		}
		if list := send(t, env, "GET", "/api/v1/files", intruder.Token, "", nil); list.body["count"] != float64(0) {
			t.Fatalf("intruder lists %v", list.body)
		}
		if a := send(t, env, "GET", path, owner.Token, "", nil); a.status != 200 || a.raw != "secret plan" {
			t.Fatalf("the owner's file after all that: %d %q", a.status, a.raw)
		}
		if a := send(t, env, "GET", path, "", "", nil); a.status != 401 {
			t.Fatalf("no token: %d", a.status)
		}
	})
}

// TestFilesKeysArePerOwner: two users upload under the same key; each has a file of their
// own, and deleting one leaves the other.
func TestFilesKeysArePerOwner(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, a := env.User(t, "a", "user")
		_, bu := env.User(t, "b", "user")
		path := "/api/v1/files/files/report.csv"
		if up := upload(t, env, a.Token, [][2]string{{"key", "files/report.csv"}}, "report.csv", []byte("a's report")); up.status != 201 {
			t.Fatalf("a's upload: %d %s", up.status, up.raw)
		}
		if up := send(t, env, "PUT", path, bu.Token, "text/csv", strings.NewReader("b's")); up.status != 201 || up.body["file_key"] != "files/report.csv" {
			t.Fatalf("b's upload: %d %s", up.status, up.raw)
		}
		for tok, want := range map[string]string{a.Token: "a's report", bu.Token: "b's"} {
			if g := send(t, env, "GET", path, tok, "", nil); g.status != 200 || g.raw != want || g.header.Get("X-Checksum") != sum([]byte(want)) {
				t.Fatalf("GET: %d %q, want %q", g.status, g.raw, want)
			}
			if l := send(t, env, "GET", "/api/v1/files", tok, "", nil); l.body["count"] != float64(1) {
				t.Fatalf("list: %s", l.raw)
			}
		}
		if d := send(t, env, "DELETE", path, a.Token, "", nil); d.status != 204 {
			t.Fatalf("a's delete: %d %s", d.status, d.raw)
		}
		if g := send(t, env, "GET", path, a.Token, "", nil); g.status != 404 {
			t.Fatalf("a's file after delete: %d", g.status)
		}
		if g := send(t, env, "GET", path, bu.Token, "", nil); g.status != 200 || g.raw != "b's" {
			t.Fatalf("b's file after a's delete: %d %q", g.status, g.raw)
		}
	})
}

func TestFilesBadRequests(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	_, u := env.User(t, "u", "user")
	tests := []struct {
		name   string
		do     func() answer
		status int
		code   string
		msg    string
	}{
		{"key outside files/", func() answer {
			return upload(t, env, u.Token, [][2]string{{"key", "runs/x"}}, "a", []byte("a"))
		}, 400, "invalid_key", "must start with files/"},
		{"dot-dot segment", func() answer {
			return send(t, env, "PUT", "/api/v1/files/files/a/../b", u.Token, "", strings.NewReader("x"))
		}, 400, "invalid_key", ".. segment"},
		{"empty segment", func() answer {
			return send(t, env, "GET", "/api/v1/files/files//b", u.Token, "", nil)
		}, 400, "invalid_key", "empty"},
		// The clean form of these is under /api/ though they are not: ServeMux would
		// redirect them there, and the redirect keeps the PUT.
		{"dot-dot segment behind a leading //", func() answer {
			return send(t, env, "PUT", "//api/v1/files/files/a/../b", u.Token, "", strings.NewReader("x"))
		}, 400, "invalid_key", ".. segment"},
		{"dot-dot segment before /api/", func() answer {
			return send(t, env, "PUT", "/x/../api/v1/files/files/b", u.Token, "", strings.NewReader("x"))
		}, 400, "invalid_request", ".. segment"},
		{"bad character", func() answer {
			return upload(t, env, u.Token, [][2]string{{"key", "files/a b"}}, "a", []byte("a"))
		}, 400, "invalid_key", "letters, digits"},
		{"key too long", func() answer {
			return upload(t, env, u.Token, [][2]string{{"key", "files/" + strings.Repeat("k", 520)}}, "a", []byte("a"))
		}, 400, "invalid_key", "512"},
		{"bad ttl", func() answer {
			return upload(t, env, u.Token, [][2]string{{"ttl", "tomorrow"}}, "a", []byte("a"))
		}, 400, "invalid_request", `ttl "tomorrow"`},
		{"not multipart", func() answer {
			return send(t, env, "POST", "/api/v1/files", u.Token, "application/json", strings.NewReader("{}"))
		}, 400, "invalid_upload", "multipart/form-data"},
		{"no file field", func() answer {
			body, ct := multipartBody(t, [][2]string{{"key", "files/x"}}, "", nil)
			return send(t, env, "POST", "/api/v1/files", u.Token, ct, body)
		}, 400, "invalid_upload", `no field named "file"`},
		{"unknown field", func() answer {
			return upload(t, env, u.Token, [][2]string{{"colour", "red"}}, "a", []byte("a"))
		}, 400, "invalid_upload", `unknown field "colour"`},
		{"key after the file", func() answer {
			body, ct := multipartBody(t, [][2]string{{"file", ""}, {"key", "files/late"}}, "a.txt", []byte("a"))
			return send(t, env, "POST", "/api/v1/files", u.Token, ct, body)
		}, 400, "invalid_upload", `field "key" comes after the file`},
		{"two files", func() answer {
			body, ct := multipartBody(t, [][2]string{{"file", ""}, {"file", ""}}, "a.txt", []byte("a"))
			return send(t, env, "POST", "/api/v1/files", u.Token, ct, body)
		}, 400, "invalid_upload", "one file per request"},
		{"bad content type", func() answer {
			return upload(t, env, u.Token, [][2]string{{"content_type", "not a type"}}, "a", []byte("a"))
		}, 400, "invalid_request", "not a media type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.do()
			if a.status != tc.status || a.errCode() != tc.code || !strings.Contains(a.errMessage(), tc.msg) {
				t.Fatalf("got %d %s; want %d %s with %q", a.status, a.raw, tc.status, tc.code, tc.msg)
			}
		})
	}
	if keys := storedKeys(t, env); len(keys) != 0 {
		t.Fatalf("rejected uploads stored %v", keys)
	}
	if list := send(t, env, "GET", "/api/v1/files", u.Token, "", nil); list.body["count"] != float64(0) {
		t.Fatalf("rejected uploads are listed: %s", list.raw)
	}
}

// TestFilesMalformedMultipart: a body cut short of its closing boundary, or with a NUL or
// a line feed in its file name, is refused with 400 invalid_upload on every backend, and
// nothing is stored.
func TestFilesMalformedMultipart(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "u", "user")
		head := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n"
		for name, body := range map[string]string{
			"no closing boundary":  head + "hello!\r\n--B",
			"cut after the part":   head + "hello!\r\n",
			"cut in the part":      head + "hello!",
			"NUL in the file name": "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\x00b.txt\"\r\n\r\nhello!\r\n--B--\r\n",
			"LF in the file name":  "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\nb.txt\"\r\n\r\nhello!\r\n--B--\r\n",
		} {
			a := send(t, env, "POST", "/api/v1/files", u.Token, "multipart/form-data; boundary=B", strings.NewReader(body))
			if a.status != 400 || a.errCode() != "invalid_upload" {
				t.Errorf("%s: %d %s; want 400 invalid_upload", name, a.status, a.raw)
			}
			// The message is ours: no library's words, no echo of the client's bytes.
			if msg := a.errMessage(); strings.Contains(msg, "MIME") || strings.Contains(msg, "b.txt") || strings.Contains(msg, "multipart:") {
				t.Errorf("%s: the message carries the reader's own text: %q", name, msg)
			}
		}
		if keys := storedKeys(t, env); len(keys) != 0 {
			t.Fatalf("refused uploads stored %v", keys)
		}
		if list := send(t, env, "GET", "/api/v1/files", u.Token, "", nil); list.body["count"] != float64(0) {
			t.Fatalf("refused uploads are listed: %s", list.raw)
		}
	})
}

func TestFilesLimits(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesMaxFileBytes = 1 << 20
		cfg.FilesUserQuotaBytes = 3 << 20
		cfg.FilesMaxTotalBytes = 5 << 20
		env := apptest.Start(t, cfg)
		_, alice := env.User(t, "alice", "user")
		_, bob := env.User(t, "bob", "user")

		// An existing file under a key survives an oversize overwrite attempt.
		orig := randomBytes(t, 1000)
		if a := upload(t, env, alice.Token, [][2]string{{"key", "files/keep"}}, "keep.bin", orig); a.status != 201 {
			t.Fatalf("upload: %d %s", a.status, a.raw)
		}
		big := randomBytes(t, 1<<20+1)
		a := upload(t, env, alice.Token, [][2]string{{"key", "files/keep"}}, "big.bin", big)
		if a.status != 413 || a.errCode() != "too_large" || !strings.Contains(a.errMessage(), "big.bin") || !strings.Contains(a.errMessage(), "1 MiB") {
			t.Fatalf("oversize: %d %s", a.status, a.raw)
		}
		if g := send(t, env, "GET", "/api/v1/files/files/keep", alice.Token, "", nil); g.raw != string(orig) || g.header.Get("X-Checksum") != sum(orig) {
			t.Fatal("an oversize overwrite changed the stored file")
		}
		// Raw PUT is capped the same way.
		if a := send(t, env, "PUT", "/api/v1/files/files/big", alice.Token, "", bytes.NewReader(big)); a.status != 413 {
			t.Fatalf("oversize PUT: %d %s", a.status, a.raw)
		}
		// Exactly the limit is fine.
		mib := randomBytes(t, 1<<20)
		for i := range 2 {
			if a := upload(t, env, alice.Token, nil, fmt.Sprintf("m%d.bin", i), mib); a.status != 201 {
				t.Fatalf("1 MiB upload %d: %d %s", i, a.status, a.raw)
			}
		}
		// alice holds 2 MiB + 1000 bytes of her 3 MiB: another MiB passes her quota.
		a = upload(t, env, alice.Token, nil, "over.bin", mib)
		if a.status != 507 || a.errCode() != "quota_exceeded" || !strings.Contains(a.errMessage(), "quota") {
			t.Fatalf("user quota: %d %s", a.status, a.raw)
		}
		// Replacing her own file frees its bytes first: overwriting m0 with a MiB fits.
		// bob fills the store: 2 MiB fit in the 5 MiB total, the third does not.
		for i := range 2 {
			if a := upload(t, env, bob.Token, nil, fmt.Sprintf("b%d.bin", i), mib); a.status != 201 {
				t.Fatalf("bob %d: %d %s", i, a.status, a.raw)
			}
		}
		a = upload(t, env, bob.Token, nil, "full.bin", mib)
		if a.status != 507 || a.errCode() != "quota_exceeded" || !strings.Contains(a.errMessage(), "full") {
			t.Fatalf("store total: %d %s", a.status, a.raw)
		}
		// Only the five accepted files are stored.
		if keys := storedKeys(t, env); len(keys) != 5 {
			t.Fatalf("blob store holds %d objects, want 5: %v", len(keys), keys)
		}
		// Deleting frees quota.
		list := send(t, env, "GET", "/api/v1/files?prefix=f_", alice.Token, "", nil)
		first := list.body["files"].([]any)[0].(map[string]any)["file_key"].(string)
		send(t, env, "DELETE", "/api/v1/files/"+first, alice.Token, "", nil)
		if a := upload(t, env, alice.Token, nil, "again.bin", mib); a.status != 201 {
			t.Fatalf("after delete: %d %s", a.status, a.raw)
		}
	})
}

// TestFilesClientDisconnect sends half a body and hangs up: nothing may be stored, and no
// temp file or pending key may stay behind.
func TestFilesClientDisconnect(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "u", "user")
		conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "PUT /api/v1/files/files/half HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: 10000000\r\n\r\n", u.Token)
		conn.Write(randomBytes(t, 2_000_000))
		time.Sleep(100 * time.Millisecond)
		conn.Close()

		deadline := time.Now().Add(10 * time.Second)
		for {
			// The claim on the key is released, so the key can be used again.
			a := send(t, env, "PUT", "/api/v1/files/files/half", u.Token, "", strings.NewReader("whole"))
			if a.status == 201 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("key still claimed after the disconnect: %d %s", a.status, a.raw)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if g := send(t, env, "GET", "/api/v1/files/files/half", u.Token, "", nil); g.raw != "whole" {
			t.Fatalf("stored %q", g.raw)
		}
		if keys := storedKeys(t, env); len(keys) != 1 {
			t.Fatalf("blob store holds %v", keys)
		}
	})
}

func TestFilesTTLAndCleanup(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "u", "user")
		short := upload(t, env, u.Token, [][2]string{{"ttl", "1s"}}, "short.txt", []byte("brief"))
		long := upload(t, env, u.Token, [][2]string{{"ttl", "90m"}}, "long.txt", []byte("lasting"))
		if short.status != 201 || long.status != 201 {
			t.Fatalf("uploads: %s %s", short.raw, long.raw)
		}
		shortKey := short.body["file_key"].(string)
		time.Sleep(1100 * time.Millisecond)
		// Expired: 404 at once, before the janitor ran, and gone from the list.
		if a := send(t, env, "GET", "/api/v1/files/"+shortKey, u.Token, "", nil); a.status != 404 {
			t.Fatalf("expired file: %d", a.status)
		}
		if list := send(t, env, "GET", "/api/v1/files", u.Token, "", nil); list.body["count"] != float64(1) {
			t.Fatalf("list: %s", list.raw)
		}
		if len(storedKeys(t, env)) != 2 {
			t.Fatal("the bytes went before the janitor ran")
		}
		// A user may not run the janitor; an admin may.
		if a := send(t, env, "POST", "/api/v1/admin/cleanup", u.Token, "", nil); a.status != 403 {
			t.Fatalf("cleanup by a user: %d", a.status)
		}
		r, err := env.Admin.Cleanup(context.Background())
		if err != nil || r.Files != 1 || r.FileBytes != 5 {
			t.Fatalf("cleanup = %+v, %v; want 1 file of 5 bytes", r, err)
		}
		if keys := liveKeys(t, env); len(keys) != 1 || keys[0] != blobKeyOf(t, env, u.ID, long.body["file_key"].(string)) {
			t.Fatalf("after cleanup the blob store holds %v besides the retired versions", keys)
		}
		if r, _ := env.Admin.Cleanup(context.Background()); r.Files != 0 {
			t.Fatalf("second pass removed %d", r.Files)
		}
	})
}

// TestJanitorRunsOnItsInterval relies on the loop `skrip serve` starts, not on a call.
func TestJanitorRunsOnItsInterval(t *testing.T) {
	cfg := apptest.Config(t, apptest.BlobBackends[0])
	cfg.CleanupInterval = 100 * time.Millisecond
	env := apptest.Start(t, cfg)
	_, u := env.User(t, "u", "user")
	if a := upload(t, env, u.Token, [][2]string{{"ttl", "1s"}}, "t.txt", []byte("tick")); a.status != 201 {
		t.Fatalf("upload: %d %s", a.status, a.raw)
	}
	deadline := time.Now().Add(10 * time.Second)
	// Its bytes are retired (kept for RetiredGrace for reads that opened them).
	for len(liveKeys(t, env)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the janitor loop did not remove the expired file")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The pass counts what it removed once its file step is over, a moment after the
	// bytes went: wait for the count as for the bytes.
	for {
		resp, err := http.Get(env.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `skrip_janitor_deletions_total{kind="file"} 1`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("/metrics does not count the janitor's deletion")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// blobKeyOf returns where the bytes of ownerID's file under key are stored.
func blobKeyOf(t *testing.T, env *apptest.Env, ownerID, key string) string {
	t.Helper()
	f, err := env.App.Store.FileOf(context.Background(), ownerID, key)
	if err != nil {
		t.Fatal(err)
	}
	return f.BlobKey
}

// TestConcurrentUploadsToOneKey: whatever order concurrent uploads to one key commit in,
// the entry describes exactly the bytes stored, and no other bytes stay behind.
func TestConcurrentUploadsToOneKey(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "u", "user")
		for round := range 5 {
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					body := strings.Repeat(fmt.Sprintf("%d-%d ", round, i), 20000)
					send(t, env, "PUT", "/api/v1/files/files/same", u.Token, "text/plain", strings.NewReader(body))
				}()
			}
			wg.Wait()
			g := send(t, env, "GET", "/api/v1/files/files/same", u.Token, "", nil)
			if g.status != 200 || g.header.Get("X-Checksum") != sum([]byte(g.raw)) || g.header.Get("Content-Length") != fmt.Sprint(len(g.raw)) {
				t.Fatalf("round %d: the entry does not describe the bytes (%d, %s)", round, g.status, g.header.Get("X-Checksum"))
			}
			if keys := liveKeys(t, env); len(keys) != 1 {
				t.Fatalf("round %d: the blob store holds %v besides the retired versions", round, keys)
			}
		}
	})
}

// TestConcurrentUploadsKeepTheQuota: ten uploads at once, each alone within the quota,
// all together far over it: at most what fits is accepted.
func TestConcurrentUploadsKeepTheQuota(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesUserQuotaBytes = 1 << 20
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "u", "user")
		var wg sync.WaitGroup
		var mu sync.Mutex
		accepted := 0
		for i := range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := send(t, env, "PUT", fmt.Sprintf("/api/v1/files/files/q%d", i), u.Token, "", bytes.NewReader(make([]byte, 900<<10)))
				if a.status == 201 {
					mu.Lock()
					accepted++
					mu.Unlock()
				} else if a.status != 507 {
					t.Errorf("upload %d: %d %s", i, a.status, a.raw)
				}
			}()
		}
		wg.Wait()
		if accepted != 1 {
			t.Fatalf("%d uploads of 900 KiB were accepted against a 1 MiB quota", accepted)
		}
		if keys := storedKeys(t, env); len(keys) != 1 {
			t.Fatalf("the blob store holds %d objects; the refused uploads' bytes must go", len(keys))
		}
	})
}
