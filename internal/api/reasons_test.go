package api_test

import (
	"io"
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestReasonsTellFailuresApart: failures that share a status and a code (404 not_found,
// 409 conflict) differ in details.reason, so a client can tell a missing tool from a
// missing run without parsing the message.
func TestReasonsTellFailuresApart(t *testing.T) {
	apptest.Each(t, func(t *testing.T, b apptest.Backend) {
		env := apptest.New(t, b)
		tool := `{"slug":"x","title":"X","source":"def run_tool(input_dir, output_dir):\n    return {}"}`
		if a := call(t, env, "POST", "/api/v1/tools", env.AdminToken, strings.NewReader(tool)); a.status != 201 {
			t.Fatalf("creating tool x: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "POST", "/api/v1/users", env.AdminToken, strings.NewReader(`{"name":"carol"}`)); a.status != 201 {
			t.Fatalf("creating carol: %d %s", a.status, a.raw)
		}
		seen := map[string]string{}
		for _, tc := range []struct {
			name, method, path, body string
			status                   int
			code, reason             string
		}{
			{"missing tool", "GET", "/api/v1/tools/nope", "", 404, "not_found", "tool_not_found"},
			{"missing run", "GET", "/api/v1/runs/nope", "", 404, "not_found", "run_not_found"},
			{"missing version", "GET", "/api/v1/tool-versions/nope", "", 404, "not_found", "version_not_found"},
			{"missing sandbox", "GET", "/api/v1/sandboxes/nope", "", 404, "not_found", "sandbox_not_found"},
			{"missing file", "GET", "/api/v1/files/files/nope", "", 404, "not_found", "file_not_found"},
			{"no route", "GET", "/api/v1/nope", "", 404, "not_found", "no_route"},
			{"duplicate user", "POST", "/api/v1/users", `{"name":"carol"}`, 409, "conflict", "user_exists"},
			{"duplicate tool", "POST", "/api/v1/tools", tool, 409, "conflict", "tool_exists"},
			{"bad context", "GET", "/api/v1/tools/x/sessions/bogus", "", 400, "invalid_request", "invalid_context"},
			{"bad role", "POST", "/api/v1/users", `{"name":"dave","role":"root"}`, 400, "invalid_request", "invalid_account"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
				}
				a := call(t, env, tc.method, tc.path, env.AdminToken, body)
				e, _ := a.body["error"].(map[string]any)
				details, _ := e["details"].(map[string]any)
				reason, _ := details["reason"].(string)
				if a.status != tc.status || a.errCode() != tc.code || reason != tc.reason || a.errMessage() == "" {
					t.Fatalf("%s %s = %d %s; want %d %s with reason %s", tc.method, tc.path, a.status, a.raw, tc.status, tc.code, tc.reason)
				}
				if other, ok := seen[reason]; ok {
					t.Errorf("%s and %s give the same reason %s", other, tc.name, reason)
				}
				seen[reason] = tc.name
			})
		}
	})
}
