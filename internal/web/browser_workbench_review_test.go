package web_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// reviewState is what the review test reads of a page in one evaluation.
type reviewState struct {
	Box, Status, Comment, Latest, Error, Submitted, Source string
	SubmitForms, PublishButtons, SavePublish               int
	Cards                                                  []string
	Nav                                                    bool
	Scroll, Width                                          int64
}

const reviewJS = `(() => {
  const txt = s => { const e = document.querySelector(s); return e ? e.textContent.trim() : ""; };
  return {Box: txt("[data-review-box]"), Status: (document.querySelector("[data-review-box] > p [data-review-status]") || {dataset: {}}).dataset.reviewStatus || "",
    Comment: txt("[data-review-comment]"), Latest: txt("[data-review-latest]"), Error: txt("[data-review-error]") || txt("#review-error"),
    Submitted: txt("[data-review-submitted]"), Source: txt("[data-review-source] pre"),
    SubmitForms: document.querySelectorAll("form[data-review-submit]").length,
    PublishButtons: document.querySelectorAll("form[action$='/publish']").length,
    SavePublish: document.querySelectorAll("button[name=publish]").length,
    Cards: [...document.querySelectorAll("[data-review]")].map(c => c.dataset.status + " " + c.querySelector("h2").textContent.trim()),
    Nav: !!document.querySelector("a[data-nav-reviews]"),
    Scroll: document.documentElement.scrollWidth, Width: window.innerWidth};
})()`

// TestBrowserReviewBeforePublishing: with SKRIP_REVIEW=on, an author's editor offers
// "Skicka för granskning" with a note instead of "Publicera", and a direct publish is
// refused; a reviewer finds the version in "Granskning", is told a comment is needed,
// asks for changes with one; the author sees the comment in the editor, fixes the code,
// submits again, and the reviewer's "Publicera" publishes exactly the fixed version,
// which the author then sees as published. The queue fits a phone.
func TestBrowserReviewBeforePublishing(t *testing.T) {
	t.Setenv("SKRIP_REVIEW", "on") // the server started below inherits it
	s := startSite(t)
	defer s.close()
	bg := context.Background()
	if _, err := s.admin.CreateUser(bg, "rut", "reviewer", password); err != nil {
		t.Fatal(err)
	}
	author := s.userClient(t, "author")
	if _, _, err := author.CreateTool(bg, "granskas", "Granskas", "", printSource, false); err != nil {
		t.Fatal(err)
	}
	read := func(ctx context.Context) reviewState {
		t.Helper()
		var st reviewState
		run(t, ctx, chromedp.Evaluate(reviewJS, &st))
		return st
	}

	a := s.as(t, "author")
	s.useLang(t, a, "sv")
	run(t, a, chromedp.Navigate(s.base+"/editor/granskas"), chromedp.WaitVisible("[data-review-box]", chromedp.ByQuery))
	st := read(a)
	if st.SubmitForms != 1 || st.PublishButtons != 0 || st.SavePublish != 0 || st.Nav {
		t.Fatalf("the author's editor with review on: %+v", st)
	}
	if got := text(t, a, "form[data-review-submit] button"); got != "Skicka för granskning" {
		t.Errorf("the submit button reads %q", got)
	}
	// Publishing directly is refused on the server too.
	var status int
	evalJS(t, a, `fetch("/editor/versions/" + new URL(document.querySelector("form[data-review-submit]").action).pathname.split("/")[3] + "/publish",
		{method: "POST", body: new URLSearchParams({csrf: document.querySelector("input[name=csrf]").value}), redirect: "manual"}).then(r => r.status)`, &status)
	if status != http.StatusForbidden {
		t.Errorf("an author's direct publish answered %d", status)
	}
	evalJS(t, a, `fetch("/reviews").then(r => r.status)`, &status)
	if status != http.StatusForbidden {
		t.Errorf("an author's GET /reviews answered %d", status)
	}
	run(t, a, chromedp.SendKeys("#review-note", "Första versionen", chromedp.ByQuery),
		chromedp.Click("form[data-review-submit] button", chromedp.ByQuery), chromedp.WaitVisible("[data-review-submitted]", chromedp.ByQuery))
	st = read(a)
	if st.Status != "pending" || st.SubmitForms != 0 || !strings.Contains(st.Box, "Första versionen") || !strings.Contains(st.Box, "väntar på granskning") {
		t.Fatalf("after submitting: %+v", st)
	}

	// The reviewer finds it in the queue; a request for changes needs a comment.
	r := s.as(t, "rut")
	s.useLang(t, r, "sv")
	run(t, r, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible("a[data-nav-reviews]", chromedp.ByQuery),
		chromedp.Click("a[data-nav-reviews]", chromedp.ByQuery), chromedp.WaitVisible("[data-reviews]", chromedp.ByQuery))
	st = read(r)
	if len(st.Cards) != 1 || st.Cards[0] != "pending Granskas" {
		t.Fatalf("the queue: %+v", st)
	}
	if got := text(t, r, "[data-review] [data-review-note]"); got != "Första versionen" {
		t.Errorf("the queue shows the note %q", got)
	}
	if got := text(t, r, "[data-review-approve] button"); !strings.HasPrefix(got, "Publicera") {
		t.Errorf("the approve button reads %q", got)
	}
	if got := text(t, r, "[data-review-changes] button"); !strings.HasPrefix(got, "Begär ändringar") {
		t.Errorf("the request-changes button reads %q", got)
	}
	run(t, r, chromedp.Click("[data-review-changes] button", chromedp.ByQuery), chromedp.WaitVisible("[data-review-error]", chromedp.ByQuery))
	if st = read(r); st.Error != "Skriv en kommentar om vad som behöver ändras." || len(st.Cards) != 1 || st.Cards[0] != "pending Granskas" {
		t.Fatalf("a request for changes without a comment: %+v", st)
	}
	run(t, r, chromedp.SendKeys("[data-review-changes] textarea", "Skriv ut en hälsning också.", chromedp.ByQuery),
		chromedp.Click("[data-review-changes] button", chromedp.ByQuery), chromedp.WaitVisible("[data-no-reviews]", chromedp.ByQuery))

	// The author sees the comment, fixes the code and submits again.
	run(t, a, chromedp.Navigate(s.base+"/editor/granskas"), chromedp.WaitVisible("[data-review-comment]", chromedp.ByQuery))
	st = read(a)
	if st.Status != "changes_requested" || !strings.Contains(st.Comment, "Skriv ut en hälsning också.") || st.SubmitForms != 1 {
		t.Fatalf("the author's editor after the request for changes: %+v", st)
	}
	for _, vp := range viewports {
		run(t, a, chromedp.EmulateViewport(vp.width, vp.height), chromedp.ScrollIntoView("[data-review-box]", chromedp.ByQuery))
		if st := read(a); st.Scroll > st.Width {
			t.Errorf("the editor with the review box is %d px wide in a %d px window", st.Scroll, st.Width)
		}
		if *screenshotDir != "" {
			var shot []byte
			run(t, a, chromedp.Screenshot("[data-review-box]", &shot, chromedp.ByQuery))
			if err := os.WriteFile(filepath.Join(*screenshotDir, "review-editor-sv-"+vp.name+".png"), shot, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(t, a, chromedp.EmulateViewport(1280, 900))
	leaveAnyway(a) // the accessibility check's Tab walk types into the code box
	for _, f := range audit(t, a, "", "sv", true) {
		t.Errorf("the editor with the review's comment: %s", f)
	}
	run(t, a, chromedp.Navigate(s.base+"/editor/granskas"), chromedp.WaitVisible("[data-review-comment]", chromedp.ByQuery))
	fixed := "# Med hälsning\n" + printSource
	run(t, a, chromedp.WaitVisible(".CodeMirror", chromedp.ByQuery), setCode(fixed),
		chromedp.Click("form[data-editor-form] button[type=submit]", chromedp.ByQuery))
	waitPath(t, a, "/editor/granskas", s.base+"/editor/granskas")
	run(t, a, chromedp.WaitVisible("[data-review-latest]", chromedp.ByQuery))
	st = read(a)
	if !strings.Contains(st.Latest, "Skriv ut en hälsning också.") || st.SubmitForms != 1 || st.Status != "" {
		t.Fatalf("the fixed version's editor shows the earlier review's comment: %+v", st)
	}
	run(t, a, chromedp.SendKeys("#review-note", "Hälsning tillagd", chromedp.ByQuery),
		chromedp.Click("form[data-review-submit] button", chromedp.ByQuery), chromedp.WaitVisible("[data-review-submitted]", chromedp.ByQuery))
	fixedURL := location(t, a)

	// The reviewer publishes it, at phone width.
	for _, vp := range viewports {
		t.Run(vp.name, func(t *testing.T) {
			run(t, r, chromedp.EmulateViewport(vp.width, vp.height), chromedp.Navigate(s.base+"/reviews"), chromedp.WaitVisible("[data-reviews]", chromedp.ByQuery))
			st := read(r)
			if len(st.Cards) != 1 || st.Cards[0] != "pending Granskas" || st.Scroll > st.Width || !strings.HasPrefix(st.Source, "# Med hälsning") {
				t.Fatalf("the queue at %s px: %+v", vp.name, st)
			}
			shoot(t, r, "review-queue-sv-"+vp.name)
			// The queue passes the accessibility checks every page does (a11y_test.go).
			for _, f := range audit(t, r, "", "sv", true) {
				t.Errorf("the queue at %s px: %s", vp.name, f)
			}
		})
	}
	run(t, r, chromedp.Click("[data-review-approve] button", chromedp.ByQuery), chromedp.WaitVisible("[data-no-reviews]", chromedp.ByQuery))
	var tool struct {
		PublishedVersionID *string `json:"published_version_id"`
	}
	if err := author.Do(bg, http.MethodGet, "/api/v1/tools/granskas", nil, &tool); err != nil {
		t.Fatal(err)
	}
	if tool.PublishedVersionID == nil || !strings.Contains(fixedURL, *tool.PublishedVersionID) {
		t.Fatalf("published %v; the fixed version is at %s", tool.PublishedVersionID, fixedURL)
	}
	var src struct {
		Source string `json:"source"`
	}
	if err := author.Do(bg, http.MethodGet, "/api/v1/tool-versions/"+*tool.PublishedVersionID, nil, &src); err != nil || strings.ReplaceAll(src.Source, "\r\n", "\n") != fixed { // a form's text box sends CRLF
		t.Fatalf("the published source is %q, %v", src.Source, err)
	}
	run(t, a, chromedp.Navigate(fixedURL), chromedp.WaitVisible("[data-published]", chromedp.ByQuery))
	if st := read(a); st.Status != "approved" || st.SubmitForms != 0 {
		t.Fatalf("the author's editor after approval: %+v", st)
	}
}
