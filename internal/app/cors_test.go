package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/testutil"
)

// corsPage is a page of another origin that stages a file with a token: a PUT to the
// files API, a resumable upload through tus (create, then PATCH), and a read of the file;
// it shows what it could read of each answer, or the error, in #out.
const corsPage = `<!doctype html><title>cors</title><pre id="out">…</pre><script>
const server = %q, token = %q;
const auth = {"Authorization": "Bearer " + token};
(async () => {
  const out = [];
  try {
    let r = await fetch(server + "/api/v1/files/files/cors.txt", {method: "PUT", headers: {...auth, "Content-Type": "text/plain"}, body: "från en annan sida"});
    out.push("put " + r.status);
    r = await fetch(server + "/api/v1/uploads/", {method: "POST", headers: {...auth, "Tus-Resumable": "1.0.0", "Upload-Length": "5",
      "Upload-Metadata": "filename " + btoa("tus.txt") + ",key " + btoa("files/tus.txt")}});
    const loc = r.headers.get("Location");
    out.push("create " + r.status + " location=" + (loc ? "yes" : "no"));
    r = await fetch(new URL(loc, server), {method: "PATCH", headers: {...auth, "Tus-Resumable": "1.0.0", "Upload-Offset": "0",
      "Content-Type": "application/offset+octet-stream"}, body: "hello"});
    out.push("patch " + r.status + " offset=" + r.headers.get("Upload-Offset") + " key=" + r.headers.get("X-File-Key"));
    r = await fetch(server + "/api/v1/files/files/cors.txt", {headers: auth});
    out.push("get " + r.status + " etag=" + (r.headers.get("ETag") ? "yes" : "no") + " " + await r.text());
  } catch (e) {
    out.push("error " + e.name);
  }
  document.getElementById("out").textContent = out.join("\n");
})();
</script>`

// TestCORSFromAnotherOrigin: with SKRIP_CORS_ORIGINS naming a page's origin, Chromium
// on that page stages files with a token through the files API and tus, and reads the
// answers' headers; a page of an origin not named gets nothing.
func TestCORSFromAnotherOrigin(t *testing.T) {
	chrome := chromium(t)
	var allowed, other *httptest.Server
	page := func(server, token string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, corsPage, server, token)
		})
	}
	allowed = httptest.NewServer(nil)
	other = httptest.NewServer(nil)
	t.Cleanup(allowed.Close)
	t.Cleanup(other.Close)

	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.CORSOrigins = []string{allowed.URL}
	env := apptest.Start(t, cfg)
	_, u := env.User(t, "ulla", "user")
	allowed.Config.Handler = page(env.URL, u.Token)
	other.Config.Handler = page(env.URL, u.Token)

	ctx := browser(t, chrome)
	read := func(url string) string {
		var out string
		err := chromedp.Run(ctx, chromedp.Navigate(url),
			chromedp.Poll(`document.getElementById("out").textContent !== "…"`, nil, chromedp.WithPollingTimeout(30*time.Second)),
			chromedp.Text("#out", &out, chromedp.ByID))
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		return out
	}
	got := read(allowed.URL)
	want := "put 201\ncreate 201 location=yes\npatch 204 offset=5 key=files/tus.txt\nget 200 etag=yes från en annan sida"
	if got != want {
		t.Fatalf("the allowed origin's page saw:\n%s\nwant:\n%s", got, want)
	}
	if got := read(other.URL); got != "error TypeError" {
		t.Fatalf("another origin's page saw:\n%s\nwant the browser to refuse it", got)
	}

	// The preflight names what may be sent, and never allows credentials (the web's
	// sign-in cookie); other routes answer no page elsewhere.
	req, _ := http.NewRequest(http.MethodOptions, env.URL+"/api/v1/files/files/x", nil)
	req.Header.Set("Origin", allowed.URL)
	req.Header.Set("Access-Control-Request-Method", "PUT")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != allowed.URL ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "If-Match") || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	req, _ = http.NewRequest(http.MethodGet, env.URL+"/api/v1/me", nil)
	req.Header.Set("Origin", allowed.URL)
	req.Header.Set("Authorization", "Bearer "+u.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("GET /api/v1/me from another origin: %d, Access-Control-Allow-Origin %q; want none", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

// chromium is the path of a Chromium to drive.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testutil.Missing(t, "chromium", "no chromium in PATH", "apt-get install chromium")
	return ""
}

// browser starts chrome headless for the test and returns a tab of it.
func browser(t *testing.T, chrome string) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}
