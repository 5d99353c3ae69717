package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// makeLink makes a share link of key with token and returns the answer.
func makeLink(t *testing.T, env *apptest.Env, token, key, body string) answer {
	t.Helper()
	return send(t, env, "POST", "/api/v1/files/"+key+"/links", token, "application/json", strings.NewReader(body))
}

// fetch requests a link's URL, with no token, and header pairs.
func fetch(t *testing.T, env *apptest.Env, method, linkURL string, hdr ...string) answer {
	t.Helper()
	path, ok := strings.CutPrefix(linkURL, env.URL)
	if !ok {
		t.Fatalf("link URL %s is not on the server %s", linkURL, env.URL)
	}
	return send(t, env, method, path, "", "", nil, hdr...)
}

// TestLinksServeAFile: a link serves its file with no token, with the API's headers,
// Range and HEAD; it counts the downloads that start at the first byte up to
// max_downloads, and the bytes it serves up to max_downloads × size: resumes go on while
// bytes are left, and then every request gets 410 link_used_up. Revoking and deleting the file end it; overwriting the file
// keeps it, serving the new bytes.
func TestLinksServeAFile(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "ulla", "user")
		data := randomBytes(t, 100_000)
		if a := upload(t, env, u.Token, [][2]string{{"key", "files/report.bin"}}, "rapport.bin", data); a.status != 201 {
			t.Fatalf("upload: %s", a.raw)
		}
		api := send(t, env, "GET", "/api/v1/files/files/report.bin", u.Token, "", nil)

		before := time.Now()
		a := makeLink(t, env, u.Token, "files/report.bin", `{"ttl": "1h", "max_downloads": 2}`)
		if a.status != 201 {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		url, _ := a.body["url"].(string)
		id, _ := a.body["id"].(string)
		exp, err := time.Parse(time.RFC3339Nano, a.body["expires_at"].(string))
		if err != nil || exp.Before(before.Add(time.Hour-time.Second)) || exp.After(time.Now().Add(time.Hour)) ||
			!strings.HasPrefix(url, env.URL+"/s/skl_") || !strings.HasPrefix(id, "lnk_") || a.body["max_downloads"] != float64(2) ||
			a.body["downloads"] != float64(0) || a.body["file_key"] != "files/report.bin" {
			t.Fatalf("create answered %s", a.raw)
		}
		if strings.Contains(url, "report") || strings.Contains(url, u.ID) {
			t.Fatalf("the link's URL %s names the file or its owner", url)
		}

		// HEAD and a range that starts later take no download.
		head := fetch(t, env, "HEAD", url)
		if head.status != 200 || head.raw != "" {
			t.Fatalf("HEAD: %d %q", head.status, head.raw)
		}
		for _, h := range []string{"Content-Length", "Content-Type", "X-Checksum", "ETag", "Content-Disposition", "Accept-Ranges", "Last-Modified"} {
			if head.header.Get(h) == "" || head.header.Get(h) != api.header.Get(h) {
				t.Fatalf("HEAD of the link: %s = %q, the API says %q", h, head.header.Get(h), api.header.Get(h))
			}
		}
		if head.header.Get("X-Checksum") != sum(data) {
			t.Fatalf("X-Checksum %s, want %s", head.header.Get("X-Checksum"), sum(data))
		}
		part := fetch(t, env, "GET", url, "Range", "bytes=99990-")
		if part.status != 206 || part.raw != string(data[99990:]) || part.header.Get("Content-Range") != "bytes 99990-99999/100000" {
			t.Fatalf("range: %d %q", part.status, part.header.Get("Content-Range"))
		}
		etag := api.header.Get("ETag")
		if part := fetch(t, env, "GET", url, "Range", "bytes=10-19,-5", "If-Range", etag); part.status != 206 {
			t.Fatalf("two ranges with If-Range: %d", part.status)
		}
		// A range outside the file: 416, as on the API, naming no key; it takes no download.
		if bad := fetch(t, env, "GET", url, "Range", "bytes=200000-"); bad.status != 416 || bad.errCode() != "range_not_satisfiable" || strings.Contains(bad.raw, "report") {
			t.Fatalf("range outside the file: %d %s", bad.status, bad.raw)
		}
		if list := send(t, env, "GET", "/api/v1/files/files/report.bin/links", u.Token, "", nil); list.body["count"] != float64(1) ||
			list.body["links"].([]any)[0].(map[string]any)["downloads"] != float64(0) || strings.Contains(list.raw, "skl_") {
			t.Fatalf("list before any download: %s", list.raw)
		}

		// A GET answered 304 sent nothing: its download is given back.
		if nm := fetch(t, env, "GET", url, "If-None-Match", etag); nm.status != 304 {
			t.Fatalf("If-None-Match: %d", nm.status)
		}
		if list := send(t, env, "GET", "/api/v1/links?key=files/report.bin", u.Token, "", nil); list.body["links"].([]any)[0].(map[string]any)["downloads"] != float64(0) {
			t.Fatalf("a 304 was counted: %s", list.raw)
		}

		// Two downloads from the first byte: a whole GET, and a range from 0.
		full := fetch(t, env, "GET", url)
		if full.status != 200 || full.raw != string(data) || full.header.Get("X-Checksum") != sum(data) ||
			full.header.Get("Content-Disposition") != api.header.Get("Content-Disposition") || full.header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("download: %d, %d bytes, %v", full.status, len(full.raw), full.header)
		}
		if first := fetch(t, env, "GET", url, "Range", "bytes=0-99"); first.status != 206 || first.raw != string(data[:100]) {
			t.Fatalf("range from 0: %d", first.status)
		}
		// Both downloads are taken: a new one gets 410 link_used_up, not the wrong token's
		// 404. 100,125 of the 200,000 bytes two downloads allow are served; a resume may
		// read the rest and no byte more.
		wrong := fetch(t, env, "GET", env.URL+"/s/skl_"+strings.Repeat("A", 43))
		if wrong.status != 404 || wrong.errCode() != "not_found" {
			t.Fatalf("a wrong token: %d %s", wrong.status, wrong.raw)
		}
		usedUp := func(what string, a answer) {
			t.Helper()
			d, _ := a.body["error"].(map[string]any)["details"].(map[string]any)
			if a.status != 410 || a.errCode() != "gone" || d["reason"] != "link_used_up" || d["limit_bytes"] != float64(200000) ||
				!strings.Contains(a.errMessage(), "200000 bytes") || strings.Contains(a.raw, "report") {
				t.Fatalf("%s: %d %s, want 410 link_used_up naming 200000 bytes", what, a.status, a.raw)
			}
		}
		usedUp("a third download of two", fetch(t, env, "GET", url))
		if resume := fetch(t, env, "GET", url, "Range", "bytes=100-", "If-Range", etag); resume.status != 410 {
			t.Fatalf("a resume of 99,900 bytes with 99,875 left: %d", resume.status)
		}
		if resume := fetch(t, env, "GET", url, "Range", "bytes=225-", "If-Range", etag); resume.status != 206 || resume.raw != string(data[225:]) {
			t.Fatalf("a resume within what is left: %d", resume.status)
		}
		if h := fetch(t, env, "HEAD", url); h.status != 200 {
			t.Fatalf("HEAD with 100 bytes left: %d", h.status)
		}
		if resume := fetch(t, env, "GET", url, "Range", "bytes=99900-"); resume.status != 206 || resume.raw != string(data[99900:]) {
			t.Fatalf("the last 100 bytes: %d", resume.status)
		}
		// Every byte is served: ranges of any shape, and a HEAD, get 410.
		usedUp("a range of one byte", fetch(t, env, "GET", url, "Range", "bytes=99999-"))
		usedUp("bytes=1-", fetch(t, env, "GET", url, "Range", "bytes=1-"))
		usedUp("a suffix longer than the file", fetch(t, env, "GET", url, "Range", "bytes=-999999"))
		if h := fetch(t, env, "HEAD", url); h.status != 410 {
			t.Fatalf("HEAD of a used-up link: %d", h.status)
		}
		// An If-Range that no longer matches would send the whole file.
		usedUp("a resume with a stale If-Range", fetch(t, env, "GET", url, "Range", "bytes=100-", "If-Range", `"0000"`))
		if list := send(t, env, "GET", "/api/v1/links?key=files/report.bin", u.Token, "", nil); list.body["links"].([]any)[0].(map[string]any)["downloads"] != float64(2) {
			t.Fatalf("list after two downloads: %s", list.raw)
		}

		// The link takes nothing from the request: not a key, not an owner.
		other := randomBytes(t, 10)
		if a := upload(t, env, u.Token, [][2]string{{"key", "files/other.bin"}}, "other.bin", other); a.status != 201 {
			t.Fatal(a.raw)
		}
		l2 := makeLink(t, env, u.Token, "files/report.bin", `{"ttl": "10m"}`)
		url2 := l2.body["url"].(string)
		for _, tail := range []string{"?key=files/other.bin", "?owner=admin&key=files/other.bin"} {
			if a := fetch(t, env, "GET", url2+tail); a.status != 200 || a.raw != string(data) {
				t.Fatalf("GET %s: %d, %d bytes; want the link's file", tail, a.status, len(a.raw))
			}
		}
		for _, tail := range []string{"/files/other.bin", "/../files/other.bin", "/%2e%2e/api/v1/files/files/other.bin", "%2Ffiles%2Fother.bin"} {
			req, _ := http.NewRequest("GET", url2+tail, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == 200 && resp.Header.Get("X-Checksum") == sum(other) {
				t.Fatalf("GET %s served another file", url2+tail)
			}
		}

		// Overwriting the file keeps the link: it serves the new bytes.
		newer := randomBytes(t, 5000)
		if a := send(t, env, "PUT", "/api/v1/files/files/report.bin", u.Token, "application/octet-stream", strings.NewReader(string(newer))); a.status != 201 {
			t.Fatal(a.raw)
		}
		if a := fetch(t, env, "GET", url2); a.status != 200 || a.raw != string(newer) || a.header.Get("X-Checksum") != sum(newer) {
			t.Fatalf("the link after an overwrite: %d, %d bytes", a.status, len(a.raw))
		}

		// Revoked: the wrong token's 404, at once. Only the owner may revoke.
		_, v := env.User(t, "vera", "user")
		if a := send(t, env, "DELETE", "/api/v1/links/"+l2.body["id"].(string), v.Token, "", nil); a.status != 404 {
			t.Fatalf("another user revoking: %d", a.status)
		}
		if a := send(t, env, "DELETE", "/api/v1/links/"+l2.body["id"].(string), u.Token, "", nil); a.status != 204 {
			t.Fatalf("revoke: %d %s", a.status, a.raw)
		}
		if a := fetch(t, env, "GET", url2); a.status != 404 || a.raw != wrong.raw {
			t.Fatalf("a revoked link: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "DELETE", "/api/v1/links/"+l2.body["id"].(string), u.Token, "", nil); a.status != 404 || a.errCode() != "not_found" {
			t.Fatalf("revoking twice: %d", a.status)
		}

		// Deleting the file ends its links; a new file under the key has none.
		l3 := makeLink(t, env, u.Token, "files/report.bin", `{"ttl": "10m"}`)
		if a := send(t, env, "DELETE", "/api/v1/files/files/report.bin", u.Token, "", nil); a.status != 204 {
			t.Fatal(a.raw)
		}
		if a := fetch(t, env, "GET", l3.body["url"].(string)); a.status != 404 || a.raw != wrong.raw {
			t.Fatalf("the link of a deleted file: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "PUT", "/api/v1/files/files/report.bin", u.Token, "application/octet-stream", strings.NewReader("back")); a.status != 201 {
			t.Fatal(a.raw)
		}
		if a := fetch(t, env, "GET", l3.body["url"].(string)); a.status != 404 {
			t.Fatalf("the deleted file's link on a new file under its key: %d", a.status)
		}
	})
}

// TestLinksLastDownloadRace: of many downloads racing for a link's one download,
// exactly one gets the file.
func TestLinksLastDownloadRace(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "ulla", "user")
		data := randomBytes(t, 50_000)
		if a := upload(t, env, u.Token, [][2]string{{"key", "files/once.bin"}}, "once.bin", data); a.status != 201 {
			t.Fatal(a.raw)
		}
		for round := range 3 {
			url := makeLink(t, env, u.Token, "files/once.bin", `{"ttl": "1h", "max_downloads": 1}`).body["url"].(string)
			var wg sync.WaitGroup
			statuses := make([]int, 8)
			for i := range statuses {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Get(url)
					if err != nil {
						t.Error(err)
						return
					}
					defer resp.Body.Close()
					b, _ := readAll(resp)
					if resp.StatusCode == 200 && b != string(data) {
						t.Errorf("a download got %d bytes", len(b))
					}
					statuses[i] = resp.StatusCode
				}()
			}
			wg.Wait()
			ok := 0
			for _, s := range statuses {
				switch s {
				case 200:
					ok++
				case 410:
				default:
					t.Fatalf("round %d: statuses %v", round, statuses)
				}
			}
			if ok != 1 {
				t.Fatalf("round %d: %d of 8 racing downloads got a one-download link's file, want exactly 1 (%v)", round, ok, statuses)
			}
		}
	})
}

// TestLinksRefusals: a link needs a live file of the caller's, a ttl within the limit and
// a max_downloads of at least 1; the errors say which. An admin makes one of another
// user's file with ?owner=. A link never outlives its file.
func TestLinksRefusals(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "ulla", "user")
		_, v := env.User(t, "vera", "user")
		if a := upload(t, env, u.Token, [][2]string{{"key", "files/mine.txt"}, {"ttl", "2h"}}, "mine.txt", []byte("mine")); a.status != 201 {
			t.Fatal(a.raw)
		}
		for _, c := range []struct {
			name, token, key, body string
			status                 int
			code, says             string
		}{
			{"another user's file", v.Token, "files/mine.txt", `{"ttl": "1h"}`, 404, "not_found", "files/mine.txt"},
			{"no such file", u.Token, "files/nothing.txt", `{"ttl": "1h"}`, 404, "not_found", "files/nothing.txt"},
			{"no ttl", u.Token, "files/mine.txt", `{}`, 400, "invalid_request", "ttl"},
			{"a bad ttl", u.Token, "files/mine.txt", `{"ttl": "soon"}`, 400, "invalid_request", `"soon"`},
			{"a negative ttl", u.Token, "files/mine.txt", `{"ttl": "-1h"}`, 400, "invalid_request", "ttl"},
			{"a ttl over the limit", u.Token, "files/mine.txt", `{"ttl": "8d"}`, 400, "invalid_request", "7d"},
			{"no downloads", u.Token, "files/mine.txt", `{"ttl": "1h", "max_downloads": 0}`, 400, "invalid_request", "max_downloads"},
			{"an unknown field", u.Token, "files/mine.txt", `{"ttl": "1h", "uses": 3}`, 400, "invalid_request", "uses"},
			{"no token", "", "files/mine.txt", `{"ttl": "1h"}`, 401, "unauthorized", ""},
		} {
			a := makeLink(t, env, c.token, c.key, c.body)
			if a.status != c.status || a.errCode() != c.code || !strings.Contains(a.errMessage(), c.says) {
				t.Errorf("%s: %d %s", c.name, a.status, a.raw)
			}
		}
		// Another user sees no links of the file, and cannot list them.
		if a := send(t, env, "GET", "/api/v1/files/files/mine.txt/links", v.Token, "", nil); a.status != 404 {
			t.Fatalf("another user listing the links: %d", a.status)
		}
		// POST on a key itself is still refused as a method the key does not take.
		if a := send(t, env, "POST", "/api/v1/files/files/mine.txt", u.Token, "", nil); a.status != 405 || a.header.Get("Allow") == "" {
			t.Fatalf("POST on a key: %d %s", a.status, a.raw)
		}

		// Capped at the file's expiry.
		a := makeLink(t, env, u.Token, "files/mine.txt", `{"ttl": "5d"}`)
		exp, _ := time.Parse(time.RFC3339Nano, a.body["expires_at"].(string))
		if a.status != 201 || exp.After(time.Now().Add(2*time.Hour)) {
			t.Fatalf("a link past its file's expiry: %s", a.raw)
		}
		// An admin shares another user's file.
		if a := send(t, env, "POST", "/api/v1/files/files/mine.txt/links?owner=ulla", env.AdminToken, "application/json", strings.NewReader(`{"ttl": "1h"}`)); a.status != 201 {
			t.Fatalf("an admin's link of ulla's file: %d %s", a.status, a.raw)
		} else if got := fetch(t, env, "GET", a.body["url"].(string)); got.raw != "mine" {
			t.Fatalf("the admin's link served %q", got.raw)
		}

		// A file of the caller's named …/links is served as a file; its links are at /api/v1/links.
		if a := send(t, env, "PUT", "/api/v1/files/files/mine.txt/links", u.Token, "text/plain", strings.NewReader("a file")); a.status != 201 {
			t.Fatal(a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/files/files/mine.txt/links", u.Token, "", nil); a.raw != "a file" {
			t.Fatalf("GET of a file named …/links: %s", a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/links?key=files/mine.txt", u.Token, "", nil); a.body["count"] != float64(2) {
			t.Fatalf("links by query: %s", a.raw)
		}
	})
}

// TestLinksExpire: a link past its ttl answers 404 at once, and the janitor removes it.
func TestLinksExpire(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "ulla", "user")
		if a := upload(t, env, u.Token, [][2]string{{"key", "files/brief.txt"}}, "brief.txt", []byte("brief")); a.status != 201 {
			t.Fatal(a.raw)
		}
		short := makeLink(t, env, u.Token, "files/brief.txt", `{"ttl": "1s"}`)
		long := makeLink(t, env, u.Token, "files/brief.txt", `{"ttl": "1h"}`)
		if a := fetch(t, env, "GET", short.body["url"].(string)); a.status != 200 {
			t.Fatalf("a fresh link: %d", a.status)
		}
		time.Sleep(1100 * time.Millisecond)
		if a := fetch(t, env, "GET", short.body["url"].(string)); a.status != 404 || a.errCode() != "not_found" {
			t.Fatalf("an expired link: %d %s", a.status, a.raw)
		}
		if a := fetch(t, env, "GET", short.body["url"].(string), "Range", "bytes=1-"); a.status != 404 {
			t.Fatalf("resuming on an expired link: %d", a.status)
		}
		if list, _ := env.Client(t, u.Token).Links(context.Background(), "files/brief.txt"); len(list) != 1 || list[0].ID != long.body["id"] {
			t.Fatalf("links after one expired: %+v", list)
		}
		r, err := env.Admin.Cleanup(context.Background())
		if err != nil || r.FileLinks != 1 {
			t.Fatalf("cleanup = %+v, %v; want 1 file link", r, err)
		}
		if a := fetch(t, env, "GET", long.body["url"].(string)); a.status != 200 {
			t.Fatalf("the unexpired link after cleanup: %d", a.status)
		}
	})
}

func readAll(resp *http.Response) (string, error) {
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestLinksAcrossAPINodes: a link made on one API node of a cluster works on another (the
// link is in PostgreSQL and the bytes in NATS), and its downloads are counted once for
// the cluster.
func TestLinksAcrossAPINodes(t *testing.T) {
	cfg := apptest.Config(t, apptest.ClusterBackend)
	one := apptest.Start(t, cfg)
	cfg.DataDir = t.TempDir()
	two := apptest.Start(t, cfg)
	_, u := one.User(t, "ulla", "user")
	data := randomBytes(t, 70_000)
	if a := upload(t, one, u.Token, [][2]string{{"key", "files/shared.bin"}}, "shared.bin", data); a.status != 201 {
		t.Fatal(a.raw)
	}
	l := makeLink(t, one, u.Token, "files/shared.bin", `{"ttl": "1h", "max_downloads": 1}`)
	if l.status != 201 {
		t.Fatal(l.raw)
	}
	token := strings.TrimPrefix(l.body["url"].(string), one.URL)
	if a := send(t, two, "GET", token, "", "", nil); a.status != 200 || a.raw != string(data) {
		t.Fatalf("the link on the other node: %d, %d bytes", a.status, len(a.raw))
	}
	// The bytes are counted once for the cluster: the probe's used-up link served
	// bytes=1- and bytes=-999999 again and again.
	for _, c := range []struct {
		env *apptest.Env
		rng string
	}{{one, ""}, {one, "bytes=1-"}, {two, "bytes=-999999"}, {two, "bytes=69999-"}} {
		if a := send(t, c.env, "GET", token, "", "", nil, "Range", c.rng); a.status != 410 || a.errCode() != "gone" {
			t.Fatalf("Range %q on a used-up one-download link: %d %s", c.rng, a.status, a.raw)
		}
	}
	// A download cut short resumes on another node, within the link's bytes.
	cut := strings.TrimPrefix(makeLink(t, one, u.Token, "files/shared.bin", `{"ttl": "1h", "max_downloads": 1}`).body["url"].(string), one.URL)
	if a := send(t, one, "GET", cut, "", "", nil, "Range", "bytes=0-9999"); a.status != 206 || a.raw != string(data[:10000]) {
		t.Fatalf("the first 10000 bytes: %d", a.status)
	}
	if a := send(t, two, "GET", cut, "", "", nil, "Range", "bytes=10000-"); a.status != 206 || a.raw != string(data[10000:]) {
		t.Fatalf("the resume on the other node: %d %s", a.status, a.raw)
	}
	if a := send(t, one, "GET", cut, "", "", nil, "Range", "bytes=69999-"); a.status != 410 {
		t.Fatalf("a byte more: %d", a.status)
	}
	l2 := makeLink(t, two, u.Token, "files/shared.bin", `{"ttl": "1h"}`)
	if a := send(t, one, "DELETE", "/api/v1/links/"+l2.body["id"].(string), u.Token, "", nil); a.status != 204 {
		t.Fatalf("revoking on the other node: %d %s", a.status, a.raw)
	}
	if a := send(t, two, "GET", strings.TrimPrefix(l2.body["url"].(string), two.URL), "", "", nil); a.status != 404 {
		t.Fatalf("a link revoked on the other node: %d", a.status)
	}
}

// TestLinksOverlappingRangesAreADownload: ranges that all start after byte 0 but together
// ask for more bytes than the file holds are ignored by http.ServeContent, which then
// sends the whole file with a 200: such a request reserves the whole file, and a link
// with less left refuses it. Ranges that fit are a resume of what is left.
func TestLinksOverlappingRangesAreADownload(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	_, u := env.User(t, "ulla", "user")
	data := randomBytes(t, 10_000)
	if a := upload(t, env, u.Token, [][2]string{{"key", "files/once.bin"}}, "once.bin", data); a.status != 201 {
		t.Fatal(a.raw)
	}
	url := makeLink(t, env, u.Token, "files/once.bin", `{"ttl": "1h", "max_downloads": 1}`).body["url"].(string)
	if first := fetch(t, env, "GET", url, "Range", "bytes=0-0"); first.status != 206 || first.raw != string(data[:1]) {
		t.Fatalf("the download's first byte: %d", first.status)
	}
	for _, rng := range []string{"bytes=1-,1-", "bytes=1-9999,1-9999", "bytes=5000-,-9000"} {
		if a := fetch(t, env, "GET", url, "Range", rng); a.status != 410 {
			t.Fatalf("Range %s with 9999 bytes left: %d, %d bytes (the file has %d)", rng, a.status, len(a.raw), len(data))
		}
	}
	if a := fetch(t, env, "GET", url, "Range", "bytes=1-4999,5000-"); a.status != 206 {
		t.Fatalf("a resume in two ranges that fit: %d", a.status)
	}
	if a := fetch(t, env, "GET", url, "Range", "bytes=1-1"); a.status != 410 {
		t.Fatalf("a byte past the link's: %d", a.status)
	}
}
