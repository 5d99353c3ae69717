package clustertest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// F7: an API node killed in the middle of a resumable upload's request. The bytes the
// upload had before that request are in the shared blob store and its state in
// PostgreSQL, so the client asks the other node for the offset and finishes there, and
// the file's checksum is the local one's.
func testKillAPIMidUpload(t *testing.T, c *skripCluster) {
	const size = 48 << 20
	path, want := randomFile(t, t.TempDir(), "big.bin", size)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tus := func(node, method, url string, body io.Reader, n int64, hdr ...string) (*http.Response, error) {
		if !strings.HasPrefix(url, "http") {
			url = c.api[node].base + url
		}
		req, _ := http.NewRequest(method, url, body)
		req.ContentLength = n
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Tus-Resumable", "1.0.0")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	resp, err := tus("api1", "POST", "/api/v1/uploads/", nil, 0, "Upload-Length", strconv.Itoa(size), "Upload-Metadata", "key ZmlsZXMvZjcuYmlu")
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("create on api1: %v %v", resp, err)
	}
	id := resp.Header.Get("Location")[strings.LastIndex(resp.Header.Get("Location"), "/")+1:]
	loc := "/api/v1/uploads/" + id
	patch := func(node string, off, n int64, body io.Reader) (*http.Response, error) {
		return tus(node, "PATCH", loc, body, n, "Upload-Offset", strconv.FormatInt(off, 10), "Content-Type", "application/offset+octet-stream")
	}
	if resp, err := patch("api1", 0, 16<<20, io.NewSectionReader(f, 0, 16<<20)); err != nil || resp.StatusCode != 204 {
		t.Fatalf("first PATCH on api1: %v %v", resp, err)
	}
	// The rest, slowly, to api1, which is killed halfway through it.
	cut := make(chan error, 1)
	go func() {
		_, err := patch("api1", 16<<20, size-16<<20, &slowReader{r: io.NewSectionReader(f, 16<<20, size-16<<20)})
		cut <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := c.api["api1"].proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-cut; err == nil {
		t.Fatal("the PATCH to the killed node succeeded")
	}
	resp, err = tus("api2", "HEAD", loc, nil, 0)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD on api2: %v %v", resp, err)
	}
	off, _ := strconv.ParseInt(resp.Header.Get("Upload-Offset"), 10, 64)
	if off < 16<<20 || off >= size {
		t.Fatalf("api2 says the upload is at %d", off)
	}
	resp, err = patch("api2", off, size-off, io.NewSectionReader(f, off, size-off))
	if err != nil || resp.StatusCode != 204 || resp.Header.Get("X-Checksum") != "sha256:"+want {
		t.Fatalf("the rest on api2: %v %v", resp, err)
	}
	// The file reads back whole from either node.
	restart(t, c.api["api1"])
	req, _ := http.NewRequest("GET", c.api["api1"].base+"/api/v1/files/files/f7.bin", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	got, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	h := sha256.New()
	if n, err := io.Copy(h, got.Body); err != nil || n != size || hex.EncodeToString(h.Sum(nil)) != want {
		t.Fatalf("GET on api1: %d bytes, %v", n, err)
	}
}

// slowReader hands out 256 KiB every 20 ms: about 12 MB/s.
type slowReader struct{ r io.Reader }

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	return s.r.Read(p[:min(len(p), 256<<10)])
}
