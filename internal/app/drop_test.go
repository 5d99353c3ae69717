package app_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestDropPage: an upload link's URL opened in a browser is a Swedish page that sends
// the chosen file to the link: it lands as the owner's file; a file of a type the link
// does not take is refused in Swedish and stores nothing; a spent link's page says so.
func TestDropPage(t *testing.T) {
	ctx := browser(t, chromium(t))
	env := apptest.New(t, apptest.Backends[0])
	uc, u := env.User(t, "ulla", "user")
	var link struct {
		URL string `json:"url"`
	}
	if err := uc.Do(context.Background(), "POST", "/api/v1/files/files/inlamning/svar.pdf/upload-links", map[string]any{"ttl": "1h", "content_types": []string{"application/pdf"}}, &link); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pdf, txt := filepath.Join(dir, "mitt svar.pdf"), filepath.Join(dir, "anteckning.txt")
	os.WriteFile(pdf, []byte("%PDF-1.4 svar"), 0o644)
	os.WriteFile(txt, []byte("hej"), 0o644)
	status := func(file string) string {
		t.Helper()
		var got string
		err := chromedp.Run(ctx, chromedp.Navigate(link.URL), chromedp.WaitVisible("#drop-file", chromedp.ByID),
			chromedp.SetUploadFiles("#drop-file", []string{file}, chromedp.ByID),
			chromedp.Click("#drop-form button", chromedp.ByQuery),
			chromedp.Poll(`(() => { const s = document.getElementById("drop-status").textContent; return s && !s.startsWith("Skickar") })()`, nil, chromedp.WithPollingTimeout(30*time.Second)),
			chromedp.Text("#drop-status", &got, chromedp.ByID))
		if err != nil {
			t.Fatalf("sending %s: %v", file, err)
		}
		return got
	}
	var heading string
	// The page speaks the browser's language; this one's is made Swedish, as the language
	// switch at the foot of every page does.
	if err := chromedp.Run(ctx, chromedp.Navigate(env.URL+"/lang/sv?back=/signin")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Run(ctx, chromedp.Navigate(link.URL), chromedp.Text("h1", &heading, chromedp.ByQuery)); err != nil || heading != "Lämna en fil" {
		t.Fatalf("the drop page's heading: %q, %v", heading, err)
	}
	if got := status(txt); !strings.Contains(got, "text/plain") || !strings.Contains(got, "application/pdf") || !strings.Contains(got, "Välj en annan fil") {
		t.Fatalf("a text file on the page: %q", got)
	}
	if _, err := uc.FileInfoOf(context.Background(), "files/inlamning/svar.pdf"); err == nil {
		t.Fatal("a refused file was stored")
	}
	if got := status(pdf); !strings.HasPrefix(got, "Klart: mitt svar.pdf") {
		t.Fatalf("a PDF on the page: %q", got)
	}
	var body strings.Builder
	fi, err := uc.Download(context.Background(), "files/inlamning/svar.pdf", func(client.FileInfo) (io.Writer, error) { return &body, nil })
	if err != nil || body.String() != "%PDF-1.4 svar" || fi.Name != "mitt svar.pdf" {
		t.Fatalf("the owner's file: %+v %q %v", fi, body.String(), err)
	}
	_ = u
	if err := chromedp.Run(ctx, chromedp.Navigate(link.URL), chromedp.Text("h1", &heading, chromedp.ByQuery)); err != nil || heading != "Länken fungerar inte" {
		t.Fatalf("the spent link's page: %q, %v", heading, err)
	}
}
