package api_test

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// etagOf is the ETag a HEAD of the caller's file key gives ("" when there is none).
func etagOf(t *testing.T, env *apptest.Env, token, key string) string {
	t.Helper()
	a := send(t, env, "HEAD", "/api/v1/files/"+key, token, "", nil)
	if a.status == 404 {
		return ""
	}
	if a.status != 200 || a.header.Get("ETag") == "" {
		t.Fatalf("HEAD %s: %d %v", key, a.status, a.header)
	}
	return a.header.Get("ETag")
}

// bytesOf is the body of the caller's file key, or "<404>".
func bytesOf(t *testing.T, env *apptest.Env, token, key string) string {
	t.Helper()
	a := send(t, env, "GET", "/api/v1/files/"+key, token, "", nil)
	if a.status == 404 {
		return "<404>"
	}
	if a.status != 200 {
		t.Fatalf("GET %s: %d %s", key, a.status, a.raw)
	}
	return a.raw
}

// refused checks that a is the 412 of a condition that does not hold, with the details
// docs/api.md gives: the key, the header and the file's ETag now.
func refused(t *testing.T, what string, a answer, key, header, current string) {
	t.Helper()
	e, _ := a.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	if a.status != 412 || a.errCode() != "precondition_failed" || d["reason"] != "precondition_failed" || d["key"] != key || d["header"] != header {
		t.Fatalf("%s: %d %s, want 412 precondition_failed for %s on %s", what, a.status, a.raw, header, key)
	}
	if (current == "" && d["current_etag"] != nil) || (current != "" && d["current_etag"] != current) {
		t.Fatalf("%s: current_etag %v, want %q", what, d["current_etag"], current)
	}
}

// TestConditionalWrites runs every case of If-Match and If-None-Match on the writes that
// take them (docs/api.md "Conditional writes"), on both blob stores: a condition that does
// not hold is 412 and leaves the file as it was; one that holds writes.
func TestConditionalWrites(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "cora", "user")
		_, other := env.User(t, "otto", "user")
		const key = "files/report.csv"
		put := func(body string, hdr ...string) answer {
			return send(t, env, "PUT", "/api/v1/files/"+key, u.Token, "text/csv", strings.NewReader(body), hdr...)
		}

		// If-None-Match: * creates, and only once.
		if a := put("v1", "If-None-Match", "*"); a.status != 201 {
			t.Fatalf("create with If-None-Match: *: %d %s", a.status, a.raw)
		}
		e1 := etagOf(t, env, u.Token, key)
		refused(t, "If-None-Match: * on a file that exists", put("v2", "If-None-Match", "*"), key, "If-None-Match", e1)
		if got := bytesOf(t, env, u.Token, key); got != "v1" {
			t.Fatalf("after a refused create the file holds %q", got)
		}
		// Keys are per owner: another user's file of the same key does not exist for them.
		if a := send(t, env, "PUT", "/api/v1/files/"+key, other.Token, "text/csv", strings.NewReader("o1"), "If-None-Match", "*"); a.status != 201 {
			t.Fatalf("another user's create of the same key: %d %s", a.status, a.raw)
		}

		// If-Match: a wrong ETag is refused, the right one (in either form) writes.
		refused(t, "a wrong If-Match", put("v2", "If-Match", `"0000"`), key, "If-Match", e1)
		refused(t, "another user's ETag", put("v2", "If-Match", etagOf(t, env, other.Token, key)), key, "If-Match", e1)
		if got := bytesOf(t, env, u.Token, key); got != "v1" {
			t.Fatalf("after a refused If-Match the file holds %q", got)
		}
		a := put("v2", "If-Match", e1)
		if a.status != 201 {
			t.Fatalf("the right If-Match: %d %s", a.status, a.raw)
		}
		e2 := etagOf(t, env, u.Token, key)
		// The write's answer names the new version's ETag, so a client can make its next
		// write conditional without reading the file again.
		if a.header.Get("ETag") != e2 || e2 == e1 {
			t.Fatalf("PUT answered ETag %q; HEAD gives %q (before: %q)", a.header.Get("ETag"), e2, e1)
		}
		refused(t, "the ETag of the version replaced", put("v3", "If-Match", e1), key, "If-Match", e2)
		if a := put("v3", "If-Match", `"0000", W/`+e2+`, `+e2); a.status != 201 {
			t.Fatalf("a list holding the right ETag: %d %s", a.status, a.raw)
		}
		e3 := etagOf(t, env, u.Token, key)
		refused(t, "a weak tag", put("v4", "If-Match", "W/"+e3), key, "If-Match", e3)
		if a := put("v4", "If-Match", `"sha256:`+strings.Trim(e3, `"`)+`"`); a.status != 201 {
			t.Fatalf("If-Match with the X-Checksum: %d %s", a.status, a.raw)
		}
		e4 := etagOf(t, env, u.Token, key)
		if a := put("v5", "If-Match", "*"); a.status != 201 {
			t.Fatalf("If-Match: * on a file that exists: %d %s", a.status, a.raw)
		}
		e5 := etagOf(t, env, u.Token, key)
		refused(t, "If-None-Match naming the current ETag", put("v6", "If-None-Match", e5), key, "If-None-Match", e5)
		if a := put("v6", "If-None-Match", e4); a.status != 201 {
			t.Fatalf("If-None-Match naming an old ETag: %d %s", a.status, a.raw)
		}
		if a := put("v7", "If-Match", "abc"); a.status != 400 || a.errCode() != "invalid_request" || !strings.Contains(a.errMessage(), "If-Match") {
			t.Fatalf("an unquoted If-Match: %d %s", a.status, a.raw)
		}
		if got := bytesOf(t, env, u.Token, key); got != "v6" {
			t.Fatalf("the file holds %q, want v6", got)
		}

		// If-Match on a key with no file is refused and creates nothing.
		refused(t, "If-Match: * on no file", send(t, env, "PUT", "/api/v1/files/files/none.csv", u.Token, "", strings.NewReader("x"), "If-Match", "*"),
			"files/none.csv", "If-Match", "")
		refused(t, "If-Match on no file", send(t, env, "PUT", "/api/v1/files/files/none.csv", u.Token, "", strings.NewReader("x"), "If-Match", e1),
			"files/none.csv", "If-Match", "")
		if got := bytesOf(t, env, u.Token, "files/none.csv"); got != "<404>" {
			t.Fatalf("a refused If-Match made a file: %q", got)
		}

		// POST /api/v1/files with a key takes them too.
		body, ct := multipartBody(t, [][2]string{{"key", key}, {"file", ""}}, "r.csv", []byte("posted"))
		refused(t, "POST with If-None-Match: *", send(t, env, "POST", "/api/v1/files", u.Token, ct, body, "If-None-Match", "*"),
			key, "If-None-Match", etagOf(t, env, u.Token, key))

		// DELETE: a wrong If-Match leaves the file; the right one deletes it.
		e6 := etagOf(t, env, u.Token, key)
		refused(t, "DELETE with a wrong If-Match", send(t, env, "DELETE", "/api/v1/files/"+key, u.Token, "", nil, "If-Match", e1), key, "If-Match", e6)
		if got := bytesOf(t, env, u.Token, key); got != "v6" {
			t.Fatalf("after a refused DELETE the file holds %q", got)
		}
		refused(t, "DELETE with If-None-Match: *", send(t, env, "DELETE", "/api/v1/files/"+key, u.Token, "", nil, "If-None-Match", "*"), key, "If-None-Match", e6)
		if a := send(t, env, "DELETE", "/api/v1/files/"+key, u.Token, "", nil, "If-Match", e6); a.status != 204 {
			t.Fatalf("DELETE with the right If-Match: %d %s", a.status, a.raw)
		}
		if got := bytesOf(t, env, u.Token, key); got != "<404>" {
			t.Fatalf("after DELETE the file holds %q", got)
		}
		refused(t, "DELETE with If-Match of a file gone", send(t, env, "DELETE", "/api/v1/files/"+key, u.Token, "", nil, "If-Match", e6), key, "If-Match", "")
		if got := bytesOf(t, env, other.Token, key); got != "o1" {
			t.Fatalf("the other user's file of the same key holds %q", got)
		}

		// A resumable upload refuses a condition rather than ignore it.
		a = send(t, env, "POST", "/api/v1/uploads/", u.Token, "", nil, "Tus-Resumable", "1.0.0", "Upload-Length", "2",
			"Upload-Metadata", "key ZmlsZXMvcmVwb3J0LmNzdg==", "If-None-Match", "*")
		if a.status != 400 || a.errCode() != "invalid_request" || !strings.Contains(a.errMessage(), "If-None-Match") {
			t.Fatalf("a tus creation with If-None-Match: %d %s", a.status, a.raw)
		}
	})
}

// TestConditionalPublish publishes a sandbox's file under a key with conditions: the
// same rules as a PUT.
func TestConditionalPublish(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, u := env.User(t, "pia", "user")
	box := newSandbox(t, env, u.Token, `{}`)
	if a := send(t, env, "PUT", "/api/v1/sandboxes/"+box+"/fs/out.txt", u.Token, "", strings.NewReader("from the box")); a.status != 201 {
		t.Fatalf("sandbox write: %d %s", a.status, a.raw)
	}
	pub := func(hdr ...string) answer {
		return send(t, env, "POST", "/api/v1/sandboxes/"+box+"/publish", u.Token, "application/json",
			strings.NewReader(`{"source": "out.txt", "file_key": "files/out.txt"}`), hdr...)
	}
	refused(t, "publish with If-Match on no file", pub("If-Match", "*"), "files/out.txt", "If-Match", "")
	first := pub("If-None-Match", "*")
	if first.status != 200 {
		t.Fatalf("publish with If-None-Match: *: %d %s", first.status, first.raw)
	}
	e1 := etagOf(t, env, u.Token, "files/out.txt")
	if first.header.Get("ETag") != e1 {
		t.Fatalf("publish answered ETag %q; HEAD gives %q", first.header.Get("ETag"), e1)
	}
	refused(t, "publish again with If-None-Match: *", pub("If-None-Match", "*"), "files/out.txt", "If-None-Match", e1)
	if a := send(t, env, "PUT", "/api/v1/files/files/out.txt", u.Token, "", strings.NewReader("changed"), "If-Match", e1); a.status != 201 {
		t.Fatalf("PUT over the published file: %d %s", a.status, a.raw)
	}
	e2 := etagOf(t, env, u.Token, "files/out.txt")
	refused(t, "publish with a stale If-Match", pub("If-Match", e1), "files/out.txt", "If-Match", e2)
	if got := bytesOf(t, env, u.Token, "files/out.txt"); got != "changed" {
		t.Fatalf("after a refused publish the file holds %q", got)
	}
	if a := pub("If-Match", e2); a.status != 200 {
		t.Fatalf("publish with the right If-Match: %d %s", a.status, a.raw)
	}
	if got := bytesOf(t, env, u.Token, "files/out.txt"); got != "from the box" {
		t.Fatalf("after the publish the file holds %q", got)
	}
}

// request is one raw request, safe to make from any goroutine: its status and body.
func request(node *apptest.Env, method, path, token string, body io.Reader, hdr ...string) (int, string, error) {
	req, err := http.NewRequest(method, node.URL+path, body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// race sends n writes at once, write i to nodes[i%len(nodes)], and checks that exactly
// one got a status in won and every other one 412. It returns the index of the winner.
func race(t *testing.T, nodes []*apptest.Env, n int, won []int, write func(i int, node *apptest.Env) (int, string, error)) int {
	t.Helper()
	status := make([]int, n)
	bodies := make([]string, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			status[i], bodies[i], errs[i] = write(i, nodes[i%len(nodes)])
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i := range n {
		switch {
		case errs[i] != nil:
			t.Fatalf("write %d: %v", i, errs[i])
		case status[i] == 412 && strings.Contains(bodies[i], `"precondition_failed"`):
		case contains(won, status[i]) && winner < 0:
			winner = i
		default:
			t.Fatalf("write %d: %d %s (winner so far %d); want one of %v once and 412 for the rest", i, status[i], bodies[i], winner, won)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d writes won: %v", n, status)
	}
	return winner
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// testWriteRaces races writers on nodes, which share one database and blob store: PUTs
// with the same If-Match, creates with If-None-Match: *, and PUTs and DELETEs with the
// same If-Match together. Each time exactly one wins, and the file is the winner's.
func testWriteRaces(t *testing.T, nodes []*apptest.Env, token string) {
	const n = 12
	const key = "files/race.txt"
	path := "/api/v1/files/" + key
	first := nodes[0]
	if s, b, err := request(first, "PUT", path, token, strings.NewReader("start")); err != nil || s != 201 {
		t.Fatalf("first PUT: %d %s %v", s, b, err)
	}
	for round := range 3 {
		etag := etagOf(t, first, token, key)
		w := race(t, nodes, n, []int{201}, func(i int, node *apptest.Env) (int, string, error) {
			return request(node, "PUT", path, token, strings.NewReader(fmt.Sprintf("round %d writer %d", round, i)), "If-Match", etag)
		})
		for _, node := range nodes {
			if got := bytesOf(t, node, token, key); got != fmt.Sprintf("round %d writer %d", round, w) {
				t.Fatalf("round %d: the file holds %q on %s, but writer %d won", round, got, node.URL, w)
			}
		}
	}

	w := race(t, nodes, n, []int{201}, func(i int, node *apptest.Env) (int, string, error) {
		return request(node, "PUT", "/api/v1/files/files/new.txt", token, strings.NewReader(fmt.Sprintf("creator %d", i)), "If-None-Match", "*")
	})
	if got := bytesOf(t, first, token, "files/new.txt"); got != fmt.Sprintf("creator %d", w) {
		t.Fatalf("the created file holds %q, but creator %d won", got, w)
	}

	// Writes and deletes naming one version: one of them, whichever, wins.
	etag := etagOf(t, first, token, key)
	w = race(t, nodes, n, []int{201, 204}, func(i int, node *apptest.Env) (int, string, error) {
		if i%2 == 0 {
			return request(node, "DELETE", path, token, nil, "If-Match", etag)
		}
		return request(node, "PUT", path, token, strings.NewReader(fmt.Sprintf("last writer %d", i)), "If-Match", etag)
	})
	want := fmt.Sprintf("last writer %d", w)
	if w%2 == 0 {
		want = "<404>"
	}
	if got := bytesOf(t, first, token, key); got != want {
		t.Fatalf("after writes and deletes the file holds %q, want %q (winner %d)", got, want, w)
	}
}

// TestConditionalWriteRace: on one server (SQLite and the fs store) writers that name
// the same version never both win.
func TestConditionalWriteRace(t *testing.T) {
	env := apptest.New(t, apptest.BlobBackends[0])
	_, u := env.User(t, "rita", "user")
	testWriteRaces(t, []*apptest.Env{env}, u.Token)
}

// TestConditionalWriteRaceAcrossNodes: two API nodes over one PostgreSQL and one NATS
// (the files bucket), writers spread over both: the database transaction that commits a
// version checks the condition, so exactly one wins across nodes too.
func TestConditionalWriteRaceAcrossNodes(t *testing.T) {
	nats, db := testutil.NATSServer(t), testutil.PostgresURL(t)
	node := func() *apptest.Env {
		cfg := apptest.Config(t, apptest.Backend{Blob: "nats"})
		cfg.DatabaseURL, cfg.NATSURL = db, nats
		cfg.RunnerConcurrency = 1
		cfg.WorkerID = "w-" + filepath.Base(filepath.Dir(cfg.DataDir))
		return apptest.Start(t, cfg)
	}
	a, b := node(), node()
	_, u := a.User(t, "nina", "user")
	testWriteRaces(t, []*apptest.Env{a, b}, u.Token)
}
