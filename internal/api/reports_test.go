package api_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

const crashTool = `
def run_tool(input_dir, output_dir):
    raise ValueError("boom")
`

// TestProblemReports: a run's owner, and no one else, reports it once; the tool's
// author and admins see the report with the run's error summary, and another author
// does not; the run's file names show only when the reporter shared them; the listing
// pages with its cursor; and the author closes it.
func TestProblemReports(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		ctx := context.Background()
		bobc, bob := env.User(t, "bob", "author")
		_, carl := env.User(t, "carl", "author")
		_, ulla := env.User(t, "ulla", "user")
		if _, _, err := bobc.CreateTool(ctx, "crash", "Kraschar", "", crashTool, true); err != nil {
			t.Fatal(err)
		}
		failedRun := func() string {
			t.Helper()
			a := runUpload(t, env, ulla.Token, "crash", []string{"klass.csv"}, []string{"namn\nAda\n"}, `{}`, "")
			if a.status != 201 || a.body["status"] != "failed" {
				t.Fatalf("run: %d %s", a.status, a.raw)
			}
			return a.body["run_id"].(string)
		}
		first := failedRun()
		report := func(token, run, body string) answer {
			t.Helper()
			return call(t, env, "POST", "/api/v1/runs/"+run+"/report", token, strings.NewReader(body))
		}
		reason := func(a answer) string {
			e, _ := a.body["error"].(map[string]any)
			d, _ := e["details"].(map[string]any)
			s, _ := d["reason"].(string)
			return s
		}
		// Runs are private: anyone but the owner, the tool's author included, is told
		// there is no such run; an admin, who sees every run, that only its owner
		// reports it.
		for _, tok := range []string{carl.Token, bob.Token} {
			if a := report(tok, first, `{"message": "x"}`); a.status != 404 || reason(a) != "run_not_found" {
				t.Fatalf("a report by someone else: %d %s", a.status, a.raw)
			}
		}
		if a := report(env.AdminToken, first, `{"message": "x"}`); a.status != 404 || reason(a) != "not_run_owner" {
			t.Fatalf("a report by an admin: %d %s", a.status, a.raw)
		}
		if a := report(ulla.Token, first, `{"message": "`+strings.Repeat("a", 4001)+`"}`); a.status != 400 || reason(a) != "invalid_report" {
			t.Fatalf("a message over 4000 bytes: %d %s", a.status, a.raw)
		}
		if a := report(ulla.Token, first, `{"message": "x", "files": true}`); a.status != 400 {
			t.Fatalf("an unknown field: %d %s", a.status, a.raw)
		}
		a := report(ulla.Token, first, `{"message": "Det kraschade när jag laddade upp klasslistan."}`)
		if a.status != 201 || a.body["status"] != "open" || a.body["reporter"] != "ulla" || a.body["tool"] != "crash" || a.body["share_files"] != false ||
			a.body["run_id"] != first || !strings.Contains(a.body["error_summary"].(string), "Tool execution failed") {
			t.Fatalf("report: %d %s", a.status, a.raw)
		}
		if _, ok := a.body["input_files"]; ok {
			t.Fatalf("a report without shared files names them: %s", a.raw)
		}
		firstReport := a.body["id"].(string)
		if a := report(ulla.Token, first, `{}`); a.status != 409 || reason(a) != "run_reported" {
			t.Fatalf("a second report: %d %s", a.status, a.raw)
		}
		second := failedRun()
		a = report(ulla.Token, second, `{"share_files": true}`)
		if a.status != 201 || a.body["message"] != "" || a.body["share_files"] != true {
			t.Fatalf("a report sharing files: %d %s", a.status, a.raw)
		}
		secondReport := a.body["id"].(string)

		list := func(token, query string) answer {
			t.Helper()
			a := call(t, env, "GET", "/api/v1/reports"+query, token, nil)
			if a.status != 200 {
				t.Fatalf("GET /api/v1/reports%s: %d %s", query, a.status, a.raw)
			}
			return a
		}
		reports := func(a answer) []map[string]any {
			var out []map[string]any
			for _, x := range a.body["reports"].([]any) {
				out = append(out, x.(map[string]any))
			}
			return out
		}
		// The author sees both, newest first; the shared one names the file.
		got := reports(list(bob.Token, ""))
		if len(got) != 2 || got[0]["id"] != secondReport || got[1]["id"] != firstReport {
			t.Fatalf("bob's reports: %v", got)
		}
		files, _ := got[0]["input_files"].([]any)
		if len(files) != 1 || files[0].(map[string]any)["name"] != "klass.csv" || files[0].(map[string]any)["bytes"] != float64(9) {
			t.Fatalf("the shared report's files: %v", got[0])
		}
		if _, ok := got[1]["input_files"]; ok || got[1]["message"] != "Det kraschade när jag laddade upp klasslistan." {
			t.Fatalf("the unshared report: %v", got[1])
		}
		if got := reports(list(env.AdminToken, "")); len(got) != 2 {
			t.Fatalf("the admin's reports: %v", got)
		}
		for _, tok := range []string{carl.Token, ulla.Token} {
			if got := reports(list(tok, "")); len(got) != 0 {
				t.Fatalf("someone who maintains no tool sees %v", got)
			}
			if a := call(t, env, "GET", "/api/v1/reports/"+firstReport, tok, nil); a.status != 404 || reason(a) != "report_not_found" {
				t.Fatalf("reading another's report: %d %s", a.status, a.raw)
			}
			if a := call(t, env, "POST", "/api/v1/reports/"+firstReport+"/close", tok, nil); a.status != 404 {
				t.Fatalf("closing another's report: %d %s", a.status, a.raw)
			}
		}

		// Pages of one.
		p1 := list(bob.Token, "?limit=1")
		cursor, _ := p1.body["next_cursor"].(string)
		if r := reports(p1); len(r) != 1 || r[0]["id"] != secondReport || cursor == "" {
			t.Fatalf("page 1: %s", p1.raw)
		}
		p2 := list(bob.Token, "?limit=1&cursor="+url.QueryEscape(cursor))
		if r := reports(p2); len(r) != 1 || r[0]["id"] != firstReport || p2.body["next_cursor"] != nil {
			t.Fatalf("page 2: %s", p2.raw)
		}
		for _, q := range []string{"?cursor=nope", "?limit=0", "?limit=x"} {
			if a := call(t, env, "GET", "/api/v1/reports"+q, bob.Token, nil); a.status != 400 || reason(a) != "invalid_report" {
				t.Fatalf("GET /api/v1/reports%s: %d %s", q, a.status, a.raw)
			}
		}

		// The author closes one.
		a = call(t, env, "POST", "/api/v1/reports/"+firstReport+"/close", bob.Token, nil)
		if a.status != 200 || a.body["status"] != "closed" || a.body["closed_at"] == nil {
			t.Fatalf("close: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "GET", "/api/v1/reports/"+firstReport, env.AdminToken, nil); a.status != 200 || a.body["status"] != "closed" {
			t.Fatalf("the closed report: %d %s", a.status, a.raw)
		}

		// A run still going is reported once it is over.
		publish(t, env, "sleep", sleepTool)
		slow := runUpload(t, env, ulla.Token, "sleep", nil, nil, `{"s": 60}`, "?wait=0s")
		if slow.status != 202 {
			t.Fatalf("slow run: %d %s", slow.status, slow.raw)
		}
		slowID := slow.body["run_id"].(string)
		if a := report(ulla.Token, slowID, `{}`); a.status != 409 || reason(a) != "run_not_finished" {
			t.Fatalf("reporting a running run: %d %s", a.status, a.raw)
		}
		call(t, env, "POST", "/api/v1/runs/"+slowID+"/cancel", ulla.Token, nil)
	})
}
