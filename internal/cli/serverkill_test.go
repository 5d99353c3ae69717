package cli

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// killableServer is a real `skrip serve` process on a data dir, started again on the
// same address and dir after it is killed.
type killableServer struct {
	bin, addr, data, token string
	env                    []string
	cmd                    *exec.Cmd
}

func (s *killableServer) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(s.bin, "serve", "--addr", s.addr, "--data-dir", s.data, "--runner-concurrency", "1")
	cmd.Env = append(append(os.Environ(), "SKRIP_BOOTSTRAP_ADMIN_TOKEN="+s.token), s.env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd = cmd
	testutil.WaitHealthy(t, "http://"+s.addr)
}

func (s *killableServer) kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
}

// tusRequest sends one tus request to the server and returns the answer, its body read.
func (s *killableServer) tusRequest(t *testing.T, method, url string, body io.Reader, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Tus-Resumable", "1.0.0")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestResumablePatchSurvivesServerKill: a tus PATCH is under way when the server is
// killed (SIGKILL) after 43 MiB of it reached the server. Started again, the server's
// HEAD gives an offset past the parts it had stored (all but the 8 MiB being written, not
// 0, as when a request's bytes were one part), and
// a PATCH from there finishes the file, whose checksum is the source's. On fs and on
// NATS (the embedded server).
func TestResumablePatchSurvivesServerKill(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	for _, blobEnv := range [][]string{nil, {"SKRIP_BLOB=nats"}} {
		name := "fs"
		if blobEnv != nil {
			name = "nats"
		}
		t.Run(name, func(t *testing.T) {
			s := &killableServer{bin: bin, addr: testutil.FreeAddr(t), data: t.TempDir(), token: "skr_kill-test-admin-token", env: blobEnv}
			s.start(t)
			t.Cleanup(s.kill)
			base := "http://" + s.addr

			const size = 64 << 20
			data := make([]byte, size)
			rand.NewChaCha8([32]byte{7}).Read(data)
			h := sha256.Sum256(data)
			sum := "sha256:" + hex.EncodeToString(h[:])

			created := s.tusRequest(t, "POST", base+"/api/v1/uploads/", nil, "Upload-Length", strconv.Itoa(size),
				"Upload-Metadata", "key "+base64.StdEncoding.EncodeToString([]byte("files/killed.bin")))
			loc := created.Header.Get("Location")
			if created.StatusCode != 201 || loc == "" {
				t.Fatalf("create: %d", created.StatusCode)
			}
			if !strings.HasPrefix(loc, "http") {
				loc = base + loc
			}

			// 43 MiB go out, then the body waits; the server is killed meanwhile.
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				req, _ := http.NewRequest("PATCH", loc, pr)
				req.Header.Set("Authorization", "Bearer "+s.token)
				req.Header.Set("Tus-Resumable", "1.0.0")
				req.Header.Set("Upload-Offset", "0")
				req.Header.Set("Content-Type", "application/offset+octet-stream")
				req.ContentLength = size
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
					err = fmt.Errorf("the PATCH was answered %d", resp.StatusCode)
				}
				done <- err
			}()
			const sent = 43 << 20
			for off := 0; off < sent; off += 1 << 20 {
				if _, err := pw.Write(data[off : off+1<<20]); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2 * time.Second) // the server stores what reached it
			s.kill()
			pw.CloseWithError(io.ErrUnexpectedEOF)
			<-done

			s.start(t)
			head := s.tusRequest(t, "HEAD", loc, nil)
			offset, _ := strconv.ParseInt(head.Header.Get("Upload-Offset"), 10, 64)
			t.Logf("%s: %d MiB sent before the kill, the upload resumes at %d MiB", name, sent>>20, offset>>20)
			if head.StatusCode != 200 || offset < sent-8<<20 || offset > sent {
				t.Fatalf("HEAD after the restart: %d, offset %d; want the stored parts kept (all but the last 8 MiB part of the %d MiB sent)", head.StatusCode, offset, sent>>20)
			}
			rest := s.tusRequest(t, "PATCH", loc, strings.NewReader(string(data[offset:])),
				"Upload-Offset", strconv.FormatInt(offset, 10), "Content-Type", "application/offset+octet-stream")
			if rest.StatusCode != 204 || rest.Header.Get("Upload-Offset") != strconv.Itoa(size) {
				t.Fatalf("resume: %d, offset %s", rest.StatusCode, rest.Header.Get("Upload-Offset"))
			}
			c, _ := client.New(base, s.token)
			info, err := c.FileInfoOf(context.Background(), "files/killed.bin")
			if err != nil || info.Checksum != sum || info.SizeBytes != size {
				t.Fatalf("the file: %+v, %v; want %s", info, err, sum)
			}
			if got := downloadSum(t, c, "files/killed.bin"); got != sum {
				t.Fatalf("downloaded %s, want %s", got, sum)
			}
		})
	}
}
