package api_test

import (
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestDemotedMaintainerChangesNothing: a maintainer whose role drops to "user" (an admin's
// PATCH, or sign-on's role map at the next sign-in) no longer runs code in the editor
// sandbox or adds maintainers through the API, as the web editor refuses them (a review
// found the API let them).
func TestDemotedMaintainerChangesNothing(t *testing.T) {
	apptest.EachOf(t, []apptest.Backend{apptest.BlobBackends[0]}, func(t *testing.T, b apptest.Backend) {
		env := apptest.Start(t, apptest.Config(t, b))
		_, adm := env.User(t, "adm", "admin")
		_, anna := env.User(t, "anna", "author")
		_, bo := env.User(t, "bo", "author")
		env.User(t, "cy", "author")
		vid := createWithSchema(t, env, anna.Token, "shared", "", false)
		if a := call(t, env, "POST", "/api/v1/tools/shared/maintainers", anna.Token, strings.NewReader(`{"user":"bo"}`)); a.status != 201 {
			t.Fatalf("add bo: %d %s", a.status, a.raw)
		}
		if a := call(t, env, "PATCH", "/api/v1/users/bo", adm.Token, strings.NewReader(`{"role":"user"}`)); a.status != 200 {
			t.Fatalf("demote bo: %d %s", a.status, a.raw)
		}
		var bad []string
		if a := postJSONRun(t, env, bo.Token, "/api/v1/editor/tool-versions/"+vid+"/run-sandbox", `{}`); a.status < 400 {
			bad = append(bad, "run-sandbox "+a.raw[:min(len(a.raw), 40)])
		}
		if a := call(t, env, "POST", "/api/v1/tools/shared/maintainers", bo.Token, strings.NewReader(`{"user":"cy"}`)); a.status < 400 {
			bad = append(bad, "add maintainer")
		}
		if len(bad) > 0 {
			t.Fatalf("a maintainer demoted to user still may: %v", bad)
		}
	})
}
