package api_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

const reviewedTool = "def run_tool(input_dir, output_dir):\n    return {\"outputs\": []}\n"

// jsonEsc is s as the inside of a JSON string.
func jsonEsc(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// exportEntry is the text of entry name in the export of user, which the admin asks for.
func exportEntry(t *testing.T, env *apptest.Env, user, name string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", env.URL+"/api/v1/users/"+user+"/export", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("the export of %s: %d, %v", user, resp.StatusCode, err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			text, _ := io.ReadAll(rc)
			return string(text)
		}
	}
	t.Fatalf("the export of %s has no %s", user, name)
	return ""
}

func reasonOf(a answer) string {
	e, _ := a.body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	s, _ := d["reason"].(string)
	return s
}

// TestReviewBeforePublishing drives review with SKRIP_REVIEW=on through the API: an
// author may not publish (directly, or by creating a tool published) but submits; users
// and authors may not see the queue; a reviewer reads the submitted version, asks for
// changes (a comment is required and bounded) and cannot decide twice; the author sees
// the comment, submits a fixed version, which makes a new review, and a reviewer's
// approval publishes exactly that version; a reviewer does not decide their own
// submission, an admin may, and admins publish directly; missing reviews are 404; and
// every submission and decision is in the audit log.
func TestReviewBeforePublishing(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		cfg := apptest.Config(t, b)
		cfg.Review = true
		env := apptest.Start(t, cfg)
		_, ada := env.User(t, "ada", "author")
		_, carl := env.User(t, "carl", "author")
		_, rita := env.User(t, "rita", "reviewer")
		_, rolf := env.User(t, "rolf", "reviewer")
		_, ulla := env.User(t, "ulla", "user")
		do := func(method, path, token, body string) answer {
			t.Helper()
			if body != "" {
				return call(t, env, method, path, token, strings.NewReader(body))
			}
			return call(t, env, method, path, token, nil)
		}
		want := func(a answer, status int, reason string, what string) {
			t.Helper()
			if a.status != status || (reason != "" && reasonOf(a) != reason) {
				t.Fatalf("%s: %d %s; want %d %s", what, a.status, a.raw, status, reason)
			}
		}

		if a := do("GET", "/api/v1/me", rita.Token, ""); a.status != 200 || a.body["role"] != "reviewer" {
			t.Fatalf("a reviewer: %d %s", a.status, a.raw)
		}
		want(do("POST", "/api/v1/tools", ada.Token, `{"slug":"kalk","title":"Kalk","source":"`+jsonEsc(reviewedTool)+`","publish":true}`),
			403, "review_required", "creating a tool published")
		if a := do("GET", "/api/v1/tools/kalk", env.AdminToken, ""); a.status != 404 {
			t.Fatalf("a refused create left a tool: %d %s", a.status, a.raw)
		}
		a := do("POST", "/api/v1/tools", ada.Token, `{"slug":"kalk","title":"Kalk","source":"`+jsonEsc(reviewedTool)+`"}`)
		want(a, 201, "", "creating a draft")
		v1 := a.body["version"].(map[string]any)["id"].(string)
		want(do("POST", "/api/v1/tool-versions/"+v1+"/publish", ada.Token, ""), 403, "review_required", "an author publishing")
		want(do("POST", "/api/v1/tool-versions/"+v1+"/publish", rita.Token, ""), 404, "version_not_found", "a reviewer publishing another's draft")

		// The queue is for reviewers and admins.
		for _, tok := range []string{ulla.Token, ada.Token} {
			want(do("GET", "/api/v1/reviews", tok, ""), 403, "reviewer_only", "listing reviews")
		}
		want(do("POST", "/api/v1/tool-versions/"+v1+"/submit", ada.Token, `{"note":"`+strings.Repeat("n", 2001)+`"}`), 400, "invalid_review", "a note over the cap")
		want(do("POST", "/api/v1/tool-versions/"+v1+"/submit", ulla.Token, `{}`), 404, "version_not_found", "a user submitting another's version")
		want(do("POST", "/api/v1/tool-versions/"+v1+"/submit", carl.Token, `{}`), 404, "version_not_found", "an author submitting another's version")
		a = do("POST", "/api/v1/tool-versions/"+v1+"/submit", ada.Token, `{"note":"Första versionen"}`)
		want(a, 201, "", "submitting")
		first := a.body["id"].(string)
		if a.body["status"] != "pending" || a.body["author"] != "ada" || a.body["note"] != "Första versionen" || a.body["version_id"] != v1 ||
			a.body["tool"] != "kalk" || a.body["published_version_id"] != nil || a.body["decided_by"] != nil {
			t.Fatalf("the submission: %s", a.raw)
		}
		want(do("POST", "/api/v1/tool-versions/"+v1+"/submit", ada.Token, `{}`), 409, "review_pending", "submitting twice")

		// A reviewer sees the queue and reads the submitted version; an author who is
		// not the tool's does not.
		a = do("GET", "/api/v1/reviews", rita.Token, "")
		want(a, 200, "", "the queue")
		if list := a.body["reviews"].([]any); len(list) != 1 || list[0].(map[string]any)["id"] != first ||
			list[0].(map[string]any)["submitted_at"] == nil {
			t.Fatalf("the queue: %s", a.raw)
		}
		want(do("GET", "/api/v1/reviews?status=bogus", rita.Token, ""), 400, "invalid_review", "a bad status")
		want(do("GET", "/api/v1/reviews?limit=0", rita.Token, ""), 400, "invalid_review", "a bad limit")
		want(do("GET", "/api/v1/tool-versions/"+v1, rita.Token, ""), 200, "", "a reviewer reading the submitted version")
		want(do("GET", "/api/v1/tool-versions/"+v1, carl.Token, ""), 404, "version_not_found", "another author reading it")
		want(do("GET", "/api/v1/reviews/"+first, carl.Token, ""), 404, "review_not_found", "another author reading the review")

		// Asking for changes needs a comment, within the cap, and a reviewer.
		want(do("POST", "/api/v1/reviews/"+first+"/request-changes", ada.Token, `{"comment":"x"}`), 403, "reviewer_only", "an author deciding")
		want(do("POST", "/api/v1/reviews/"+first+"/approve", ulla.Token, ""), 403, "reviewer_only", "a user approving")
		want(do("POST", "/api/v1/reviews/"+first+"/request-changes", rita.Token, `{}`), 400, "invalid_review", "no comment")
		want(do("POST", "/api/v1/reviews/"+first+"/request-changes", rita.Token, `{"comment":"   "}`), 400, "invalid_review", "a blank comment")
		want(do("POST", "/api/v1/reviews/"+first+"/request-changes", rita.Token, `{"comment":"`+strings.Repeat("k", 4001)+`"}`), 400, "invalid_review", "a comment over the cap")
		a = do("POST", "/api/v1/reviews/"+first+"/request-changes", rita.Token, `{"comment":"Lägg till en rubrik."}`)
		want(a, 200, "", "requesting changes")
		if a.body["status"] != "changes_requested" || a.body["comment"] != "Lägg till en rubrik." || a.body["decided_by"] != "rita" || a.body["decided_at"] == nil {
			t.Fatalf("changes requested: %s", a.raw)
		}
		want(do("POST", "/api/v1/reviews/"+first+"/approve", rolf.Token, ""), 409, "review_decided", "approving a decided review")
		if a := do("GET", "/api/v1/tools/kalk", env.AdminToken, ""); a.status != 200 || a.body["published_version_id"] != nil {
			t.Fatalf("requesting changes published: %s", a.raw)
		}

		// The author sees the status and the comment.
		a = do("GET", "/api/v1/reviews/"+first, ada.Token, "")
		if a.status != 200 || a.body["status"] != "changes_requested" || a.body["comment"] != "Lägg till en rubrik." {
			t.Fatalf("the author's view: %d %s", a.status, a.raw)
		}
		a = do("GET", "/api/v1/tools/kalk/reviews", ada.Token, "")
		if a.status != 200 || a.body["count"] != float64(1) {
			t.Fatalf("the tool's reviews: %d %s", a.status, a.raw)
		}
		want(do("GET", "/api/v1/tools/kalk/reviews", carl.Token, ""), 404, "tool_not_found", "another author's view of the tool's reviews")

		// A fixed version makes a new review; approving it publishes exactly it, not
		// the newest version.
		a = do("POST", "/api/v1/tools/kalk/versions", ada.Token, `{"source":"`+jsonEsc("# Rubrik\n"+reviewedTool)+`"}`)
		want(a, 201, "", "a fixed version")
		v2 := a.body["id"].(string)
		a = do("POST", "/api/v1/tool-versions/"+v2+"/submit", ada.Token, `{"note":"Rubrik tillagd"}`)
		want(a, 201, "", "submitting again")
		second := a.body["id"].(string)
		if second == first {
			t.Fatal("a resubmission reused the review")
		}
		a = do("POST", "/api/v1/tools/kalk/versions", ada.Token, `{"source":"`+jsonEsc("# senare\n"+reviewedTool)+`"}`)
		want(a, 201, "", "a later version")
		v3 := a.body["id"].(string)
		a = do("POST", "/api/v1/reviews/"+second+"/approve", rolf.Token, "")
		want(a, 200, "", "approving")
		if a.body["status"] != "approved" || a.body["decided_by"] != "rolf" || a.body["published_version_id"] != v2 {
			t.Fatalf("approved: %s", a.raw)
		}
		a = do("GET", "/api/v1/tools/kalk", ulla.Token, "")
		if a.status != 200 || a.body["published_version_id"] != v2 {
			t.Fatalf("after approval the tool publishes %v, want %s (not %s): %s", a.body["published_version_id"], v2, v3, a.raw)
		}
		want(do("POST", "/api/v1/tool-versions/"+v2+"/submit", ada.Token, `{}`), 409, "version_published", "submitting the published version")

		// A newer submission supersedes a waiting one of the same tool.
		a = do("POST", "/api/v1/tool-versions/"+v3+"/submit", ada.Token, `{}`)
		want(a, 201, "", "submitting v3")
		third := a.body["id"].(string)
		if a.body["published_version_id"] != v2 {
			t.Fatalf("the review names the published version to compare against: %s", a.raw)
		}
		want(do("GET", "/api/v1/tool-versions/"+v2, rita.Token, ""), 200, "", "a reviewer reading the published version to compare")
		// The reviewer compares the submission with the published version (the review
		// page's link); another author may not.
		if a := do("GET", "/api/v1/tool-versions/"+v3+"/diff?against="+v2, rita.Token, ""); a.status != 200 || !strings.Contains(a.raw, "+# senare") {
			t.Fatalf("a reviewer comparing the submission with the published version: %d %s", a.status, a.raw)
		}
		want(do("GET", "/api/v1/tool-versions/"+v3+"/diff?against="+v2, carl.Token, ""), 404, "version_not_found", "another author comparing them")
		a = do("POST", "/api/v1/tools/kalk/versions", ada.Token, `{"source":"`+jsonEsc("# v4\n"+reviewedTool)+`"}`)
		v4 := a.body["id"].(string)
		want(do("POST", "/api/v1/tool-versions/"+v4+"/submit", ada.Token, `{}`), 201, "", "submitting v4")
		if a := do("GET", "/api/v1/reviews/"+third, rita.Token, ""); a.body["status"] != "superseded" {
			t.Fatalf("the waiting review of v3: %s", a.raw)
		}
		if a := do("GET", "/api/v1/reviews", rita.Token, ""); a.body["count"] != float64(1) {
			t.Fatalf("the queue holds one review per tool: %s", a.raw)
		}
		if a := do("GET", "/api/v1/reviews?status=all&limit=2", rita.Token, ""); a.body["count"] != float64(2) || a.body["next_cursor"] == nil {
			t.Fatalf("every review, paged: %s", a.raw)
		}

		// A reviewer does not decide their own submission; an admin may.
		a = do("POST", "/api/v1/tools", rita.Token, `{"slug":"ritas","title":"Ritas","source":"`+jsonEsc(reviewedTool)+`"}`)
		rv1 := a.body["version"].(map[string]any)["id"].(string)
		want(do("POST", "/api/v1/tool-versions/"+rv1+"/publish", rita.Token, ""), 403, "review_required", "a reviewer publishing directly")
		a = do("POST", "/api/v1/tool-versions/"+rv1+"/submit", rita.Token, `{}`)
		own := a.body["id"].(string)
		want(do("POST", "/api/v1/reviews/"+own+"/approve", rita.Token, ""), 403, "own_review", "approving one's own")
		want(do("POST", "/api/v1/reviews/"+own+"/request-changes", rita.Token, `{"comment":"x"}`), 403, "own_review", "refusing one's own")
		want(do("POST", "/api/v1/reviews/"+own+"/approve", env.AdminToken, ""), 200, "", "an admin approving")

		// Admins publish directly; missing reviews are 404.
		a = do("POST", "/api/v1/tools", env.AdminToken, `{"slug":"adm","title":"Adm","source":"`+jsonEsc(reviewedTool)+`","publish":true}`)
		want(a, 201, "", "an admin creating a tool published")
		want(do("POST", "/api/v1/tool-versions/"+v4+"/publish", env.AdminToken, ""), 200, "", "an admin publishing")
		for _, p := range []string{"/api/v1/reviews/rv_nope/approve", "/api/v1/reviews/rv_nope/request-changes"} {
			want(do("POST", p, rita.Token, `{"comment":"x"}`), 404, "review_not_found", p)
		}
		want(do("GET", "/api/v1/reviews/rv_nope", rita.Token, ""), 404, "review_not_found", "reading a missing review")
		want(do("POST", "/api/v1/tool-versions/v_nope/submit", ada.Token, `{}`), 404, "version_not_found", "submitting a missing version")

		// The export of ada holds her submissions, with the reviewer's comment; rita's
		// the review she decided.
		for name, want := range map[string]string{"ada": "Rubrik tillagd", "rita": "Lägg till en rubrik."} {
			got := exportEntry(t, env, name, "reviews.json")
			if !strings.Contains(got, want) {
				t.Errorf("%s's reviews.json lacks %q: %s", name, want, got)
			}
		}

		// The audit log holds each submission and decision.
		a = do("GET", "/api/v1/audit?limit=100", env.AdminToken, "")
		seen := map[string]int{}
		for _, e := range a.body["events"].([]any) {
			ev := e.(map[string]any)
			seen[ev["action"].(string)]++
			if ev["action"] == "review_changes_requested" {
				d := ev["details"].(map[string]any)
				if ev["actor"] != "rita" || ev["target"] != "kalk" || d["comment"] != "Lägg till en rubrik." || d["review"] != first {
					t.Errorf("the audit event of the request for changes: %v", ev)
				}
			}
		}
		if seen["review_submitted"] != 5 || seen["review_approved"] != 2 || seen["review_changes_requested"] != 1 {
			t.Fatalf("audit events: %v", seen)
		}
	})
}

// TestReviewOff: with SKRIP_REVIEW off (the default), authors publish as before, and
// a submission is refused as pointless; the reviewer role is given and changed by admins.
func TestReviewOff(t *testing.T) {
	env := apptest.New(t, apptest.Backends[0])
	_, ada := env.User(t, "ada", "author")
	a := call(t, env, "POST", "/api/v1/tools", ada.Token, strings.NewReader(`{"slug":"k","title":"K","source":"`+jsonEsc(reviewedTool)+`","publish":true}`))
	if a.status != 201 {
		t.Fatalf("an author creating a tool published: %d %s", a.status, a.raw)
	}
	v := a.body["version"].(map[string]any)["id"].(string)
	a = call(t, env, "POST", "/api/v1/tools/k/versions", ada.Token, strings.NewReader(`{"source":"`+jsonEsc("# 2\n"+reviewedTool)+`"}`))
	v2 := a.body["id"].(string)
	if a := call(t, env, "POST", "/api/v1/tool-versions/"+v2+"/publish", ada.Token, nil); a.status != 200 {
		t.Fatalf("an author publishing: %d %s", a.status, a.raw)
	}
	if a := call(t, env, "POST", "/api/v1/tool-versions/"+v+"/submit", ada.Token, strings.NewReader(`{}`)); a.status != 409 || reasonOf(a) != "review_off" {
		t.Fatalf("a submission with review off: %d %s", a.status, a.raw)
	}
	a = call(t, env, "PATCH", "/api/v1/users/ada", env.AdminToken, strings.NewReader(`{"role":"reviewer"}`))
	if a.status != 200 || a.body["role"] != "reviewer" {
		t.Fatalf("making ada a reviewer: %d %s", a.status, a.raw)
	}
	if a := call(t, env, "GET", "/api/v1/reviews", ada.Token, nil); a.status != 200 || a.body["count"] != float64(0) {
		t.Fatalf("a reviewer's empty queue: %d %s", a.status, a.raw)
	}
	if a := call(t, env, "PATCH", "/api/v1/users/ada", ada.Token, strings.NewReader(`{"role":"admin"}`)); a.status != 403 {
		t.Fatalf("a reviewer changing roles: %d %s", a.status, a.raw)
	}
}

// TestReviewAmongMaintainers: a tool's co-maintainer reads the review of its version,
// and a reviewer who maintains the tool does not approve a version they wrote that
// another maintainer submitted (a review found both).
func TestReviewAmongMaintainers(t *testing.T) {
	cfg := apptest.Config(t, apptest.Backends[0])
	cfg.Review = true
	env := apptest.Start(t, cfg)
	_, ada := env.User(t, "ada", "author")
	_, carl := env.User(t, "carl", "author")
	_, rita := env.User(t, "rita", "reviewer")
	_, rolf := env.User(t, "rolf", "reviewer")
	do := func(method, path, token, body string) answer {
		t.Helper()
		return call(t, env, method, path, token, strings.NewReader(body))
	}
	if a := do("POST", "/api/v1/tools", ada.Token, `{"slug":"delad","title":"Delad","source":"`+jsonEsc(reviewedTool)+`"}`); a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	for _, who := range []string{"carl", "rita"} {
		if a := do("POST", "/api/v1/tools/delad/maintainers", ada.Token, `{"user":"`+who+`"}`); a.status >= 300 {
			t.Fatalf("adding %s: %d %s", who, a.status, a.raw)
		}
	}
	a := do("POST", "/api/v1/tools/delad/versions", rita.Token, `{"source":"`+jsonEsc("# rita\n"+reviewedTool)+`"}`)
	v := a.body["id"].(string)
	a = do("POST", "/api/v1/tool-versions/"+v+"/submit", ada.Token, `{}`)
	if a.status != 201 {
		t.Fatalf("submit: %d %s", a.status, a.raw)
	}
	id := a.body["id"].(string)
	if a := do("GET", "/api/v1/reviews/"+id, carl.Token, ""); a.status != 200 {
		t.Fatalf("a co-maintainer reading the review: %d %s", a.status, a.raw)
	}
	if a := do("POST", "/api/v1/reviews/"+id+"/approve", rita.Token, ""); a.status != 403 || reasonOf(a) != "own_review" {
		t.Fatalf("a reviewer approving the version she wrote: %d %s", a.status, a.raw)
	}
	if a := do("POST", "/api/v1/reviews/"+id+"/approve", rolf.Token, ""); a.status != 200 {
		t.Fatalf("another reviewer approving: %d %s", a.status, a.raw)
	}
}
