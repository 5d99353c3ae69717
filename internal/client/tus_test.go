package client_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"testing"
	"time"

	tus "github.com/eventials/go-tus"
	"github.com/eventials/go-tus/memorystore"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// TestThirdPartyTusClient uploads with go-tus, a tus client skrip does not write, in
// chunks, with the connection dropped for real in the middle of a chunk; a new client
// with go-tus's own resume store goes on from the server's offset. The file is then
// downloaded with GET /api/v1/files/{key}: the same bytes, and the checksum of them.
func TestThirdPartyTusClient(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "tusser", "user")
		data := make([]byte, 5<<20+123)
		rand.Read(data)
		proxy := testutil.NewProxy(t, env.URL)
		store, err := memorystore.NewMemoryStore()
		if err != nil {
			t.Fatal(err)
		}
		newClient := func() *tus.Client {
			cfg := tus.DefaultConfig()
			cfg.ChunkSize = 1 << 20
			cfg.Resume, cfg.Store = true, store
			cfg.Header.Set("Authorization", "Bearer "+u.Token)
			c, err := tus.NewClient(proxy.URL+"/api/v1/uploads/", cfg)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		upload := tus.NewUpload(bytes.NewReader(data), int64(len(data)),
			tus.Metadata{"filename": "report.bin", "key": "files/tus/report.bin", "filetype": "application/x-report", "ttl": "1h"},
			"report.bin-fingerprint")

		// Two chunks go, and the third is cut off halfway, with no way back.
		c := newClient()
		up, err := c.CreateUpload(upload)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		for range 2 {
			if err := up.UploadChunck(); err != nil {
				t.Fatalf("chunk: %v", err)
			}
		}
		proxy.CutAt(proxy.Sent()+512<<10, true)
		if err := up.UploadChunck(); err == nil {
			t.Fatal("a chunk whose connection was cut succeeded")
		}
		proxy.Allow()
		// Until the dropped request has stored what reached the server, HEAD answers the
		// offset before it, and a PATCH from there is refused (409), which go-tus does
		// not get past: wait for it, as a user running the upload again later would.
		waitOffset(t, env.Client(t, u.Token), up.Url(), 2<<20+1)
		if resp := get(t, env.URL+"/api/v1/files/files/tus/report.bin", u.Token); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("the unfinished upload is a file already: %d", resp.StatusCode)
		}

		// A new client resumes from what the server has: the two chunks, and what
		// reached it of the third.
		c = newClient()
		up, err = c.ResumeUpload(upload)
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if off := up.Offset(); off < 2<<20 || off > 2<<20+512<<10 {
			t.Errorf("resumed at byte %d; two chunks and up to half a third went", off)
		} else {
			t.Logf("resumed at byte %d", off)
		}
		if err := up.Upload(); err != nil {
			t.Fatalf("the rest: %v", err)
		}

		resp := get(t, env.URL+"/api/v1/files/files/tus/report.bin", u.Token)
		got, _ := io.ReadAll(resp.Body)
		sum := sha256.Sum256(data)
		want := "sha256:" + hex.EncodeToString(sum[:])
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, data) {
			t.Fatalf("download: %d, %d bytes, equal %v", resp.StatusCode, len(got), bytes.Equal(got, data))
		}
		_, disp, _ := mime.ParseMediaType(resp.Header.Get("Content-Disposition"))
		if h := resp.Header; h.Get("X-Checksum") != want || h.Get("Content-Type") != "application/x-report" ||
			disp["filename"] != "report.bin" || h.Get("X-Expires-At") == "" {
			t.Errorf("download headers: %v; want the checksum %s", h, want)
		}
	})
}

// waitOffset waits until the server has at least n bytes of the upload at url.
func waitOffset(t *testing.T, c *client.Client, url string, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		off, _, err := c.UploadOffset(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		if off >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upload stays at byte %d, short of %d", off, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get sends GET url with token and returns the answer, whose body is read by the end of
// the test.
func get(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
