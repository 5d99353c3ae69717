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
// in Swedish and in English at 1280 and 390 px, and checks that no page is wider than its window (a
// page that scrolls sideways at 390 px is not readable on a phone). With -screenshots DIR
// the pictures are also written there, as DIR/<lang>/<page>-<width>.png.
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
		{"history", s.base + "/runs"},
		{"editor-schemas", s.base + "/editor/gruppera-demo"},
		{"editor-new", s.base + "/editor"},
	}
	for _, lang := range []string{"sv", "en"} {
		s.useLang(t, ctx, lang)
		for _, size := range viewports {
			for _, p := range pages {
				var shot []byte
				var scrollWidth int64
				var pageLang string
				run(t, ctx,
					chromedp.EmulateViewport(size.width, size.height),
					chromedp.Navigate(p.url),
					chromedp.WaitVisible("main h1", chromedp.ByQuery),
					chromedp.Sleep(300*time.Millisecond),
					chromedp.Evaluate(`document.documentElement.scrollWidth`, &scrollWidth),
					chromedp.Evaluate(`document.documentElement.lang`, &pageLang),
					chromedp.FullScreenshot(&shot, 100),
				)
				if pageLang != lang {
					t.Errorf("%s in %s is a page in %q", p.name, lang, pageLang)
				}
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
					dir := filepath.Join(*screenshotDir, lang)
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, p.name+"-"+size.name+".png"), shot, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}
