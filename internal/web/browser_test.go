package web_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/examples"
	"github.com/skrip-dev/skrip/internal/client"
	"github.com/skrip-dev/skrip/internal/testutil"
)

var screenshotDir = flag.String("screenshots", "", "also write the UI screenshots to this directory (docs/screenshots)")

const (
	adminToken = "skr_browser-test-admin-token-0123456789"
	password   = "correct horse battery"
	// maxFileBytes is the per-file upload cap the test server runs with, so that an
	// upload over it is small.
	maxFileBytes = 200_000
)

// site is a real `skrip serve` with the demo tools, and a browser pointed at it.
type site struct {
	base     string
	admin    *client.Client
	chrome   string
	browsers map[string]context.Context // user name -> their browser
	cleanups []func()
	demo     map[string]string // demo file name of html-to-pdf-preview -> path on disk
	srv      *server
	dataDir  string
}

func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testutil.Missing(t, "chromium", "no chromium in PATH", "apt-get install chromium")
	return ""
}

// close ends the browsers the site started, before the test's own cleanups stop the
// server they are connected to.
func (s *site) close() {
	for _, c := range s.cleanups {
		c()
	}
}

func startSite(t *testing.T, flags ...string) *site {
	t.Helper()
	chrome := chromiumPath(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		testutil.Missing(t, "bwrap", err.Error(), "apt-get install bubblewrap")
	}
	bin := testutil.BuildSkrip(t)
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	srv := &server{bin: bin, args: append([]string{"serve", "--demo", "--addr", addr, "--data-dir", filepath.Join(dir, "data"), "--runner", "bwrap",
		"--upload-max-file-bytes", fmt.Sprint(maxFileBytes), "--log-level", "warn"}, flags...)}
	srv.start(t)
	t.Cleanup(func() {
		srv.cmd.Process.Signal(os.Interrupt)
		srv.cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", srv.logs.String())
		}
	})
	base := "http://" + addr
	testutil.WaitHealthy(t, base)
	admin, err := client.New(base, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, role := range map[string]string{"teacher": "user", "author": "author"} {
		if _, err := admin.CreateUser(ctx, name, role, password); err != nil {
			t.Fatal(err)
		}
	}

	demo := map[string]string{}
	tools, err := examples.Tools()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range tools {
		if ex.Slug != "html-to-pdf-preview" {
			continue
		}
		for name, b := range ex.Demo {
			p := filepath.Join(dir, "demo", name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			demo[name] = p
		}
	}

	return &site{base: base, admin: admin, chrome: chrome, demo: demo, browsers: map[string]context.Context{}, srv: srv, dataDir: filepath.Join(dir, "data")}
}

// server is the site's `skrip serve` process, which a test may kill and start again.
type server struct {
	bin  string
	args []string
	cmd  *exec.Cmd
	logs bytes.Buffer
}

func (v *server) start(t *testing.T) {
	t.Helper()
	v.cmd = exec.Command(v.bin, v.args...)
	v.cmd.Env = append(os.Environ(), "SKRIP_BOOTSTRAP_ADMIN_TOKEN="+adminToken)
	v.cmd.Stdout, v.cmd.Stderr = &v.logs, &v.logs
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

// crashRestart kills the site's server as a crash would (SIGKILL: it ends nothing
// cleanly) and starts it again on the same address and data, as an operator would.
func (s *site) crashRestart(t *testing.T) {
	t.Helper()
	s.srv.cmd.Process.Kill()
	s.srv.cmd.Wait()
	s.srv.start(t)
	testutil.WaitHealthy(t, s.base)
}

// as returns a new tab of the browser that user is signed in to. Each user has a browser
// of their own (a separate Chromium, so no cookies are shared); tabs of one browser share
// the sign-in, as a person's tabs do.
func (s *site) as(t *testing.T, user string) context.Context {
	t.Helper()
	b, ok := s.browsers[user]
	if !ok {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(s.chrome), chromedp.NoSandbox,
			chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true),
			// Keep framed documents in the page's process, so the test can read the tool
			// frame's DOM; how scripts are allowed does not depend on it.
			chromedp.Flag("disable-site-isolation-trials", true), chromedp.Flag("disable-features", "IsolateOrigins,site-per-process"))
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		if err := chromedp.Run(bctx); err != nil {
			cancelAlloc()
			t.Fatalf("starting chromium: %v", err)
		}
		s.cleanups = append(s.cleanups, func() { cancelBrowser(); cancelAlloc() })
		s.browsers[user], b = bctx, bctx
		s.signIn(t, s.tab(t, b), user)
	}
	return s.tab(t, b)
}

// tab opens a new tab in the browser of parent (a tab or a browser).
func (s *site) tab(t *testing.T, parent context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(parent)
	t.Cleanup(cancel)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelTimeout)
	return ctx
}

// viewports are the widths every page is tried at: a laptop and a phone.
var viewports = []struct {
	name          string
	width, height int64
}{{"1280", 1280, 900}, {"390", 390, 844}}

// useLang makes the browser of ctx show the UI in tag ("sv" or "en"), as the language
// switch at the foot of every page does. Every tab of that browser follows it.
func (s *site) useLang(t *testing.T, ctx context.Context, tag string) {
	t.Helper()
	run(t, ctx, chromedp.Navigate(s.base+"/lang/"+tag+"?back=/"), chromedp.WaitVisible("html[lang="+tag+"] main", chromedp.ByQuery))
}

func (s *site) signIn(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	run(t, ctx,
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible("#name", chromedp.ByQuery),
		chromedp.SendKeys("#name", name, chromedp.ByQuery),
		chromedp.SendKeys("#password", password, chromedp.ByQuery),
		chromedp.Click("form[action='/signin'] button", chromedp.ByQuery),
		chromedp.WaitVisible("form.signout", chromedp.ByQuery),
	)
}

func run(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var html, url string
		chromedp.Run(ctx, chromedp.Location(&url), chromedp.OuterHTML("main", &html, chromedp.ByQuery))
		t.Fatalf("%v\nat %s:\n%s", err, url, html)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	run(t, ctx, chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	var u string
	run(t, ctx, chromedp.Location(&u))
	return u
}

// waitPath waits until the tab's URL path starts with prefix and the URL is none of not.
func waitPath(t *testing.T, ctx context.Context, prefix string, not ...string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		u := location(t, ctx)
		if i := strings.Index(u[len("http://"):], "/"); i >= 0 && strings.HasPrefix(u[len("http://")+i:], prefix) && !slices.Contains(not, u) {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tab stayed at %s; expected a page under %s", u, prefix)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *site) runPreview(t *testing.T, ctx context.Context) string {
	t.Helper()
	run(t, ctx,
		chromedp.Navigate(s.base+"/tools/html-to-pdf-preview"),
		chromedp.WaitVisible("#files", chromedp.ByQuery),
		chromedp.SetUploadFiles("#files", []string{s.demo["index.html"], s.demo["style.css"], s.demo["logo.svg"]}, chromedp.ByQuery),
		chromedp.WaitVisible("[data-picked] li", chromedp.ByQuery),
	)
	if listed := text(t, ctx, "[data-picked]"); !strings.Contains(listed, "index.html") || !strings.Contains(listed, "byte") && !strings.Contains(listed, "kB") {
		t.Fatalf("the picker lists %q; want each file with its size", listed)
	}
	run(t, ctx, chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery))
	u := waitPath(t, ctx, "/runs/")
	run(t, ctx, chromedp.WaitVisible("iframe[sandbox]", chromedp.ByQuery))
	return u
}

// convertButton is the submit button of the convert action's form.
const convertButton = "form[action$='/actions/convert'] button[type=submit]"

func TestBrowser(t *testing.T) {
	s := startSite(t)
	defer s.close()

	t.Run("preview, convert and download a PDF", func(t *testing.T) {
		ctx := s.as(t, "teacher")
		first := s.runPreview(t, ctx)
		var label string
		run(t, ctx, chromedp.Text(convertButton, &label, chromedp.ByQuery))
		if label != "Konvertera till PDF" {
			t.Fatalf("the convert button reads %q", label)
		}
		run(t, ctx,
			chromedp.SetValue("select[name='in.page_size']", "a4", chromedp.ByQuery),
			chromedp.Click(convertButton, chromedp.ByQuery),
		)
		waitPath(t, ctx, "/runs/", first)
		run(t, ctx, chromedp.WaitVisible(".downloads a[download]", chromedp.ByQuery))
		name := text(t, ctx, ".downloads a[download]")
		if !strings.HasSuffix(name, ".pdf") {
			t.Fatalf("the download link reads %q; want a .pdf", name)
		}
		if size := text(t, ctx, ".downloads .muted"); !strings.Contains(size, "kB") && !strings.Contains(size, "bytes") {
			t.Fatalf("the download's size reads %q", size)
		}

		pdf := download(t, ctx, ".downloads a[download]")
		if !bytes.HasPrefix(pdf, []byte("%PDF-")) {
			t.Fatalf("the download starts %q; want a PDF", pdf[:min(len(pdf), 16)])
		}
		pdfPath := filepath.Join(t.TempDir(), "out.pdf")
		if err := os.WriteFile(pdfPath, pdf, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("pdfinfo", pdfPath).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Pages:") {
			t.Fatalf("pdfinfo: %v\n%s", err, out)
		}
	})

	t.Run("an action in one tab makes the other show the conflict", func(t *testing.T) {
		a := s.as(t, "teacher")
		runURL := s.runPreview(t, a)
		b := s.tab(t, a)
		run(t, b, chromedp.Navigate(runURL), chromedp.WaitEnabled(convertButton, chromedp.ByQuery))

		run(t, a, chromedp.Click(convertButton, chromedp.ByQuery))
		latest := waitPath(t, a, "/runs/", runURL)
		run(t, a, chromedp.WaitVisible(".downloads a[download]", chromedp.ByQuery))

		run(t, b, chromedp.Click(convertButton, chromedp.ByQuery), chromedp.WaitVisible("[data-submit-error]", chromedp.ByQuery))
		msg := text(t, b, "[data-submit-error]")
		if !strings.Contains(msg, "was saved first") && !strings.Contains(msg, "sparades först") {
			t.Fatalf("tab B shows %q", msg)
		}
		var body string
		run(t, b, chromedp.Text("body", &body, chromedp.ByQuery))
		for _, leak := range []string{"goroutine", "panic", ".go:", "sql"} {
			if strings.Contains(body, leak) {
				t.Fatalf("the conflict page shows %q:\n%s", leak, body)
			}
		}
		// Its one button goes to the step the other tab took.
		run(t, b, chromedp.Click("[data-submit-error] a.button", chromedp.ByQuery), chromedp.WaitVisible("main h1", chromedp.ByQuery))
		if u := location(t, b); u != latest {
			t.Fatalf("the conflict's button went to %s; want %s", u, latest)
		}
	})

	t.Run("an upload over the cap shows the server's message and creates no run", func(t *testing.T) {
		ctx := s.as(t, "teacher")
		teacher := s.userClient(t, "teacher")
		before := countRuns(t, teacher)
		big := filepath.Join(t.TempDir(), "stor.html")
		if err := os.WriteFile(big, bytes.Repeat([]byte("<p>x</p>\n"), maxFileBytes/9+1000), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, ctx,
			chromedp.Navigate(s.base+"/tools/html-to-pdf-preview"),
			chromedp.WaitVisible("#files", chromedp.ByQuery),
			chromedp.SetUploadFiles("#files", []string{big}, chromedp.ByQuery),
			chromedp.WaitVisible("[data-courtesy]", chromedp.ByQuery),
			chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery),
			chromedp.WaitVisible("#files-error", chromedp.ByQuery),
		)
		msg := text(t, ctx, "#files-error")
		if !strings.Contains(msg, "stor.html") || !strings.Contains(msg, "200 kB") {
			t.Fatalf("the error beside the file slot reads %q; want the server's message naming the file and the limit", msg)
		}
		if !strings.HasSuffix(location(t, ctx), "/tools/html-to-pdf-preview") {
			t.Fatalf("the page moved to %s", location(t, ctx))
		}
		var kept int
		run(t, ctx, chromedp.Evaluate(`document.querySelector("#files").files.length`, &kept))
		if kept != 1 {
			t.Fatalf("the file input holds %d files after the refusal; want the 1 chosen", kept)
		}
		if after := countRuns(t, teacher); after != before {
			t.Fatalf("runs went from %d to %d", before, after)
		}
	})

	t.Run("an author edits, runs in the sandbox and acts on the next action", func(t *testing.T) {
		ctx := s.as(t, "author")
		run(t, ctx,
			chromedp.Navigate(s.base+"/editor"),
			chromedp.WaitVisible("#t-title", chromedp.ByQuery),
			chromedp.SendKeys("#t-title", "Hälsning", chromedp.ByQuery),
			chromedp.SendKeys("#t-slug", "greeting", chromedp.ByQuery),
			chromedp.Click("form[action='/editor'] button[type=submit]", chromedp.ByQuery),
		)
		waitPath(t, ctx, "/editor/greeting")
		// The code box is CodeMirror (or the text box when it is not installed): the
		// code goes in through whichever the page made.
		run(t, ctx,
			chromedp.WaitReady("[data-code-editor]", chromedp.ByQuery),
			setCode(greetingSource),
			chromedp.Click("form[action$='/versions'] button[type=submit]", chromedp.ByQuery),
		)
		waitPath(t, ctx, "/editor/greeting?version=")
		// Read in the page, not through a node id: the address can change before the
		// new document replaces the old one, whose nodes then vanish under a read.
		var src string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			run(t, ctx, chromedp.Evaluate(`(document.querySelector("#source") || {value: ""}).value`, &src))
			if strings.Contains(src, "greet") {
				break
			}
		}
		if !strings.Contains(src, "greet") {
			t.Fatalf("the editor shows the old source after saving:\n%s", src)
		}
		saved := location(t, ctx)
		run(t, ctx,
			chromedp.SetUploadFiles("#sandbox-files", []string{s.demo["index.html"]}, chromedp.ByQuery),
			chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery),
		)
		sandboxRun := waitPath(t, ctx, "/editor/greeting?version=", saved)
		run(t, ctx, chromedp.WaitEnabled("form[action$='/actions/greet'] button[type=submit]", chromedp.ByQuery))
		if got := text(t, ctx, ".pane:last-child"); !strings.Contains(got, "Step 1") {
			t.Fatalf("the sandbox session is not shown at step 1:\n%s", got)
		}
		run(t, ctx,
			chromedp.SetValue("input[name='in.name']", "Ada", chromedp.ByQuery),
			chromedp.SetValue("input[name='in.times']", "2", chromedp.ByQuery),
			chromedp.SetValue("select[name='in.tone']", "warm", chromedp.ByQuery),
			chromedp.Click("form[action$='/actions/greet'] button[type=submit]", chromedp.ByQuery),
		)
		waitPath(t, ctx, "/editor/greeting?version=", sandboxRun)
		run(t, ctx, chromedp.WaitVisible(".notice", chromedp.ByQuery))
		page := text(t, ctx, ".pane:last-child")
		for _, want := range []string{"Hej Ada! Hej Ada!", "index.html", "Step 2", `"greeted": "Ada"`} {
			if !strings.Contains(page, want) {
				t.Fatalf("after the action the sandbox pane lacks %q:\n%s", want, page)
			}
		}
	})

	t.Run("a script in html_sandboxed output does not run", func(t *testing.T) {
		author := s.userClient(t, "author")
		if _, _, err := author.CreateTool(context.Background(), "script-probe", "Script probe", "", scriptSource, true); err != nil {
			t.Fatal(err)
		}
		ctx := s.as(t, "teacher")
		// Record every message posted to the page, from before any of its scripts.
		var id page.ScriptIdentifier
		run(t, ctx, chromedp.ActionFunc(func(ctx context.Context) error {
			var err error
			id, err = page.AddScriptToEvaluateOnNewDocument(`if (window === window.top) { window.__msgs = []; addEventListener("message", e => window.__msgs.push(String(e.data))); }`).Do(ctx)
			return err
		}))
		_ = id
		run(t, ctx,
			chromedp.Navigate(s.base+"/tools/script-probe"),
			chromedp.WaitVisible("form[data-upload] button[type=submit]", chromedp.ByQuery),
			chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery),
		)
		waitPath(t, ctx, "/runs/")
		run(t, ctx, chromedp.WaitVisible("iframe[sandbox]", chromedp.ByQuery))
		// The frame's document is there, script and all: find it through the DOM.
		deadline := time.Now().Add(20 * time.Second)
		for {
			var root *cdp.Node
			run(t, ctx, chromedp.ActionFunc(func(ctx context.Context) error {
				var err error
				root, err = dom.GetDocument().WithDepth(-1).WithPierce(true).Do(ctx)
				return err
			}))
			marker, script := findNode(root, "P", "probe-marker"), findNode(root, "SCRIPT", "probe-script")
			if marker != nil && script != nil {
				if v, _ := marker.Attribute("data-ran"); v != "" {
					t.Fatal("the tool's script changed its own document")
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the tool's HTML never loaded in the frame")
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(time.Second) // give a script that could run the time to post
		var msgs []string
		var title string
		run(t, ctx,
			chromedp.Evaluate(`window.postMessage("control", "*")`, nil),
			chromedp.Sleep(200*time.Millisecond),
			chromedp.Evaluate(`window.__msgs`, &msgs),
			chromedp.Title(&title),
		)
		if len(msgs) != 1 || msgs[0] != "control" {
			t.Fatalf("the page received messages %q; want only the test's own control message", msgs)
		}
		if strings.Contains(title, "pwned") {
			t.Fatalf("the page title is %q", title)
		}
		var sandbox *string
		run(t, ctx, chromedp.Evaluate(`document.querySelector("main iframe").getAttribute("sandbox")`, &sandbox))
		if sandbox == nil || *sandbox != "" {
			t.Fatalf("the frame's sandbox attribute is %v; want present and empty (no allow-scripts, no allow-same-origin)", sandbox)
		}
	})

	t.Run("the run page follows a run live, then shows its results", func(t *testing.T) {
		author := s.userClient(t, "author")
		if _, _, err := author.CreateTool(context.Background(), "slow", "Slow", "", slowSource, true); err != nil {
			t.Fatal(err)
		}
		ctx := s.as(t, "teacher")
		run(t, ctx,
			chromedp.Navigate(s.base+"/tools/slow"),
			chromedp.WaitVisible("form[data-upload] button[type=submit]", chromedp.ByQuery),
			chromedp.Click("form[data-upload] button[type=submit]", chromedp.ByQuery),
		)
		waitPath(t, ctx, "/runs/")
		run(t, ctx, chromedp.WaitVisible("[data-live]", chromedp.ByQuery))
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(text(t, ctx, "[data-log]"), "halfway there") {
			if time.Now().After(deadline) {
				t.Fatal("the live log never showed the tool's first line")
			}
			time.Sleep(100 * time.Millisecond)
		}
		if got := text(t, ctx, "[data-status-label]"); got != "Running" && got != "Körs" {
			t.Fatalf("while the tool sleeps, the status reads %q", got)
		}
		run(t, ctx, chromedp.WaitVisible(".markdown", chromedp.ByQuery))
		if got := text(t, ctx, ".markdown"); !strings.Contains(got, "Klart") {
			t.Fatalf("after the run the page shows %q", got)
		}
	})

	t.Run("staged files: upload, list, download and delete", func(t *testing.T) {
		ctx := s.as(t, "teacher")
		content := bytes.Repeat([]byte("anteckning\n"), 100_000)
		src := filepath.Join(t.TempDir(), "anteckningar.txt")
		if err := os.WriteFile(src, content, 0o644); err != nil {
			t.Fatal(err)
		}
		link := `a[href="/api/v1/files/files/notes/anteckningar.txt"]`
		run(t, ctx,
			chromedp.Navigate(s.base+"/files"),
			chromedp.WaitVisible("#stage-file", chromedp.ByQuery),
			chromedp.SetUploadFiles("#stage-file", []string{src}, chromedp.ByQuery),
			chromedp.SendKeys("#stage-key", "files/notes/anteckningar.txt", chromedp.ByQuery),
			chromedp.Click("form[data-stage] button[type=submit]", chromedp.ByQuery),
			chromedp.WaitVisible(link, chromedp.ByQuery),
		)
		if row := text(t, ctx, "tbody tr"); !strings.Contains(row, "1.1 MB") || !strings.Contains(row, "anteckningar.txt") {
			t.Fatalf("the files table row reads %q", row)
		}
		if said := text(t, ctx, "[data-upload-status]"); said != "Done: files/notes/anteckningar.txt is uploaded." {
			t.Errorf("after the upload the page says %q", said)
		}
		fitsPhone(t, ctx, s.base+"/files")
		run(t, ctx, chromedp.Navigate(s.base+"/files"), chromedp.WaitVisible("#stage-file", chromedp.ByQuery))
		// Sending a file to a key the list shows asks first; "no" sends nothing.
		var replacing atomic.Bool
		replacing.Store(true)
		replaceAsked := make(chan string, 1)
		chromedp.ListenTarget(ctx, func(ev any) {
			if d, ok := ev.(*page.EventJavascriptDialogOpening); ok && replacing.Load() {
				select {
				case replaceAsked <- d.Message:
				default:
				}
				go chromedp.Run(ctx, page.HandleJavaScriptDialog(false))
			}
		})
		run(t, ctx,
			chromedp.SetUploadFiles("#stage-file", []string{src}, chromedp.ByQuery),
			chromedp.SendKeys("#stage-key", "files/notes/anteckningar.txt", chromedp.ByQuery),
			chromedp.Click("form[data-stage] button[type=submit]", chromedp.ByQuery))
		select {
		case m := <-replaceAsked:
			if m != "files/notes/anteckningar.txt already exists. Replace it with anteckningar.txt?" {
				t.Errorf("replacing a file asks %q", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("sending a file to a key that is taken did not ask first")
		}
		replacing.Store(false)
		time.Sleep(300 * time.Millisecond)
		if vs, err := s.userClient(t, "teacher").FileVersions(context.Background(), "files/notes/anteckningar.txt"); err != nil || len(vs) != 1 {
			t.Fatalf("after answering no, the file has versions %+v (%v)", vs, err)
		}
		// At 390 px too: an upload says when it is done (its percentage and speed as it
		// goes: TestBrowserResumableUpload).
		var width int64
		run(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(s.base+"/files"), chromedp.WaitVisible("#stage-file", chromedp.ByQuery),
			chromedp.Evaluate(`window.innerWidth`, &width),
			chromedp.SetUploadFiles("#stage-file", []string{src}, chromedp.ByQuery),
			chromedp.SendKeys("#stage-key", "files/notes/telefon.txt", chromedp.ByQuery),
			chromedp.Click("form[data-stage] button[type=submit]", chromedp.ByQuery),
			chromedp.WaitVisible(`a[href="/api/v1/files/files/notes/telefon.txt"]`, chromedp.ByQuery))
		if said := text(t, ctx, "[data-upload-status]"); width != 390 || said != "Done: files/notes/telefon.txt is uploaded." {
			t.Errorf("at %d px, after the upload the page says %q", width, said)
		}
		// And a file sent to a key the list shows asks first there too.
		replacing.Store(true)
		run(t, ctx, chromedp.Navigate(s.base+"/files"), chromedp.WaitVisible("#stage-file", chromedp.ByQuery),
			chromedp.SetUploadFiles("#stage-file", []string{src}, chromedp.ByQuery),
			chromedp.SendKeys("#stage-key", "files/notes/telefon.txt", chromedp.ByQuery),
			chromedp.Click("form[data-stage] button[type=submit]", chromedp.ByQuery))
		select {
		case m := <-replaceAsked:
			if m != "files/notes/telefon.txt already exists. Replace it with anteckningar.txt?" {
				t.Errorf("at 390 px replacing a file asks %q", m)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("at 390 px sending a file to a key that is taken did not ask first")
		}
		replacing.Store(false)
		time.Sleep(300 * time.Millisecond)
		if err := s.userClient(t, "teacher").DeleteFile(context.Background(), "files/notes/telefon.txt"); err != nil {
			t.Fatal(err)
		}
		run(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(s.base+"/files"), chromedp.WaitVisible("#stage-file", chromedp.ByQuery))
		got := download(t, ctx, link)
		if !bytes.Equal(got, content) {
			t.Fatalf("downloaded %d bytes; want the %d uploaded", len(got), len(content))
		}
		// A share link for one download: the URL the page shows (and copies) downloads the
		// file with no sign-in, once.
		var shared, status string
		run(t, ctx,
			chromedp.Click("details.share summary", chromedp.ByQuery),
			chromedp.WaitVisible("form[data-share] [name=max_downloads]", chromedp.ByQuery),
			chromedp.SetValue("form[data-share] [name=ttl]", "1h", chromedp.ByQuery),
			chromedp.SendKeys("form[data-share] [name=max_downloads]", "1", chromedp.ByQuery),
			chromedp.Click("form[data-share] button[type=submit]", chromedp.ByQuery),
			chromedp.WaitVisible("[data-share-url]", chromedp.ByQuery),
			chromedp.Value("[data-share-url]", &shared, chromedp.ByQuery),
			chromedp.Text("[data-share-status]", &status, chromedp.ByQuery),
		)
		if !strings.HasPrefix(shared, s.base+"/s/skl_") || !strings.Contains(status, "Anyone with") {
			t.Fatalf("the share form shows %q and says %q", shared, status)
		}
		for i, want := range []int{200, 410} {
			resp, err := http.Get(shared)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want || (want == 200 && !bytes.Equal(b, content)) {
				t.Fatalf("download %d through the share link: %d, %d bytes; want %d", i+1, resp.StatusCode, len(b), want)
			}
		}
		if links, err := s.userClient(t, "teacher").Links(context.Background(), "files/notes/anteckningar.txt"); err != nil || len(links) != 1 ||
			links[0].Downloads != 1 || links[0].ExpiresAt.After(time.Now().Add(time.Hour)) {
			t.Fatalf("the API lists the page's links as %+v (%v)", links, err)
		}
		// Deleting asks first, in the page's language.
		s.useLang(t, ctx, "sv")
		asked := make(chan string, 1)
		chromedp.ListenTarget(ctx, func(ev any) {
			if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
				select {
				case asked <- d.Message:
				default:
				}
				go chromedp.Run(ctx, page.HandleJavaScriptDialog(true))
			}
		})
		run(t, ctx,
			chromedp.Navigate(s.base+"/files"),
			chromedp.WaitVisible("[data-delete]", chromedp.ByQuery),
			chromedp.Click("[data-delete]", chromedp.ByQuery),
			chromedp.WaitNotPresent(link, chromedp.ByQuery),
		)
		if q := <-asked; q != "Ta bort files/notes/anteckningar.txt? Det går inte att ångra." {
			t.Errorf("deleting asked %q", q)
		}
		s.useLang(t, ctx, "en")
		var out struct {
			Count int `json:"count"`
		}
		if err := s.userClient(t, "teacher").Do(context.Background(), http.MethodGet, "/api/v1/files", nil, &out); err != nil || out.Count != 0 {
			t.Fatalf("after deleting, the API lists %d files (%v)", out.Count, err)
		}
	})

	t.Run("a typed form and a settings panel reach the tool", func(t *testing.T) {
		s.typedForm(t)
	})

	t.Run("the editor checks a schema's JSON before saving", func(t *testing.T) {
		s.schemaCheck(t)
	})

	t.Run("an admin sees every user's runs and filters them", func(t *testing.T) {
		s.adminRuns(t)
	})

	t.Run("the account page makes and revokes a token and signs out everywhere", func(t *testing.T) {
		s.accountTokens(t)
	})

	t.Run("screenshots in Swedish and English at 1280 and 390 px", func(t *testing.T) {
		s.screenshots(t)
	})
}

// download clicks the link sel and returns the bytes the browser saved.
func download(t *testing.T, ctx context.Context, sel string) []byte {
	t.Helper()
	dir := t.TempDir()
	done := make(chan string, 1)
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	chromedp.ListenTarget(lctx, func(ev any) {
		if e, ok := ev.(*browser.EventDownloadProgress); ok && e.State == browser.DownloadProgressStateCompleted {
			select {
			case done <- e.GUID:
			default:
			}
		}
	})
	run(t, ctx,
		browser.SetDownloadBehavior(browser.SetDownloadBehaviorBehaviorAllowAndName).WithDownloadPath(dir).WithEventsEnabled(true),
		chromedp.Click(sel, chromedp.ByQuery),
	)
	select {
	case guid := <-done:
		b, err := os.ReadFile(filepath.Join(dir, guid))
		if err != nil {
			t.Fatal(err)
		}
		return b
	case <-time.After(30 * time.Second):
		t.Fatalf("the download of %s did not finish", sel)
	}
	return nil
}

// findNode returns the element named tag with the id id anywhere under n, frames included.
func findNode(n *cdp.Node, tag, id string) *cdp.Node {
	if n == nil {
		return nil
	}
	if n.NodeName == tag {
		if v, _ := n.Attribute("id"); v == id {
			return n
		}
	}
	for _, c := range n.Children {
		if f := findNode(c, tag, id); f != nil {
			return f
		}
	}
	if f := findNode(n.ContentDocument, tag, id); f != nil {
		return f
	}
	return nil
}

func (s *site) userClient(t *testing.T, name string) *client.Client {
	t.Helper()
	tok, err := s.admin.CreateToken(context.Background(), name, "browser test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(s.base, tok)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func countRuns(t *testing.T, c *client.Client) int {
	t.Helper()
	var out struct {
		Count int `json:"count"`
	}
	if err := c.Do(context.Background(), http.MethodGet, "/api/v1/runs?limit=500", nil, &out); err != nil {
		t.Fatal(err)
	}
	return out.Count
}

// greetingSource offers an action with fields of several kinds and answers it from the
// server's state and the session's files.
const greetingSource = `import json, os
from skrip_toolkit import action, manifest

def run_tool(input_dir, output_dir):
    act = action()
    names = [f["name"] for f in manifest()["files"] if f["name"] != "action.json"]
    if act is None:
        return {
            "outputs": [{"kind": "markdown", "markdown": "Files: **" + ", ".join(names) + "**"}],
            "next_actions": [{"action_id": "greet", "label": "Greet", "kind": "form", "fields": [
                {"name": "name", "label": "Name", "kind": "string"},
                {"name": "times", "label": "How many times", "kind": "integer"},
                {"name": "tone", "label": "Tone", "kind": "enum", "options": [{"value": "plain", "label": "Plain"}, {"value": "warm", "label": "Warm"}]},
                {"name": "loud", "label": "Loud", "kind": "boolean"},
            ], "prefill": {"name": "you", "times": 1, "tone": "plain"}}],
            "state": {"files": names},
        }
    inp = act["input"]
    msg = " ".join(["Hej " + inp["name"] + "!"] * inp["times"])
    return {
        "outputs": [{"kind": "notice", "level": "info", "message": msg + " Files still here: " + ", ".join(names)}],
        "state": {"greeted": inp["name"], "files": act["state"]["files"]},
        "next_actions": [{"action_id": "greet", "label": "Greet again", "kind": "form", "fields": [{"name": "name", "label": "Name", "kind": "string"}, {"name": "times", "label": "Times", "kind": "integer"}]}],
    }
`

// slowSource prints a line, then takes a few seconds: longer than a form waits before
// it shows the run page.
const slowSource = `import time

def run_tool(input_dir, output_dir):
    print("halfway there", flush=True)
    time.sleep(8)
    return {"outputs": [{"kind": "markdown", "markdown": "**Klart.**"}]}
`

// scriptSource returns HTML whose script, if it ever ran, would tell the page.
const scriptSource = `def run_tool(input_dir, output_dir):
    return ('<p id="probe-marker">probe</p>'
            '<script id="probe-script">'
            'document.getElementById("probe-marker").setAttribute("data-ran", "1");'
            'parent.postMessage("ran", "*"); top.postMessage("ran", "*");'
            'try { parent.document.title = "pwned"; } catch (e) {}'
            '</script>')
`
