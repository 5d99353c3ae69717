package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// runVia executes the CLI in-process against server with SKRIP_CACHE_DIR=cache, until it
// ends or ctx is cancelled.
func runVia(ctx context.Context, server, token, cache string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	vars := map[string]string{"SKRIP_SERVER": server, "SKRIP_TOKEN": token, "SKRIP_CACHE_DIR": cache}
	code := Main(ctx, args, strings.NewReader(""), &out, &errOut, func(k string) string { return vars[k] })
	return code, out.String(), errOut.String()
}

// writeRandomFile writes size pseudo-random bytes (from seed) to a new file in dir and
// returns its path and "sha256:<hex>".
func writeRandomFile(t *testing.T, dir, name string, size int64, seed byte) (string, string) {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(rand.NewChaCha8([32]byte{seed}), size)); err != nil {
		t.Fatal(err)
	}
	return p, "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// stateFiles reads the upload state files in cache.
func stateFiles(t *testing.T, cache string) []uploadState {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(cache, "uploads", "*.json"))
	var out []uploadState
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("state file %s: %v, mode %v; want 0600", p, err, fi.Mode())
		}
		var s uploadState
		b, _ := os.ReadFile(p)
		if err := json.Unmarshal(b, &s); err != nil || s.UploadURL == "" {
			t.Errorf("state file %s: %v, %s", p, err, b)
		}
		out = append(out, s)
	}
	return out
}

// downloadSum downloads key and returns the sha256 of its bytes; Download verifies them
// against the server's X-Checksum on the way.
func downloadSum(t *testing.T, c *client.Client, key string) string {
	t.Helper()
	h := sha256.New()
	if _, err := c.Download(context.Background(), key, func(client.FileInfo) (io.Writer, error) { return h, nil }); err != nil {
		t.Fatalf("download %s: %v", key, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// uploadedInfo reads the FileInfo `files upload --json` printed.
func uploadedInfo(t *testing.T, out string) client.FileInfo {
	t.Helper()
	var fi client.FileInfo
	if err := json.Unmarshal([]byte(out), &fi); err != nil {
		t.Fatalf("upload --json printed %q: %v", out, err)
	}
	return fi
}

// TestResumableUploadCLI: a 200 MiB upload whose connection is dropped for real at 80
// MiB, with no way back within the run, fails saying to run the command again and keeps
// a state file; the same command again sends only the rest, and the file's checksum is
// the local sha256. A drop that the run gets past by itself sends little twice.
func TestResumableUploadCLI(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.FilesMaxFileBytes = 300 << 20
		env := apptest.Start(t, cfg)
		c, u := env.User(t, "resumer", "user")
		dir, cache := t.TempDir(), t.TempDir()
		const size = 200 << 20
		src, sum := writeRandomFile(t, dir, "big.bin", size, 1)
		proxy := testutil.NewProxy(t, env.URL)
		ctx := context.Background()

		proxy.CutAt(80<<20, true)
		args := []string{"files", "upload", src, "--key", "files/big.bin", "--ttl", "1d", "--json"}
		code, out, errOut := runVia(ctx, proxy.URL, u.Token, cache, args...)
		if code != exitUnavailable || out != "" || !strings.Contains(errOut, "run the same command again to resume") {
			t.Fatalf("the interrupted upload: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		states := stateFiles(t, cache)
		if len(states) != 1 || states[0].Size != size || states[0].Key != "files/big.bin" {
			t.Fatalf("state after the interruption: %+v", states)
		}
		offset, length, err := c.UploadOffset(ctx, states[0].UploadURL)
		if err != nil || length != size || offset <= 0 || offset > 80<<20 {
			t.Fatalf("the server's offset after the drop: %d of %d, %v", offset, length, err)
		}
		if _, err := c.FileInfoOf(ctx, "files/big.bin"); !client.IsCode(err, "not_found") {
			t.Fatalf("the unfinished upload is a file already: %v", err)
		}

		proxy.Allow()
		before := proxy.Sent()
		code, out, errOut = runVia(ctx, proxy.URL, u.Token, cache, args...)
		if code != 0 || !strings.Contains(errOut, "Resuming the upload of "+src) {
			t.Fatalf("the run again: exit %d, stderr %q", code, errOut)
		}
		resent := proxy.Sent() - before
		t.Logf("the server had %d bytes; the second run sent %d bytes for the %d left", offset, resent, size-offset)
		if resent < size-offset || resent > size-offset+64<<10 {
			t.Errorf("the second run sent %d bytes; the rest was %d", resent, size-offset)
		}
		fi := uploadedInfo(t, out)
		if fi.FileKey != "files/big.bin" || fi.SizeBytes != size || fi.Checksum != sum || fi.Name != "big.bin" || fi.ExpiresAt == nil {
			t.Fatalf("the resumed upload: %+v; want the checksum %s", fi, sum)
		}
		if got := downloadSum(t, c, "files/big.bin"); got != sum {
			t.Fatalf("downloaded %s, uploaded %s", got, sum)
		}
		if left := stateFiles(t, cache); len(left) != 0 {
			t.Errorf("state files after the upload completed: %+v", left)
		}

		// A drop the run gets past by itself: one command, little sent twice.
		before = proxy.Sent()
		proxy.CutAt(before+30<<20, false)
		code, out, errOut = runVia(ctx, proxy.URL, u.Token, cache, "files", "upload", src, "--key", "files/again.bin", "--json")
		if code != 0 {
			t.Fatalf("an upload with one drop: exit %d, %q", code, errOut)
		}
		if fi := uploadedInfo(t, out); fi.Checksum != sum || fi.SizeBytes != size {
			t.Fatalf("an upload with one drop: %+v", fi)
		}
		if sent := proxy.Sent() - before; sent > size+4<<20 {
			t.Errorf("an upload with one drop sent %d bytes for %d", sent, size)
		}
		if left := stateFiles(t, cache); len(left) != 0 {
			t.Errorf("state files after the upload completed: %+v", left)
		}
	})
}

// interrupt runs `files upload` with args through proxy until the proxy drops it at cut
// bytes (with no way back within the run), and returns the state file it left.
func interrupt(t *testing.T, proxy *testutil.Proxy, token, cache string, cut int64, args ...string) uploadState {
	t.Helper()
	proxy.CutAt(proxy.Sent()+cut, true)
	defer proxy.Allow()
	code, _, errOut := runVia(context.Background(), proxy.URL, token, cache, append([]string{"files", "upload"}, args...)...)
	if code == 0 || !strings.Contains(errOut, "run the same command again") {
		t.Fatalf("the interrupted upload: exit %d, %q", code, errOut)
	}
	states := stateFiles(t, cache)
	if len(states) != 1 {
		t.Fatalf("state files after the interruption: %+v", states)
	}
	return states[0]
}

// TestResumableUploadStartsOver: the run after an interrupted upload starts over when the
// file changed, or when the server no longer has the upload (deleted, or expired); and
// --no-resume, or a file under the threshold, keep no state and send everything again.
func TestResumableUploadStartsOver(t *testing.T) {
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		c, u := env.User(t, "restarter", "user")
		dir, cache := t.TempDir(), t.TempDir()
		const size = 16 << 20
		proxy := testutil.NewProxy(t, env.URL)
		ctx := context.Background()
		// upload runs the command to its end and checks what it stored and how many
		// bytes it sent.
		upload := func(t *testing.T, src, sum string, wantSent int64, wantStderr string, args ...string) {
			t.Helper()
			before := proxy.Sent()
			code, out, errOut := runVia(ctx, proxy.URL, u.Token, cache, append([]string{"files", "upload", src, "--json"}, args...)...)
			if code != 0 || !strings.Contains(errOut, wantStderr) {
				t.Fatalf("upload %v: exit %d, stderr %q; want %q", args, code, errOut, wantStderr)
			}
			if fi := uploadedInfo(t, out); fi.Checksum != sum || fi.SizeBytes != size {
				t.Fatalf("upload %v: %+v; want %s", args, fi, sum)
			}
			if sent := proxy.Sent() - before; sent < wantSent || sent > wantSent+64<<10 {
				t.Errorf("upload %v sent %d bytes; want about %d", args, sent, wantSent)
			}
			if left := stateFiles(t, cache); len(left) != 0 {
				t.Errorf("state files after the upload completed: %+v", left)
			}
		}

		t.Run("changed file", func(t *testing.T) {
			src, _ := writeRandomFile(t, dir, "changing.bin", size, 2)
			st := interrupt(t, proxy, u.Token, cache, 6<<20, src, "--key", "files/changing.bin")
			src, sum := writeRandomFile(t, dir, "changing.bin", size, 3) // same size, new bytes and mtime
			os.Chtimes(src, time.Now().Add(time.Minute), time.Now().Add(time.Minute))
			upload(t, src, sum, size, "changed since its interrupted upload; starting over", "--key", "files/changing.bin")
			if _, _, err := c.UploadOffset(ctx, st.UploadURL); !isStatus(err, 404) {
				t.Errorf("the stale upload is still on the server: %v", err)
			}
		})
		t.Run("other options", func(t *testing.T) {
			src, sum := writeRandomFile(t, dir, "options.bin", size, 4)
			interrupt(t, proxy, u.Token, cache, 6<<20, src, "--key", "files/options.bin")
			upload(t, src, sum, size, "changed since its interrupted upload", "--key", "files/options.bin", "--ttl", "1h")
		})
		t.Run("deleted upload", func(t *testing.T) {
			src, sum := writeRandomFile(t, dir, "deleted.bin", size, 5)
			st := interrupt(t, proxy, u.Token, cache, 6<<20, src)
			if err := c.TerminateUpload(ctx, st.UploadURL); err != nil {
				t.Fatal(err)
			}
			upload(t, src, sum, size, "is gone from the server (expired or deleted); starting over")
		})
		t.Run("another user's upload", func(t *testing.T) {
			_, other := env.User(t, "other", "user")
			src, sum := writeRandomFile(t, dir, "theirs.bin", size, 6)
			interrupt(t, proxy, u.Token, cache, 6<<20, src)
			// The other user, with the first one's state file: their upload is not
			// theirs to go on with.
			before := proxy.Sent()
			code, out, errOut := runVia(ctx, proxy.URL, other.Token, cache, "files", "upload", src, "--json")
			if code != 0 || !strings.Contains(errOut, "gone from the server") || uploadedInfo(t, out).Checksum != sum {
				t.Fatalf("exit %d, %q", code, errOut)
			}
			if sent := proxy.Sent() - before; sent < size {
				t.Errorf("sent %d bytes of %d to another user's upload", sent, size)
			}
		})
		t.Run("no-resume", func(t *testing.T) {
			src, sum := writeRandomFile(t, dir, "once.bin", size, 7)
			proxy.CutAt(proxy.Sent()+6<<20, true)
			code, _, errOut := runVia(ctx, proxy.URL, u.Token, cache, "files", "upload", src, "--no-resume")
			proxy.Allow()
			if code != exitUnavailable || strings.Contains(errOut, "run the same command again") {
				t.Fatalf("an interrupted --no-resume upload: exit %d, %q", code, errOut)
			}
			if left := stateFiles(t, cache); len(left) != 0 {
				t.Fatalf("--no-resume kept state: %+v", left)
			}
			upload(t, src, sum, size, "", "--no-resume")
		})
		t.Run("under the threshold", func(t *testing.T) {
			src, sum := writeRandomFile(t, dir, "small.bin", size, 8)
			proxy.CutAt(proxy.Sent()+6<<20, true)
			code, _, errOut := runVia(ctx, proxy.URL, u.Token, cache, "files", "upload", src, "--resumable-threshold", "17MiB")
			proxy.Allow()
			if code != exitUnavailable || len(stateFiles(t, cache)) != 0 {
				t.Fatalf("an interrupted upload under the threshold: exit %d, %q", code, errOut)
			}
			upload(t, src, sum, size, "", "--resumable-threshold", "17MiB")
			if code, _, errOut := runVia(ctx, proxy.URL, u.Token, cache, "files", "upload", src, "--resumable-threshold", "lots"); code != exitUsage || !strings.Contains(errOut, "--resumable-threshold") {
				t.Errorf("a bad threshold: exit %d, %q", code, errOut)
			}
		})
		t.Run("interrupted by the user", func(t *testing.T) {
			// As Ctrl-C would in a program that catches it: the run's context ends
			// mid-upload.
			src, sum := writeRandomFile(t, dir, "cancelled.bin", size, 9)
			stallAt := proxy.Sent() + 5<<20
			proxy.StallAt(stallAt)
			cctx, cancel := context.WithCancel(ctx)
			type result struct {
				code   int
				errOut string
			}
			done := make(chan result)
			go func() {
				code, _, errOut := runVia(cctx, proxy.URL, u.Token, cache, "files", "upload", src)
				done <- result{code, errOut}
			}()
			waitSent(t, proxy, stallAt)
			cancel()
			r := <-done
			proxy.Cut()
			proxy.Allow()
			if r.code == 0 || !strings.Contains(r.errOut, "run the same command again to resume") {
				t.Fatalf("a cancelled upload: exit %d, %q", r.code, r.errOut)
			}
			st := stateFiles(t, cache)
			if len(st) != 1 {
				t.Fatalf("state after a cancelled upload: %+v", st)
			}
			// 5 MiB reached the server, less the request's head.
			upload(t, src, sum, size-settledOffset(t, c, st[0].UploadURL, 5<<20-4096), "Resuming the upload")
		})
		t.Run("expired upload", func(t *testing.T) {
			cfg := apptest.Config(t, b)
			cfg.FilesUploadTTL = 3 * time.Second
			env := apptest.Start(t, cfg)
			_, u := env.User(t, "late", "user")
			proxy := testutil.NewProxy(t, env.URL)
			const size = 4 << 20
			src, sum := writeRandomFile(t, dir, "late.bin", size, 11)
			interrupt(t, proxy, u.Token, cache, 1<<20, src, "--resumable-threshold", "1MiB")
			time.Sleep(cfg.FilesUploadTTL + time.Second)
			before := proxy.Sent()
			code, out, errOut := runVia(ctx, proxy.URL, u.Token, cache, "files", "upload", src, "--resumable-threshold", "1MiB", "--json")
			if code != 0 || !strings.Contains(errOut, "is gone from the server (expired or deleted); starting over") || uploadedInfo(t, out).Checksum != sum {
				t.Fatalf("after the upload expired: exit %d, %q", code, errOut)
			}
			if sent := proxy.Sent() - before; sent < size {
				t.Errorf("sent %d bytes of %d after the upload expired", sent, size)
			}
			if left := stateFiles(t, cache); len(left) != 0 {
				t.Errorf("state files after the upload completed: %+v", left)
			}
		})
		t.Run("empty file", func(t *testing.T) {
			src := filepath.Join(dir, "empty")
			os.WriteFile(src, nil, 0o600)
			code, out, errOut := runVia(ctx, proxy.URL, u.Token, cache, "files", "upload", src, "--resumable-threshold", "0", "--json")
			if fi := uploadedInfo(t, out); code != 0 || fi.SizeBytes != 0 || fi.Checksum != "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
				t.Fatalf("an empty file: exit %d, %+v, %q", code, fi, errOut)
			}
		})
	})
}

// waitSent waits until clients sent n bytes through proxy.
func waitSent(t *testing.T, proxy *testutil.Proxy, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for proxy.Sent() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d bytes went through the proxy, waiting for %d", proxy.Sent(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isStatus reports whether err is an API error answer with this HTTP status.
func isStatus(err error, status int) bool {
	var ae *client.Error
	return errors.As(err, &ae) && ae.Status == status
}

// settledOffset is the server's offset of an upload whose connection was just dropped
// after at least atLeast bytes of it reached the server, once the server has stored them.
// (Until the dropped request has stored its bytes, which takes up to seconds on NATS,
// HEAD answers the offset before it.)
func settledOffset(t *testing.T, c *client.Client, uploadURL string, atLeast int64) int64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		offset, _, err := c.UploadOffset(context.Background(), uploadURL)
		if err != nil {
			t.Fatalf("the server's offset: %v", err)
		}
		if offset >= atLeast {
			return offset
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's offset of %s stays at %d, short of the %d bytes that reached it", uploadURL, offset, atLeast)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestResumableUploadAfterKill runs the real binary: `skrip files upload` killed with
// SIGKILL mid-upload leaves its state file in the user's cache directory
// ($XDG_CACHE_HOME/skrip/uploads), and the same command run again resumes from the
// server's offset.
func TestResumableUploadAfterKill(t *testing.T) {
	bin := testutil.BuildSkrip(t)
	env := apptest.New(t, apptest.BlobBackends[0])
	c, u := env.User(t, "killed", "user")
	dir, home := t.TempDir(), t.TempDir()
	const size = 48 << 20
	src, sum := writeRandomFile(t, dir, "big.bin", size, 10)
	proxy := testutil.NewProxy(t, env.URL)
	command := func() *exec.Cmd {
		cmd := exec.Command(bin, "files", "upload", src, "--key", "files/killed.bin", "--json")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
			"SKRIP_SERVER=" + proxy.URL, "SKRIP_TOKEN=" + u.Token}
		return cmd
	}

	proxy.StallAt(20 << 20)
	first := command()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	waitSent(t, proxy, 20<<20)
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	proxy.Cut()
	proxy.Allow()

	states := stateFiles(t, filepath.Join(home, "cache", "skrip"))
	if len(states) != 1 {
		t.Fatalf("state files after the kill: %+v", states)
	}
	offset := settledOffset(t, c, states[0].UploadURL, 20<<20-4096)
	before := proxy.Sent()
	var stdout, stderr bytes.Buffer
	second := command()
	second.Stdout, second.Stderr = &stdout, &stderr
	if err := second.Run(); err != nil {
		t.Fatalf("the run after the kill: %v, %s", err, stderr.String())
	}
	if fi := uploadedInfo(t, stdout.String()); fi.Checksum != sum || fi.SizeBytes != size {
		t.Fatalf("the run after the kill: %+v, want %s", fi, sum)
	}
	if resent := proxy.Sent() - before; resent < size-offset || resent > size-offset+64<<10 {
		t.Errorf("the run after the kill sent %d bytes; the rest was %d", resent, size-offset)
	}
	if !strings.Contains(stderr.String(), "Resuming the upload") {
		t.Errorf("stderr: %q", stderr.String())
	}
	if left := stateFiles(t, filepath.Join(home, "cache", "skrip")); len(left) != 0 {
		t.Errorf("state files after the upload completed: %+v", left)
	}
}
