package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skrip-dev/skrip/internal/apptest"
	"github.com/skrip-dev/skrip/internal/client"
)

// TestMaintainersRoute drives GET|POST|DELETE /api/v1/tools/{tool}/maintainers and what a
// maintainer may then do (docs/api.md "Maintainers"): a maintainer the author adds may
// edit the tool, add and publish versions, read them, try them in the editor sandbox
// (runs, session, settings),
// unpublish the tool, sees its draft among their tools and its problem reports; an
// author who is not one may do none of it. Every refusal: a non-maintainer (403 on a
// published tool, 404 on a draft), a user-role or unknown or disabled user to add (400),
// an empty user (400), the author or the last maintainer to remove (409), a
// non-maintainer to remove (404). Adding and removing are audited.
func TestMaintainersRoute(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		ctx := context.Background()
		annac, anna := env.User(t, "anna", "author")
		bobc, bob := env.User(t, "bob", "author")
		cyc, cy := env.User(t, "cy", "author")
		_, ulf := env.User(t, "ulf", "user")
		_, dora := env.User(t, "dora", "author")
		if _, err := env.Admin.DisableUser(ctx, dora.ID); err != nil {
			t.Fatal(err)
		}
		tool, v1, err := annac.CreateTool(ctx, "crash", "Kraschar", "", crashTool, false)
		if err != nil {
			t.Fatal(err)
		}
		req := func(method, path, token, body string) answer {
			t.Helper()
			var r *strings.Reader
			if body != "" {
				r = strings.NewReader(body)
				return send(t, env, method, path, token, "application/json", r)
			}
			return send(t, env, method, path, token, "", nil)
		}
		wantError := func(what string, a answer, status int, reason string) {
			t.Helper()
			if a.status != status || a.reason() != reason || a.errMessage() == "" {
				t.Fatalf("%s: %d %s; want %d (%s) with a message", what, a.status, a.raw, status, reason)
			}
		}
		base := "/api/v1/tools/crash/maintainers"

		// Before bob is one: the draft is not his to see.
		wantError("bob lists a draft's maintainers", req("GET", base, bob.Token, ""), 404, "tool_not_found")
		wantError("bob adds himself to a draft", req("POST", base, bob.Token, `{"user":"bob"}`), 404, "tool_not_found")
		if _, err := bobc.EditorRun(ctx, v1.ID, nil, nil, time.Minute); !client.IsCode(err, "not_found") {
			t.Fatalf("bob's sandbox run before he maintains it: %v", err)
		}

		a := req("GET", base, anna.Token, "")
		list, _ := a.body["maintainers"].([]any)
		if a.status != 200 || a.body["count"] != float64(1) || len(list) != 1 || list[0].(map[string]any)["name"] != "anna" || list[0].(map[string]any)["author"] != true {
			t.Fatalf("a new tool's maintainers: %d %s", a.status, a.raw)
		}
		// Who may be added.
		wantError("a user-role user", req("POST", base, anna.Token, `{"user":"ulf"}`), 400, "invalid_maintainer")
		wantError("an unknown user", req("POST", base, anna.Token, `{"user":"nobody"}`), 400, "invalid_maintainer")
		wantError("a disabled author", req("POST", base, anna.Token, `{"user":"dora"}`), 400, "invalid_maintainer")
		wantError("no user", req("POST", base, anna.Token, `{"user":""}`), 400, "invalid_maintainer")
		wantError("a long user", req("POST", base, anna.Token, `{"user":"`+strings.Repeat("x", 300)+`"}`), 400, "invalid_maintainer")
		if a := req("POST", base, anna.Token, `{"user":"bob","extra":1}`); a.status != 400 {
			t.Fatalf("an unknown field: %d %s", a.status, a.raw)
		}
		a = req("POST", base, anna.Token, `{"user":"bob"}`)
		if a.status != 201 || a.body["name"] != "bob" || a.body["user_id"] != bob.ID || a.body["author"] != false || a.body["added_by"] != anna.ID {
			t.Fatalf("anna adds bob: %d %s", a.status, a.raw)
		}
		if a := req("POST", base, anna.Token, `{"user":"`+bob.ID+`"}`); a.status != 200 || a.body["name"] != "bob" {
			t.Fatalf("adding bob again, by id: %d %s", a.status, a.raw)
		}

		// Bob now does what the author does.
		if _, err := bobc.UpdateTool(ctx, "crash", client.ToolInfo{Title: ptr("Kraschar ibland")}); err != nil {
			t.Fatalf("bob edits the tool: %v", err)
		}
		v2, err := bobc.AddVersion(ctx, "crash", client.NewVersion{Source: crashTool + "\n# bob\n"})
		if err != nil {
			t.Fatalf("bob saves a version: %v", err)
		}
		if _, err := bobc.VersionOf(ctx, v1.ID); err != nil {
			t.Fatalf("bob reads anna's version: %v", err)
		}
		if rn, err := bobc.EditorRun(ctx, v2.ID, nil, nil, time.Minute); err != nil || rn.Status != "failed" {
			t.Fatalf("bob's sandbox run: %+v %v", rn, err)
		}
		if _, err := bobc.EditorSession(ctx, v2.ID); err != nil && !client.IsCode(err, "not_found") {
			t.Fatalf("bob's sandbox session: %v", err)
		}
		tools, err := bobc.Tools(ctx)
		if err != nil || !hasTool(tools, "crash") {
			t.Fatalf("bob's tools lack the draft he maintains: %+v %v", tools, err)
		}
		if _, err := bobc.EditorSettings(ctx, v2.ID); err != nil {
			t.Fatalf("bob's editor settings: %v", err)
		}
		if _, err := bobc.Publish(ctx, v2.ID); err != nil {
			t.Fatalf("bob publishes: %v", err)
		}
		if _, err := cyc.Unpublish(ctx, "crash"); !client.IsCode(err, "forbidden") {
			t.Fatalf("cy unpublishes: %v", err)
		}
		if _, err := cyc.EditorSettings(ctx, v2.ID); !client.IsCode(err, "not_found") {
			t.Fatalf("cy's editor settings: %v", err)
		}
		if _, err := bobc.Unpublish(ctx, "crash"); err != nil {
			t.Fatalf("bob unpublishes: %v", err)
		}
		if _, err := bobc.Publish(ctx, v2.ID); err != nil {
			t.Fatalf("bob publishes again: %v", err)
		}
		// Cy, an author who is not a maintainer, may do none of it on the published tool.
		wantError("cy lists", req("GET", base, cy.Token, ""), 403, "not_tool_author")
		wantError("cy adds himself", req("POST", base, cy.Token, `{"user":"cy"}`), 403, "not_tool_author")
		wantError("cy removes bob", req("DELETE", base+"/bob", cy.Token, ""), 403, "not_tool_author")
		wantError("a user lists", req("GET", base, ulf.Token, ""), 403, "not_tool_author")
		if _, err := cyc.UpdateTool(ctx, "crash", client.ToolInfo{Title: ptr("Mine")}); !client.IsCode(err, "forbidden") {
			t.Fatalf("cy edits: %v", err)
		}
		if _, err := cyc.AddVersion(ctx, "crash", client.NewVersion{Source: crashTool}); !client.IsCode(err, "forbidden") {
			t.Fatalf("cy saves a version: %v", err)
		}
		if _, err := cyc.EditorRun(ctx, v2.ID, nil, nil, time.Minute); !client.IsCode(err, "not_found") {
			t.Fatalf("cy's sandbox run: %v", err)
		}
		if _, err := cyc.Publish(ctx, v1.ID); !client.IsCode(err, "not_found") {
			t.Fatalf("cy publishes: %v", err)
		}

		// A problem report reaches bob, not cy.
		rn := runUpload(t, env, ulf.Token, "crash", []string{"klass.csv"}, []string{"namn\nAda\n"}, `{}`, "")
		if rn.status != 201 || rn.body["status"] != "failed" {
			t.Fatalf("ulf's run: %d %s", rn.status, rn.raw)
		}
		if a := call(t, env, "POST", "/api/v1/runs/"+rn.body["run_id"].(string)+"/report", ulf.Token, strings.NewReader(`{"message":"hjälp"}`)); a.status != 201 {
			t.Fatalf("ulf reports: %d %s", a.status, a.raw)
		}
		for tok, want := range map[string]float64{bob.Token: 1, cy.Token: 0, anna.Token: 1} {
			a := req("GET", "/api/v1/reports", tok, "")
			if reports, _ := a.body["reports"].([]any); a.status != 200 || float64(len(reports)) != want {
				t.Fatalf("reports listed: %d %s; want %v", a.status, a.raw, want)
			}
		}

		// Removing: never the author, never someone who is not one.
		wantError("bob removes anna, the author", req("DELETE", base+"/anna", bob.Token, ""), 409, "maintainer_kept")
		wantError("removing cy, not one", req("DELETE", base+"/cy", anna.Token, ""), 404, "maintainer_not_found")
		wantError("removing nobody", req("DELETE", base+"/nobody", anna.Token, ""), 404, "maintainer_not_found")
		wantError("removing with an empty body", req("DELETE", base, anna.Token, `{"user":""}`), 400, "invalid_maintainer")
		// An admin adds cy; bob removes cy with a body, as SPEC's route has it.
		if a := req("POST", base, env.AdminToken, `{"user":"cy"}`); a.status != 201 {
			t.Fatalf("an admin adds cy: %d %s", a.status, a.raw)
		}
		if a := req("DELETE", base, bob.Token, `{"user":"cy"}`); a.status != 204 {
			t.Fatalf("bob removes cy: %d %s", a.status, a.raw)
		}
		// Bob leaves; then he is refused again.
		if err := bobc.RemoveMaintainer(ctx, "crash", "bob"); err != nil {
			t.Fatalf("bob removes himself: %v", err)
		}
		if _, err := bobc.UpdateTool(ctx, "crash", client.ToolInfo{Title: ptr("Igen")}); !client.IsCode(err, "forbidden") {
			t.Fatalf("bob edits after leaving: %v", err)
		}

		// The author deleted: the last maintainer left stays.
		if a := req("POST", base, anna.Token, `{"user":"bob"}`); a.status != 201 {
			t.Fatalf("anna adds bob again: %d %s", a.status, a.raw)
		}
		if err := env.Admin.DeleteUser(ctx, anna.ID); err != nil {
			t.Fatal(err)
		}
		wantError("bob, the last maintainer, leaves", req("DELETE", base+"/bob", bob.Token, ""), 409, "maintainer_kept")
		if _, err := bobc.UpdateTool(ctx, "crash", client.ToolInfo{Title: ptr("Bobs nu")}); err != nil {
			t.Fatalf("bob edits after the author was deleted: %v", err)
		}

		// The audit log names each change.
		page, err := env.Admin.Audit(ctx, 100, "")
		if err != nil {
			t.Fatal(err)
		}
		var added, removed int
		for _, e := range page.Events {
			if e.Target != "crash" {
				continue
			}
			switch e.Action {
			case "maintainer_added":
				added++
			case "maintainer_removed":
				removed++
			}
		}
		if added != 3 || removed != 2 {
			t.Fatalf("audit: %d added, %d removed; want 3 and 2: %+v", added, removed, page.Events)
		}
		_ = tool
	})
}

func ptr(s string) *string { return &s }

func hasTool(list []client.Tool, slug string) bool {
	for _, t := range list {
		if t.Slug == slug {
			return true
		}
	}
	return false
}
