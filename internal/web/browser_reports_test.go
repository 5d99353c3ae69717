package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserReports: a teacher whose run crashed reports it to the author from the
// run's page ("Rapportera till författaren", files not shared unless ticked), and the
// page says it was sent; the author finds the reports from the editor's index with the run's
// error summary, the file names only of the report that shared them, and closes one.
// The reports page fits a phone.
func TestBrowserReports(t *testing.T) {
	s := startSite(t)
	defer s.close()
	ctx := context.Background()
	author := s.userClient(t, "author")
	publish(t, author, "krasch-rapport", "Krasch", crashSource, crashSchema)
	teacherAPI := s.userClient(t, "teacher")
	file := filepath.Join(t.TempDir(), "klasslista.txt")
	if err := os.WriteFile(file, []byte("Ada\nBo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	crashed := func() string {
		t.Helper()
		rn, err := teacherAPI.RunFiles(ctx, "krasch-rapport", []string{file}, map[string]any{"namn": "Ada"}, time.Minute)
		if err != nil || rn.Status != "failed" {
			t.Fatalf("the crashing run: %+v, %v", rn, err)
		}
		return rn.RunID
	}
	private, shared := crashed(), crashed()

	teacher := s.as(t, "teacher")
	s.useLang(t, teacher, "sv")
	report := func(id, message string, share bool) {
		t.Helper()
		run(t, teacher, chromedp.Navigate(s.base+"/runs/"+id), chromedp.WaitVisible("form[data-report-form]", chromedp.ByQuery))
		if got := text(t, teacher, "[data-report] h2"); got != "Rapportera till författaren" {
			t.Errorf("the report box is headed %q", got)
		}
		if got := text(t, teacher, "[data-report] .hint"); !strings.Contains(got, "author") {
			t.Errorf("the report box does not name the author: %q", got)
		}
		var ticked bool
		run(t, teacher, chromedp.Evaluate(`document.querySelector("[data-report-form] input[name=share_files]").checked`, &ticked))
		if ticked {
			t.Error("sharing the files is ticked before the teacher chose it")
		}
		if got := text(t, teacher, "[data-report-form] label[for^=report-share]"); got != "Författaren får se mina filer" {
			t.Errorf("the checkbox reads %q", got)
		}
		actions := []chromedp.Action{chromedp.SendKeys("[data-report-form] textarea", message, chromedp.ByQuery)}
		if share {
			actions = append(actions, chromedp.Click("[data-report-form] input[name=share_files]", chromedp.ByQuery))
		}
		actions = append(actions, chromedp.Click("[data-report-form] button[type=submit]", chromedp.ByQuery),
			chromedp.WaitVisible("[data-report-sent]", chromedp.ByQuery))
		run(t, teacher, actions...)
		if got := text(t, teacher, "[data-report-sent]"); got != "Tack! Rapporten är skickad till author." {
			t.Errorf("after sending, the page says %q", got)
		}
	}
	report(private, "Det blev fel med klasslistan.", false)
	report(shared, "Samma fel igen.", true)
	// The page still says so later, and offers no second report.
	run(t, teacher, chromedp.Navigate(s.base+"/runs/"+private), chromedp.WaitVisible("[data-report-sent]", chromedp.ByQuery))
	var forms int
	run(t, teacher, chromedp.Evaluate(`document.querySelectorAll("form[data-report-form]").length`, &forms))
	if forms != 0 {
		t.Error("a reported run offers the form again")
	}
	// A teacher maintains no tool: an empty page.
	run(t, teacher, chromedp.Navigate(s.base+"/reports"), chromedp.WaitVisible("[data-no-reports]", chromedp.ByQuery))

	a := s.as(t, "author")
	s.useLang(t, a, "sv")
	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			run(t, a, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/editor"),
				chromedp.WaitVisible("a[data-reports-link]", chromedp.ByQuery), chromedp.Click("a[data-reports-link]", chromedp.ByQuery),
				chromedp.WaitVisible("[data-reports]", chromedp.ByQuery))
			var v struct {
				IDs, Messages, Summaries, Files []string
				Private                         []bool
				HTML                            string
				Scroll, Width                   int64
			}
			run(t, a, chromedp.Evaluate(`(() => {
			  const cards = [...document.querySelectorAll("[data-report]")];
			  return {IDs: cards.map(c => c.dataset.status),
			    Messages: cards.map(c => (c.querySelector("[data-message]") || {}).textContent || ""),
			    Summaries: cards.map(c => (c.querySelector("[data-summary]") || {}).textContent || ""),
			    Files: cards.map(c => (c.querySelector("[data-files-shared]") || {}).textContent || ""),
			    Private: cards.map(c => !!c.querySelector("[data-files-private]")),
			    HTML: document.querySelector("main").innerHTML,
			    Scroll: document.documentElement.scrollWidth, Width: window.innerWidth};
			})()`, &v))
			if len(v.Messages) != 2 || v.Messages[0] != "Samma fel igen." || v.Messages[1] != "Det blev fel med klasslistan." {
				t.Fatalf("the reports page lists %q", v.Messages)
			}
			for i, s := range v.Summaries {
				if !strings.HasPrefix(s, "Tool execution failed") {
					t.Errorf("report %d's summary is %q", i, s)
				}
			}
			if !strings.Contains(v.Files[0], "klasslista.txt") || v.Private[0] || !v.Private[1] || strings.Count(v.HTML, "klasslista.txt") != 1 {
				t.Errorf("the shared report's files: %q; the private one's shown: %v", v.Files[0], !v.Private[1])
			}
			if v.Scroll > v.Width {
				t.Errorf("the reports page is %d px wide in a %d px window", v.Scroll, v.Width)
			}
		})
	}

	// The author closes the older report.
	run(t, a, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(s.base+"/reports"), chromedp.WaitVisible("[data-reports]", chromedp.ByQuery),
		chromedp.Click("[data-report]:nth-child(2) form[data-close] button", chromedp.ByQuery),
		chromedp.WaitVisible("[data-report][data-status=closed]", chromedp.ByQuery))
	var statuses []string
	run(t, a, chromedp.Evaluate(`[...document.querySelectorAll("[data-report]")].map(c => c.dataset.status)`, &statuses))
	if len(statuses) != 2 || statuses[0] != "open" || statuses[1] != "closed" {
		t.Errorf("after closing the older report: %v", statuses)
	}
	var forms2 int
	run(t, a, chromedp.Evaluate(`document.querySelectorAll("[data-report][data-status=closed] form[data-close]").length`, &forms2))
	if forms2 != 0 {
		t.Error("a closed report still has its close button")
	}
}
