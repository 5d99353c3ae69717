package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/blob"
)

// replaceBytes puts other bytes of the same size in place of content, stored under
// blobKey: on fs by writing the object file on disk in place, on NATS by putting other
// bytes under the key (the object store's own digest then matches them: only the
// checksum skrip recorded does not).
func replaceBytes(t *testing.T, env *apptest.Env, blobKey string, content, other []byte) {
	t.Helper()
	if env.Config.Blob == "fs" {
		p := objectFile(t, env, content)
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, other, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := env.App.Blobs.Put(context.Background(), blobKey, bytes.NewReader(other), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// getWhole GETs url (the API's with token, or a share link's without) and reads the
// whole body.
func getWhole(t *testing.T, url, token string, hdr ...string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// TestFilesChecksumMismatch: a stored file whose bytes were replaced with others of the
// same size is never served whole with a 200. A small file (read whole before any
// header) is a JSON 500; a large one streams, and its last bytes are held back and the
// connection cut, on the files API and on a share link. The mismatch is logged and
// counted (reason "checksum"). A range that does not run from the first byte to the last
// is not checked, as docs/api.md says.
func TestFilesChecksumMismatch(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		_, u := env.User(t, "u", "user")
		small := bytes.Repeat([]byte("small "), 100)
		large := make([]byte, 3<<20)
		for i := range large {
			large[i] = byte(i * 13)
		}
		for key, data := range map[string][]byte{"files/small.txt": small, "files/large.bin": large} {
			if a := send(t, env, "PUT", "/api/v1/files/"+key, u.Token, "", bytes.NewReader(data)); a.status != 201 {
				t.Fatalf("upload %s: %d %s", key, a.status, a.raw)
			}
		}
		link := makeLink(t, env, u.Token, "files/large.bin", `{"ttl": "1h"}`)
		linkURL, _ := link.body["url"].(string)
		if link.status != 201 || linkURL == "" {
			t.Fatalf("link: %d %s", link.status, link.raw)
		}
		// Before: whole and good.
		if _, got, err := getWhole(t, env.URL+"/api/v1/files/files/large.bin", u.Token); err != nil || !bytes.Equal(got, large) {
			t.Fatalf("good read: %d bytes, %v", len(got), err)
		}

		replaceBytes(t, env, blobKeyOf(t, env, u.ID, "files/small.txt"), small, bytes.ToUpper(small))
		otherLarge := bytes.Clone(large)
		otherLarge[len(otherLarge)-1] ^= 0xff // one byte, at the very end
		replaceBytes(t, env, blobKeyOf(t, env, u.ID, "files/large.bin"), large, otherLarge)

		checkInternal(t, "GET of a small file with other bytes", send(t, env, "GET", "/api/v1/files/files/small.txt", u.Token, "", nil))
		for name, url := range map[string]string{"files API": env.URL + "/api/v1/files/files/large.bin", "share link": linkURL} {
			resp, got, err := getWhole(t, url, u.Token)
			if resp.StatusCode != 200 || !errors.Is(err, io.ErrUnexpectedEOF) || int64(len(got)) >= resp.ContentLength {
				t.Fatalf("%s: %d, read %d of %d bytes, then %v; want the transfer cut short", name, resp.StatusCode, len(got), resp.ContentLength, err)
			}
		}
		// Ranges are not checked: a range of the middle reads.
		resp, got, err := getWhole(t, env.URL+"/api/v1/files/files/large.bin", u.Token, "Range", "bytes=100-199")
		if resp.StatusCode != 206 || err != nil || !bytes.Equal(got, otherLarge[100:200]) {
			t.Fatalf("range: %d, %d bytes, %v", resp.StatusCode, len(got), err)
		}
		if n := env.Metric(t, `skrip_blob_read_errors_total{reason="checksum"}`); n != 3 {
			t.Fatalf("mismatches counted %v times, want 3", n)
		}
	})
}

// artifactTool writes one output file of 1 MiB.
const artifactTool = `
import os
def run_tool(input_dir, output_dir):
    with open(os.path.join(output_dir, "out.bin"), "wb") as f:
        f.write(bytes((i * 13) % 256 for i in range(1 << 20)))
    return "ok"
`

// TestArtifactChecksumMismatch: a run artifact whose stored bytes were replaced with
// others of the same size streams with a 200, and the transfer is cut before its end.
func TestArtifactChecksumMismatch(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	publish(t, env, "art", artifactTool)
	_, u := env.User(t, "u", "user")
	a := runUpload(t, env, u.Token, "art", nil, nil, "", "")
	if a.status != 201 || a.body["status"] != "succeeded" {
		t.Fatalf("run: %d %s", a.status, a.raw)
	}
	id, _ := a.body["run_id"].(string)
	url := env.URL + "/api/v1/runs/" + id + "/artifacts/out.bin"
	_, good, err := getWhole(t, url, u.Token)
	if err != nil || len(good) != 1<<20 {
		t.Fatalf("good artifact: %d bytes, %v: %s", len(good), err, good)
	}
	other := bytes.Clone(good)
	other[len(other)/2] ^= 0xff
	replaceBytes(t, env, "", good, other)
	resp, got, err := getWhole(t, url, u.Token)
	if resp.StatusCode != 200 || !errors.Is(err, io.ErrUnexpectedEOF) || len(got) >= 1<<20 {
		t.Fatalf("artifact with other bytes: %d, read %d bytes, then %v; want the transfer cut short", resp.StatusCode, len(got), err)
	}
	if !strings.HasPrefix(resp.Header.Get("X-Checksum"), "sha256:") {
		t.Fatalf("X-Checksum %q", resp.Header.Get("X-Checksum"))
	}
}
