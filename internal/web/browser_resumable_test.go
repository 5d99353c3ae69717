package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

const (
	// bigFileBytes is large enough for the page to send resumably (tus.js's
	// TUS_MIN_BYTES is 8 MiB) and, through slowWire, to take seconds.
	bigFileBytes = 64 << 20
	// wireRate is how fast slowWire passes the browser's bytes on: 64 MiB in about 5 s.
	wireRate = 12 << 20
	// resumableCap is the per-file limit the server of these tests runs with: above
	// bigFileBytes, so that a file just over it is refused when its upload is created.
	resumableCap = 80 << 20
)

// TestBrowserResumableUpload: on the Files page a large file goes up resumably, on
// each blob store. Its connection drops in the middle while the server is stopped and
// started again on the same address, data dir and backends, and the upload finishes
// from where the server had it, with the bytes intact. The server stopped while it is
// taking the bytes does not stop the upload either; a reload of the page in the middle
// goes on from where it was; and an upload over the limit is refused before a byte is
// sent, with the server's message.
func TestBrowserResumableUpload(t *testing.T) {
	chrome := chromiumPath(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap")
	}
	bin := testutil.BuildSkrip(t)
	src, sum := randomFile(t, "mätdata.csv", bigFileBytes)
	apptest.EachOf(t, apptest.BlobBackends, func(t *testing.T, b apptest.Backend) {
		srv := startServer(t, bin, b, "--files-max-file-bytes", strconv.Itoa(resumableCap))
		teacher := srv.user(t, "teacher")
		wire := slowWire(t, srv.addr, wireRate)
		s := &site{base: wire.base, chrome: chrome, browsers: map[string]context.Context{}}
		defer s.close()
		done := func(key string) chromedp.Action {
			return chromedp.WaitVisible(`a[href="/api/v1/files/`+key+`"]`, chromedp.ByQuery)
		}

		t.Run("over the limit", func(t *testing.T) {
			over := filepath.Join(t.TempDir(), "för-stor.csv")
			if err := os.WriteFile(over, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(over, resumableCap+1); err != nil {
				t.Fatal(err)
			}
			ctx := s.as(t, "teacher")
			patches := watchPatches(ctx)
			run(t, ctx,
				chromedp.Navigate(s.base+"/files"),
				chromedp.WaitVisible("#stage-file", chromedp.ByQuery),
				chromedp.SetUploadFiles("#stage-file", []string{over}, chromedp.ByQuery),
				chromedp.Click("form[data-stage] button[type=submit]", chromedp.ByQuery),
				chromedp.WaitVisible("form[data-stage] [data-error]", chromedp.ByQuery),
			)
			// The refusal in the page's language, from the API's reason and details, not
			// in the API's English.
			english, details := refusal(t, srv, "för-stor.csv", resumableCap+1)
			var lang string
			run(t, ctx, chromedp.Evaluate(`document.documentElement.lang`, &lang))
			want := map[string][2]string{"sv": {"”för-stor.csv” är större än gränsen på ", "Inget sparades."},
				"en": {"“för-stor.csv” is larger than the limit of ", "Nothing was kept."}}[lang]
			msg := text(t, ctx, "form[data-stage] [data-error]")
			if details["reason"] != "file_too_large" || msg == english || want[0] == "" || !strings.HasPrefix(msg, want[0]) || !strings.HasSuffix(msg, want[1]) {
				t.Errorf("over the limit, the %s page says %q; want %q…%q (the API said %q, %v)", lang, msg, want[0], want[1], english, details)
			}
			if p, _ := patches.list(); len(p) != 0 {
				t.Errorf("the page sent %d PATCHes of a file over the limit", len(p))
			}
		})

		t.Run("the connection drops and the server restarts", func(t *testing.T) {
			ctx := s.as(t, "teacher")
			patches := watchPatches(ctx)
			const key = "files/big/restart.csv"
			s.startBigUpload(t, ctx, src, key)
			// The page loses its connection, and finds none while the server is
			// stopped and started again: then one that knows nothing of the
			// connection it lost, only what it stored.
			patches.mark()
			wire.cut()
			srv.stop(t)
			srv.start(t)
			wire.reopen()
			run(t, ctx, done(key))
			checkStored(t, teacher, key, sum)
			checkResumed(t, patches)
			checkNothingKept(t, ctx)
		})

		t.Run("the server stops while it takes the bytes", func(t *testing.T) {
			ctx := s.as(t, "teacher")
			patches := watchPatches(ctx)
			const key = "files/big/stop.csv"
			s.startBigUpload(t, ctx, src, key)
			patches.mark()
			srv.stop(t)
			srv.start(t)
			run(t, ctx, done(key))
			checkStored(t, teacher, key, sum)
			checkResumed(t, patches)
			checkNothingKept(t, ctx)
		})

		t.Run("a reload of the page in the middle", func(t *testing.T) {
			ctx := s.as(t, "teacher")
			patches := watchPatches(ctx)
			const key = "files/big/reload.csv"
			s.startBigUpload(t, ctx, src, key)
			patches.mark()
			run(t, ctx, chromedp.Navigate(s.base+"/files"), chromedp.WaitVisible("#stage-file", chromedp.ByQuery))
			if got := text(t, ctx, "[data-upload-status]"); !strings.Contains(got, "mätdata.csv") || !strings.Contains(got, "did not finish") {
				t.Errorf("after the reload, the page says %q; want that the upload of mätdata.csv did not finish", got)
			}
			run(t, ctx,
				chromedp.SetUploadFiles("#stage-file", []string{src}, chromedp.ByQuery),
				chromedp.SendKeys("#stage-key", key, chromedp.ByQuery),
				chromedp.Click("form[data-stage] button[type=submit]", chromedp.ByQuery),
				done(key),
			)
			checkStored(t, teacher, key, sum)
			checkResumed(t, patches)
			checkNothingKept(t, ctx)
		})
	})
}

// refusal is the message the server answers a creation of an upload of size bytes
// called name with, and its details.
func refusal(t *testing.T, srv *skripServer, name string, size int64) (string, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+srv.addr+"/api/v1/uploads/", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Length", strconv.FormatInt(size, 10))
	req.Header.Set("Upload-Metadata", "filename "+base64.StdEncoding.EncodeToString([]byte(name)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct {
			Message string
			Details map[string]any
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge || body.Error.Message == "" {
		t.Fatalf("creating an upload over the limit: %d, %+v (%v)", resp.StatusCode, body, err)
	}
	return body.Error.Message, body.Error.Details
}

// startBigUpload chooses src on the Files page, asks for key, sends it and returns once
// a quarter of it has gone.
func (s *site) startBigUpload(t *testing.T, ctx context.Context, src, key string) {
	t.Helper()
	run(t, ctx,
		chromedp.Navigate(s.base+"/files"),
		chromedp.WaitVisible("#stage-file", chromedp.ByQuery),
		chromedp.SetUploadFiles("#stage-file", []string{src}, chromedp.ByQuery),
		chromedp.SendKeys("#stage-key", key, chromedp.ByQuery),
		chromedp.Click("form[data-stage] button[type=submit]", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("[data-progress]").value >= 25`, nil, chromedp.WithPollingTimeout(60*time.Second)),
	)
	// How far and how fast, in words: "31 % · 12,5 MB/s".
	if said := text(t, ctx, "[data-upload-status]"); !regexp.MustCompile(`^\d+ % · \d.*/s$`).MatchString(said) {
		t.Errorf("while uploading the page says %q", said)
	}
}

// checkStored downloads key and compares its bytes with the file's sha256 sum (the
// client also checks them against the checksum the server gives).
func checkStored(t *testing.T, c *client.Client, key, sum string) {
	t.Helper()
	h := sha256.New()
	fi, err := c.Download(context.Background(), key, func(client.FileInfo) (io.Writer, error) { return h, nil })
	if err != nil {
		t.Fatalf("downloading %s: %v", key, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum || fi.Checksum != "sha256:"+sum {
		t.Fatalf("%s holds sha256 %s and the server says %s; the file sent is %s", key, got, fi.Checksum, sum)
	}
	info, err := c.FileInfoOf(context.Background(), key)
	if err != nil || info.Name != "mätdata.csv" || !strings.HasPrefix(info.ContentType, "text/csv") || info.SizeBytes != bigFileBytes {
		t.Fatalf("%s is %+v (%v); want mätdata.csv, text/csv, %d bytes", key, info, err, bigFileBytes)
	}
}

// checkResumed: the PATCHes sent after the break went on from where the server had the
// upload, well past the start (the page broke off once a quarter of the file had gone).
func checkResumed(t *testing.T, p *patchLog) {
	t.Helper()
	all, after := p.list()
	if len(after) == 0 || slices.ContainsFunc(after, func(o int64) bool { return o < bigFileBytes/8 }) {
		t.Fatalf("the PATCHes began at offsets %v, those after the break at %v; want the upload to go on from where the server had it", all, after)
	}
}

// checkNothingKept: a finished upload leaves nothing in the page's localStorage.
func checkNothingKept(t *testing.T, ctx context.Context) {
	t.Helper()
	var kept []string
	run(t, ctx, chromedp.Evaluate(`Object.keys(localStorage).filter((k) => k.startsWith("skrip.upload:"))`, &kept))
	if len(kept) != 0 {
		t.Fatalf("after the upload, localStorage keeps %v", kept)
	}
}

// patchLog is the Upload-Offset of every PATCH a tab sent, in order, and how many of
// them were sent before the break (mark).
type patchLog struct {
	mu      sync.Mutex
	offsets []int64
	before  int
}

func (p *patchLog) mark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.before = len(p.offsets)
}

// list returns the offsets of every PATCH, and of those after the mark.
func (p *patchLog) list() (all, after []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	all = slices.Clone(p.offsets)
	return all, all[p.before:]
}

func watchPatches(ctx context.Context) *patchLog {
	p := &patchLog{}
	chromedp.ListenTarget(ctx, func(ev any) {
		e, ok := ev.(*network.EventRequestWillBeSent)
		if !ok || e.Request.Method != "PATCH" {
			return
		}
		for k, v := range e.Request.Headers {
			if strings.EqualFold(k, "Upload-Offset") {
				n, _ := strconv.ParseInt(fmt.Sprint(v), 10, 64)
				p.mu.Lock()
				p.offsets = append(p.offsets, n)
				p.mu.Unlock()
			}
		}
	})
	chromedp.Run(ctx, network.Enable())
	return p
}

// randomFile writes size random bytes to a file called name and returns its path and
// sha256 sum.
func randomFile(t *testing.T, name string, size int) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	rng := rand.NewChaCha8([32]byte{19})
	if _, err := io.CopyN(io.MultiWriter(f, h), rng, int64(size)); err != nil {
		t.Fatal(err)
	}
	return p, hex.EncodeToString(h.Sum(nil))
}

// skripServer is a `skrip serve` that a test stops and starts again, on the same
// address, data dir and backends, as an operator restarts one.
type skripServer struct {
	bin  string
	args []string
	addr string
	logs testutil.LockedBuffer
	cmd  *exec.Cmd
}

// startServer runs `skrip serve` on backend b with extra flags until the test ends.
func startServer(t *testing.T, bin string, b apptest.Backend, extra ...string) *skripServer {
	t.Helper()
	s := &skripServer{bin: bin, addr: testutil.FreeAddr(t)}
	s.args = append([]string{"serve", "--addr", s.addr, "--data-dir", filepath.Join(t.TempDir(), "data"), "--runner", "bwrap",
		"--blob", b.Blob, "--log-level", "warn",
		// A stop cuts off a request in flight after a second rather than waiting for it.
		"--shutdown-grace", "1s"}, extra...)
	if b.Postgres {
		s.args = append(s.args, "--database-url", testutil.PostgresURL(t))
	}
	t.Cleanup(func() {
		if s.cmd != nil {
			s.stop(t)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", s.logs.String())
		}
	})
	s.start(t)
	return s
}

func (s *skripServer) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Env = append(os.Environ(), "SKRIP_BOOTSTRAP_ADMIN_TOKEN="+adminToken)
	cmd.Stdout, cmd.Stderr = &s.logs, &s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd = cmd
	testutil.WaitHealthy(t, "http://"+s.addr)
}

// stop ends the server as SIGINT does: it stops taking connections and cuts off what is
// still in flight after the shutdown grace.
func (s *skripServer) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(os.Interrupt)
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("skrip serve ended with %v", err)
	}
	s.cmd = nil
}

// user creates a user with the test password and returns a client with its token.
func (s *skripServer) user(t *testing.T, name string) *client.Client {
	t.Helper()
	admin, err := client.New("http://"+s.addr, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	u, err := admin.CreateUser(context.Background(), name, "user", password)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New("http://"+s.addr, u.Token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// slowWire is a TCP proxy to addr that passes the browser's bytes on at rate bytes a
// second (the answers at full speed), so that an upload lasts long enough to break off
// in the middle. It is only a slow wire: a connection the server ends or refuses ends or
// is refused for the browser too. cut drops its connections and refuses new ones, as a
// network that went away does, until reopen.
func slowWire(t *testing.T, addr string, rate int) *wire {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{base: "http://" + ln.Addr().String(), addr: addr, rate: rate, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); w.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			w.mu.Lock()
			if w.down {
				c.Close()
			} else {
				w.conns[c] = true
				go w.relay(c)
			}
			w.mu.Unlock()
		}
	}()
	return w
}

type wire struct {
	base, addr string
	rate       int
	mu         sync.Mutex
	conns      map[net.Conn]bool // the browser's
	down       bool
}

func (w *wire) cut() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down = true
	for c := range w.conns {
		c.Close()
	}
}

func (w *wire) reopen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down = false
}

// relay joins the browser's connection c to one of its own to the server until either
// ends.
func (w *wire) relay(c net.Conn) {
	defer func() {
		c.Close()
		w.mu.Lock()
		delete(w.conns, c)
		w.mu.Unlock()
	}()
	s, err := net.Dial("tcp", w.addr)
	if err != nil {
		return
	}
	defer s.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(c, s); c.Close(); done <- struct{}{} }()
	go func() { paced(s, c, w.rate); s.Close(); done <- struct{}{} }()
	<-done
	<-done
}

// paced copies src to dst at about rate bytes a second.
func paced(dst io.Writer, src io.Reader, rate int) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
			time.Sleep(time.Duration(n) * time.Second / time.Duration(rate))
		}
		if err != nil {
			return
		}
	}
}
