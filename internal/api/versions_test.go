package api_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/metrics"
	"github.com/skrip-dev/skrip/internal/staging"
)

// TestFileVersions: with SKRIP_FILES_VERSIONS=2, overwrites keep two previous versions,
// listed current first; ?version= reads one on GET and HEAD with Range, ETag and the
// checksum; an unknown id is a 404 naming it; kept versions count against the quota; a
// key that really ends in /versions stays reachable; deleting the key deletes its
// versions; and a cleanup pass trims versions beyond the setting and says so.
func TestFileVersions(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesVersions = 2
		cfg.FilesUserQuotaBytes = 100_000
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "vera", "user")
		put := func(key, name string, data []byte) answer {
			t.Helper()
			a := send(t, env, "PUT", "/api/v1/files/"+key+"?filename="+name, u.Token, "application/octet-stream", strings.NewReader(string(data)))
			if a.status != 201 {
				t.Fatalf("PUT %s: %d %s", key, a.status, a.raw)
			}
			return a
		}
		var data [][]byte
		var ids []string
		for i := range 3 {
			data = append(data, randomBytes(t, 30_000))
			a := put("files/doc.bin", fmt.Sprintf("doc%d.bin", i+1), data[i])
			id, _ := a.body["version_id"].(string)
			if !strings.HasPrefix(id, "v_") {
				t.Fatalf("upload answered no version_id: %s", a.raw)
			}
			ids = append(ids, id)
		}

		list := send(t, env, "GET", "/api/v1/files/files/doc.bin/versions", u.Token, "", nil)
		vs, _ := list.body["versions"].([]any)
		if list.status != 200 || list.body["count"] != float64(3) || len(vs) != 3 || list.body["file_key"] != "files/doc.bin" {
			t.Fatalf("versions: %d %s", list.status, list.raw)
		}
		for i, want := range []int{2, 1, 0} {
			v := vs[i].(map[string]any)
			if v["version_id"] != ids[want] || v["current"] != (i == 0) || v["checksum"] != sum(data[want]) ||
				v["size_bytes"] != float64(30_000) || v["name"] != fmt.Sprintf("doc%d.bin", want+1) || (v["replaced_at"] == nil) != (i == 0) {
				t.Fatalf("version %d: %v; want upload %d", i, v, want+1)
			}
		}

		// The oldest version, whole, in part, and by HEAD.
		path := "/api/v1/files/files/doc.bin?version=" + ids[0]
		got := send(t, env, "GET", path, u.Token, "", nil)
		if got.status != 200 || got.raw != string(data[0]) || got.header.Get("X-Checksum") != sum(data[0]) ||
			got.header.Get("X-Version-Id") != ids[0] || !strings.Contains(got.header.Get("Content-Disposition"), "doc1.bin") {
			t.Fatalf("GET ?version: %d %v", got.status, got.header)
		}
		etag := got.header.Get("ETag")
		part := send(t, env, "GET", path, u.Token, "", nil, "Range", "bytes=100-199", "If-Range", etag)
		if part.status != 206 || part.raw != string(data[0][100:200]) || part.header.Get("Content-Range") != "bytes 100-199/30000" {
			t.Fatalf("GET ?version with Range: %d %v", part.status, part.header)
		}
		if nm := send(t, env, "GET", path, u.Token, "", nil, "If-None-Match", etag); nm.status != 304 {
			t.Fatalf("GET ?version with its ETag: %d", nm.status)
		}
		head := send(t, env, "HEAD", "/api/v1/files/files/doc.bin?version="+ids[1], u.Token, "", nil)
		if head.status != 200 || head.raw != "" || head.header.Get("Content-Length") != "30000" || head.header.Get("X-Checksum") != sum(data[1]) {
			t.Fatalf("HEAD ?version: %d %v", head.status, head.header)
		}
		if cur := send(t, env, "HEAD", "/api/v1/files/files/doc.bin", u.Token, "", nil); cur.header.Get("X-Version-Id") != ids[2] {
			t.Fatalf("HEAD of the current version: X-Version-Id %q, want %s", cur.header.Get("X-Version-Id"), ids[2])
		}
		nope := send(t, env, "GET", "/api/v1/files/files/doc.bin?version=v_nope", u.Token, "", nil)
		if nope.status != 404 || nope.errCode() != "not_found" || !strings.Contains(nope.errMessage(), "v_nope") {
			t.Fatalf("an unknown version: %d %s", nope.status, nope.raw)
		}
		// Another user sees neither the file nor its versions.
		_, other := env.User(t, "otto", "user")
		if a := send(t, env, "GET", path, other.Token, "", nil); a.status != 404 {
			t.Fatalf("another user's version: %d", a.status)
		}
		if a := send(t, env, "GET", "/api/v1/files/files/doc.bin/versions", other.Token, "", nil); a.status != 404 {
			t.Fatalf("another user's versions: %d", a.status)
		}

		// 90 000 of 100 000 bytes are held, the versions counted: 20 000 more do not fit.
		if a := send(t, env, "PUT", "/api/v1/files/files/more.bin", u.Token, "", strings.NewReader(strings.Repeat("m", 20_000))); a.status != 507 {
			t.Fatalf("a file past the quota the versions use: %d %s", a.status, a.raw)
		}

		// A key that ends in /versions is a file like any other.
		put("files/doc.bin/versions", "v.txt", []byte("a file"))
		if a := send(t, env, "GET", "/api/v1/files/files/doc.bin/versions", u.Token, "", nil); a.status != 200 || a.raw != "a file" {
			t.Fatalf("a file named …/versions: %d %q", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/file-versions?key=files/doc.bin", u.Token, "", nil); a.status != 200 || a.body["count"] != float64(3) {
			t.Fatalf("file-versions?key=: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/file-versions?key=files/doc.bin/versions", u.Token, "", nil); a.status != 200 || a.body["count"] != float64(1) {
			t.Fatalf("the versions of the file named …/versions: %d %s", a.status, a.raw)
		}

		// Deleting the key deletes its versions and retires their bytes.
		ctx := context.Background()
		kept, err := env.App.Store.FileVersions(ctx, u.ID, "files/doc.bin")
		if err != nil || len(kept) != 2 {
			t.Fatalf("kept versions: %v, %v", kept, err)
		}
		if a := send(t, env, "DELETE", "/api/v1/files/files/doc.bin", u.Token, "", nil); a.status != 204 {
			t.Fatalf("delete: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", path, u.Token, "", nil); a.status != 404 {
			t.Fatalf("a version of a deleted file: %d %s", a.status, a.raw)
		}
		retired := retiredKeys(t, env)
		for _, v := range kept {
			if !retired[v.BlobKey] {
				t.Fatalf("the bytes of version %s were not retired with its file", v.ID)
			}
		}
		if left, _ := env.App.Store.FileVersions(ctx, u.ID, "files/doc.bin"); len(left) != 0 {
			t.Fatalf("versions left after the delete: %v", left)
		}

		// A server that kept three wrote versions this one trims.
		more := staging.New(env.App.Store, env.App.Blobs, staging.Limits{MaxFileBytes: 1 << 20, UserQuotaBytes: 1 << 20, MaxTotalBytes: 1 << 30, Versions: 3},
			metrics.New(), slog.New(slog.DiscardHandler))
		for i := range 4 {
			if _, err := more.Put(ctx, staging.Upload{OwnerID: u.ID, Key: "files/many.txt", Body: strings.NewReader(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		c := send(t, env, "POST", "/api/v1/admin/cleanup", env.AdminToken, "", nil)
		removed, _ := c.body["removed"].(map[string]any)
		if c.status != 200 || removed["file_versions_trimmed"] != float64(1) {
			t.Fatalf("cleanup: %d %s; want 1 version trimmed", c.status, c.raw)
		}
		if a := send(t, env, "GET", "/api/v1/files/files/many.txt/versions", u.Token, "", nil); a.body["count"] != float64(3) {
			t.Fatalf("after the trim: %s; want the current and 2 kept", a.raw)
		}
	})
}
