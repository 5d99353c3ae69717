package api_test

import (
	"bufio"
	"encoding/json"
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
)

// TestUploadLinks: an upload link lets anyone who has its URL PUT one file to its key,
// with no token: the file is its owner's and counts against their quota. A file over the
// link's max_bytes or of a type it does not allow stores nothing and keeps the use; a
// spent, revoked or expired link stores nothing. Of uploads racing for the last use, one
// wins.
func TestUploadLinks(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "ulla", "user")
		_, other := env.User(t, "olle", "user")
		a := send(t, env, "POST", "/api/v1/files/files/inlamning/uppsats.pdf/upload-links", u.Token, "application/json",
			strings.NewReader(`{"ttl": "2d", "max_bytes": 1000, "content_types": ["application/pdf"], "uses": 2}`))
		if a.status != 201 || a.body["file_key"] != "files/inlamning/uppsats.pdf" || a.body["uses"] != float64(2) || a.body["used"] != float64(0) ||
			a.body["max_bytes"] != float64(1000) {
			t.Fatalf("create: %d %s", a.status, a.raw)
		}
		url, _ := a.body["url"].(string)
		id, _ := a.body["id"].(string)
		if !strings.HasPrefix(url, env.URL+"/u/sku_") || strings.Contains(url, "uppsats") || strings.Contains(url, u.ID) {
			t.Fatalf("the link's URL %s", url)
		}
		put := func(link, ctype, body string) answer {
			t.Helper()
			return fetchBody(t, env, link, ctype, body)
		}
		if a := put(url, "text/plain", "hej"); a.status != 400 || !strings.Contains(a.raw, `"upload_type"`) {
			t.Fatalf("a text file: %d %s", a.status, a.raw)
		}
		if a := put(url, "application/pdf", strings.Repeat("x", 1001)); a.status != 413 {
			t.Fatalf("a file over max_bytes: %d %s", a.status, a.raw)
		}
		if a := send(t, env, "GET", "/api/v1/files/files/inlamning/uppsats.pdf", u.Token, "", nil); a.status != 404 {
			t.Fatalf("refused uploads stored something: %d", a.status)
		}
		if a := put(url, "application/pdf", "%PDF-1 första"); a.status != 201 || a.body["name"] != "uppsats.pdf" || strings.Contains(a.raw, "files/") {
			t.Fatalf("the first upload: %d %s", a.status, a.raw)
		}
		got := send(t, env, "GET", "/api/v1/files/files/inlamning/uppsats.pdf", u.Token, "", nil)
		if got.status != 200 || got.raw != "%PDF-1 första" {
			t.Fatalf("the owner's file: %d %q", got.status, got.raw)
		}
		if a := send(t, env, "GET", "/api/v1/files/files/inlamning/uppsats.pdf", other.Token, "", nil); a.status != 404 {
			t.Fatalf("another user sees the file: %d", a.status)
		}
		// The last use: of several at once, one stores; the others find the link busy
		// (409) or, once it stored, used (410).
		var wg sync.WaitGroup
		codes := make([]int, 4)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = fetchBody(t, env, url, "application/pdf", "%PDF-2 andra").status
			}()
		}
		wg.Wait()
		won := 0
		for _, c := range codes {
			switch c {
			case 201:
				won++
			case 409, 410:
			default:
				t.Errorf("a racing upload got %d", c)
			}
		}
		if won != 1 {
			t.Fatalf("%d of the racing uploads stored, want 1: %v", won, codes)
		}
		if a := put(url, "application/pdf", "%PDF-3"); a.status != 410 || !strings.Contains(a.raw, "upload_link_used") {
			t.Fatalf("a spent link: %d %s", a.status, a.raw)
		}
		list := send(t, env, "GET", "/api/v1/upload-links", u.Token, "", nil)
		links, _ := list.body["upload_links"].([]any)
		if list.status != 200 || len(links) != 1 || links[0].(map[string]any)["used"] != float64(2) || links[0].(map[string]any)["url"] != nil {
			t.Fatalf("list: %s", list.raw)
		}
		if a := send(t, env, "GET", "/api/v1/upload-links", other.Token, "", nil); !strings.Contains(a.raw, `"count":0`) {
			t.Fatalf("another user's list: %s", a.raw)
		}

		// Revoked: the URL stops at once; another's revoke is refused.
		second := send(t, env, "POST", "/api/v1/files/files/drop.txt/upload-links", u.Token, "application/json", strings.NewReader(`{"ttl": "1h"}`))
		url2, _ := second.body["url"].(string)
		id2, _ := second.body["id"].(string)
		if second.status != 201 || second.body["uses"] != float64(1) {
			t.Fatalf("a second link: %s", second.raw)
		}
		if a := send(t, env, "DELETE", "/api/v1/upload-links/"+id2, other.Token, "", nil); a.status != 404 {
			t.Fatalf("another user revoked the link: %d", a.status)
		}
		if a := send(t, env, "DELETE", "/api/v1/upload-links/"+id2, u.Token, "", nil); a.status != 204 {
			t.Fatalf("revoke: %d %s", a.status, a.raw)
		}
		if a := put(url2, "text/plain", "hej"); a.status != 404 {
			t.Fatalf("a revoked link: %d %s", a.status, a.raw)
		}
		if a := put(env.URL+"/u/sku_nothing", "text/plain", "hej"); a.status != 404 {
			t.Fatalf("an unknown link: %d", a.status)
		}
		_ = id

		// Bad requests name the field.
		for body, field := range map[string]string{
			`{}`:                             "ttl",
			`{"ttl": "1h", "max_bytes": -1}`: "max_bytes",
			`{"ttl": "1h", "uses": 100000}`:  "uses",
			`{"ttl": "1h", "content_types": ["pdf"]}`: "content_types",
		} {
			a := send(t, env, "POST", "/api/v1/files/files/x.txt/upload-links", u.Token, "application/json", strings.NewReader(body))
			if a.status != 400 || !strings.Contains(a.raw, field) {
				t.Errorf("create with %s: %d %s", body, a.status, a.raw)
			}
		}
	})
}

// TestUploadLinkQuota: a file sent through a link counts against its owner's quota, and
// one past it stores nothing. Whoever sent it, who has no account, is told only that
// the owner has no room (507 upload_link_full): not the owner's quota nor what is left
// of it, whether the length was declared or not. The owner still sees the numbers in
// their own uploads.
func TestUploadLinkQuota(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.FilesUserQuotaBytes = 10_000
	env := apptest.Start(t, cfg)
	_, u := env.User(t, "ulla", "user")
	a := send(t, env, "POST", "/api/v1/files/files/stor.bin/upload-links", u.Token, "application/json", strings.NewReader(`{"ttl": "1h", "uses": 2}`))
	url, _ := a.body["url"].(string)
	path := strings.TrimPrefix(url, env.URL)
	for _, tc := range []struct {
		name string
		body io.Reader
	}{
		{"declared", strings.NewReader(strings.Repeat("x", 20_000))},
		{"streamed", io.MultiReader(strings.NewReader(strings.Repeat("x", 20_000)))}, // no Content-Length
	} {
		r := send(t, env, "PUT", path, "", "", tc.body)
		e, _ := r.body["error"].(map[string]any)
		msg, _ := e["message"].(string)
		details, _ := e["details"].(map[string]any)
		if r.status != 507 || r.errCode() != "quota_exceeded" || details["reason"] != "upload_link_full" {
			t.Fatalf("%s: an upload past the owner's quota: %d %s", tc.name, r.status, r.raw)
		}
		if strings.ContainsAny(msg, "0123456789") || len(details) != 2 || details["file"] != "stor.bin" {
			t.Errorf("%s: the refusal tells the sender more than that the owner has no room: %s", tc.name, r.raw)
		}
	}
	own := send(t, env, "PUT", "/api/v1/files/files/egen.bin", u.Token, "application/octet-stream", strings.NewReader(strings.Repeat("x", 20_000)))
	if own.status != 507 || !strings.Contains(own.raw, `"quota_bytes":10000`) {
		t.Fatalf("the owner's own upload past the quota: %d %s", own.status, own.raw)
	}
	if r := fetchBody(t, env, url, "", strings.Repeat("x", 6_000)); r.status != 201 {
		t.Fatalf("an upload within it: %d %s", r.status, r.raw)
	}
	me := send(t, env, "GET", "/api/v1/me", u.Token, "", nil)
	if !strings.Contains(me.raw, "6000") {
		t.Fatalf("the owner's usage does not count the file: %s", me.raw)
	}
}

// TestUploadLinkQuotaWholeBody: through a link, the owner's quota is judged only on the
// whole file, so a sender cannot find the owner's free room by where the refusal comes.
// A declared length past the free room but within the link's max_bytes is read to its
// last byte before the 507 (the answer is held back while half the body is), the use is
// given back and the file under the key stays as it was; a declared length past
// max_bytes is refused at once (413), before any of the body.
func TestUploadLinkQuotaWholeBody(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesUserQuotaBytes = 100_000
		env := apptest.Start(t, cfg)
		_, u := env.User(t, "ulla", "user")
		if r := send(t, env, "PUT", "/api/v1/files/files/inkorg.bin", u.Token, "application/octet-stream", strings.NewReader("förra")); r.status != 201 {
			t.Fatalf("the owner's file: %d %s", r.status, r.raw)
		}
		a := send(t, env, "POST", "/api/v1/files/files/inkorg.bin/upload-links", u.Token, "application/json",
			strings.NewReader(`{"ttl": "1h", "max_bytes": 1000000}`))
		if a.status != 201 {
			t.Fatalf("link: %d %s", a.status, a.raw)
		}
		url, _ := a.body["url"].(string)
		used := func() float64 {
			l := send(t, env, "GET", "/api/v1/upload-links", u.Token, "", nil)
			ls, _ := l.body["upload_links"].([]any)
			if len(ls) != 1 {
				t.Fatalf("links: %s", l.raw)
			}
			n, _ := ls[0].(map[string]any)["used"].(float64)
			return n
		}
		// put sends a body of size bytes declared up front, through a pipe the test feeds.
		put := func(size int64) (*io.PipeWriter, chan answer) {
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("PUT", url, pr)
			req.ContentLength = size
			req.Header.Set("Content-Type", "application/octet-stream")
			ch := make(chan answer, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					ch <- answer{raw: err.Error()}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				a := answer{status: resp.StatusCode, raw: string(b)}
				json.Unmarshal(b, &a.body) //nolint:errcheck // a body that is not JSON fails the checks on a.body
				ch <- a
			}()
			return pw, ch
		}

		// (a) 600 kB, over the 100 kB quota, within max_bytes: halves larger than what the
		// HTTP server drains on its own after an early answer.
		half := strings.Repeat("x", 300_000)
		pw, ch := put(2 * int64(len(half)))
		pw.Write([]byte(half)) //nolint:errcheck // an early answer closes the pipe
		for used() != 1 {
			select {
			case r := <-ch:
				t.Fatalf("answered before the whole body was sent: %d %s", r.status, r.raw)
			default:
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case r := <-ch:
			t.Fatalf("answered while half the body was held back: %d %s", r.status, r.raw)
		default:
		}
		if _, err := pw.Write([]byte(half)); err != nil {
			t.Fatalf("the rest of the body: %v", err)
		}
		pw.Close()
		r := <-ch
		e, _ := r.body["error"].(map[string]any)
		details, _ := e["details"].(map[string]any)
		if r.status != 507 || details["reason"] != "upload_link_full" || len(details) != 2 {
			t.Fatalf("a whole file past the owner's quota: %d %s", r.status, r.raw)
		}
		if n := used(); n != 0 {
			t.Errorf("a 507 took the link's use: used %v", n)
		}
		if g := send(t, env, "GET", "/api/v1/files/files/inkorg.bin", u.Token, "", nil); g.status != 200 || g.raw != "förra" {
			t.Fatalf("the refused upload changed the stored file: %d %.100s", g.status, g.raw)
		}
		me := send(t, env, "GET", "/api/v1/me", u.Token, "", nil)
		if usage, _ := me.body["usage"].(map[string]any); usage["files"] != float64(len("förra")) {
			t.Fatalf("the refused bytes count in the owner's usage: %s", me.raw)
		}

		// (b) a declared length past max_bytes: 413 before a byte of the body is sent.
		// On a bare connection: the headers alone, and the answer read before any body.
		conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		linkPath := strings.TrimPrefix(url, env.URL)
		fmt.Fprintf(conn, "PUT %s HTTP/1.1\r\nHost: skrip\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000001\r\n\r\n", linkPath)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to the headers alone: %v", err)
		}
		// One JSON value: the server may keep the connection until the body it refused
		// would have come.
		r = answer{status: resp.StatusCode}
		json.NewDecoder(resp.Body).Decode(&r.body) //nolint:errcheck // checked below
		r.raw = fmt.Sprint(r.body)
		if r.status != 413 || r.errCode() != "too_large" {
			t.Fatalf("a declared length past max_bytes: %d %s", r.status, r.raw)
		}

		// A smaller file is taken by the same use.
		if r := fetchBody(t, env, url, "", strings.Repeat("y", 50_000)); r.status != 201 {
			t.Fatalf("a file within the quota after a 507: %d %s", r.status, r.raw)
		}
	})
}

// TestUploadLinkLimit: one user holds at most SKRIP_UPLOAD_LINKS_PER_USER links that
// still work (here 2, not the default limit); past it, 409
// upload_link_limit and no link. Used-up and revoked links do not count (nor expired
// ones: TestUploadLinkLimitCounts), and another user is not refused.
func TestUploadLinkLimit(t *testing.T) {
	const limit = 2
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.UploadLinksPerUser = limit
	env := apptest.Start(t, cfg)
	_, u := env.User(t, "ulla", "user")
	_, other := env.User(t, "olle", "user")
	create := func(token string) answer {
		t.Helper()
		return send(t, env, "POST", "/api/v1/files/files/inbox.txt/upload-links", token, "application/json", strings.NewReader(`{"ttl": "1h"}`))
	}
	// A used-up link does not count.
	used := create(u.Token)
	if r := fetchBody(t, env, used.body["url"].(string), "text/plain", "hej"); r.status != 201 {
		t.Fatalf("an upload through a link: %d %s", r.status, r.raw)
	}
	ids := make([]string, 0, limit)
	for len(ids) < limit {
		a := create(u.Token)
		if a.status != 201 {
			t.Fatalf("link %d: %d %s", len(ids)+1, a.status, a.raw)
		}
		ids = append(ids, a.body["id"].(string))
	}
	past := create(u.Token)
	e, _ := past.body["error"].(map[string]any)
	details, _ := e["details"].(map[string]any)
	if past.status != 409 || details["reason"] != "upload_link_limit" || details["limit"] != float64(limit) ||
		!strings.Contains(past.raw, strconv.Itoa(limit)) {
		t.Fatalf("a link past the limit: %d %s", past.status, past.raw)
	}
	if l := send(t, env, "GET", "/api/v1/upload-links", u.Token, "", nil); !strings.Contains(l.raw, `"count":`+strconv.Itoa(limit+1)) {
		t.Fatalf("the refused link was made: %s", l.raw[:min(len(l.raw), 200)])
	}
	if a := create(other.Token); a.status != 201 {
		t.Fatalf("another user's link: %d %s", a.status, a.raw)
	}
	if a := send(t, env, "DELETE", "/api/v1/upload-links/"+ids[0], u.Token, "", nil); a.status != 204 {
		t.Fatalf("revoke: %d %s", a.status, a.raw)
	}
	if a := create(u.Token); a.status != 201 {
		t.Fatalf("a link after one was revoked: %d %s", a.status, a.raw)
	}
}

// fetchBody PUTs body to a link's URL with no token.
func fetchBody(t *testing.T, env *apptest.Env, linkURL, ctype, body string) answer {
	t.Helper()
	path, ok := strings.CutPrefix(linkURL, env.URL)
	if !ok {
		t.Fatalf("link URL %s is not on the server %s", linkURL, env.URL)
	}
	return send(t, env, "PUT", path, "", ctype, strings.NewReader(body))
}

// TestUploadLinkOneAtATime: while a file streams through a link, another upload through
// it waits its turn (409, Retry-After), so that two never see the same room in the
// owner's quota; once the first ends, the next goes through.
func TestUploadLinkOneAtATime(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "ulla", "user")
	a := send(t, env, "POST", "/api/v1/files/files/inbox.txt/upload-links", u.Token, "application/json", strings.NewReader(`{"ttl": "1h", "uses": 5}`))
	url, _ := a.body["url"].(string)
	pr, pw := io.Pipe()
	first := make(chan int)
	go func() {
		req, _ := http.NewRequest("PUT", url, pr)
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	pw.Write([]byte("första raden\n"))
	// The first upload holds the link once its use is taken (the owner sees it used).
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := send(t, env, "GET", "/api/v1/upload-links", u.Token, "", nil)
		if strings.Contains(l.raw, `"used":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the streaming upload never took its use: %s", l.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if b := fetchBody(t, env, url, "text/plain", "andra"); b.status != 409 || !strings.Contains(b.raw, "upload_link_busy") || b.header.Get("Retry-After") == "" {
		t.Fatalf("an upload beside a streaming one: %d %s", b.status, b.raw)
	}
	pw.Write([]byte("sista raden\n"))
	pw.Close()
	if code := <-first; code != 201 {
		t.Fatalf("the streaming upload: %d", code)
	}
	if b := fetchBody(t, env, url, "text/plain", "tredje"); b.status != 201 {
		t.Fatalf("an upload after it: %d %s", b.status, b.raw)
	}
}
