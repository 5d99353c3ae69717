package web_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshots takes docs/web-ui.md's pictures of the catalogue, a run page and the editor,
// at desktop width and at 360 px, and checks that no page is wider than its window (a
// page that scrolls sideways at 360 px is not readable on a phone). With -screenshots DIR
// the pictures are also written there.
func (s *site) screenshots(t *testing.T) {
	ctx := s.as(t, "author")
	runURL := s.runPreview(t, ctx)
	// The editor beside a sandbox run that offers a next action.
	author := s.userClient(t, "author")
	_, v, err := author.CreateTool(context.Background(), "greeting-demo", "Hälsning", "Greets someone, in two steps.", greetingSource, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := author.EditorRun(context.Background(), v.ID, []string{s.demo["index.html"]}, nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	// A tool page with a typed form, usage instructions and a settings panel, and its
	// editor with both schemas.
	createEcho(t, author, "gruppera-demo")
	pages := []struct{ name, url string }{
		{"catalogue", s.base + "/"},
		{"run", runURL},
		{"editor", s.base + "/editor/greeting-demo"},
		{"tool", s.base + "/tools/gruppera-demo"},
		{"editor-schemas", s.base + "/editor/gruppera-demo"},
	}
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1280, 900}, {"360", 360, 780}} {
		for _, p := range pages {
			var shot []byte
			var scrollWidth int64
			run(t, ctx,
				chromedp.EmulateViewport(size.width, size.height),
				chromedp.Navigate(p.url),
				chromedp.WaitVisible("main h1", chromedp.ByQuery),
				chromedp.Sleep(300*time.Millisecond),
				chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollWidth),
				chromedp.FullScreenshot(&shot, 100),
			)
			if scrollWidth > size.width {
				t.Errorf("%s at %d px is %d px wide: it scrolls sideways", p.name, size.width, scrollWidth)
			}
			cfg, err := png.DecodeConfig(bytes.NewReader(shot))
			if err != nil {
				t.Fatalf("%s at %s: not a PNG: %v", p.name, size.name, err)
			}
			if int64(cfg.Width) != size.width {
				t.Errorf("%s at %s is %d px wide; want %d", p.name, size.name, cfg.Width, size.width)
			}
			if *screenshotDir != "" {
				if err := os.WriteFile(filepath.Join(*screenshotDir, p.name+"-"+size.name+".png"), shot, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
