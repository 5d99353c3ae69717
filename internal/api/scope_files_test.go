package api_test

import (
	"strings"
	"testing"

	"github.com/skrip-dev/skrip/internal/apptest"
)

// TestRunsTokenCannotRunOnStagedFiles: a token kept to the runs scope does not reach the
// user's staged files through a JSON run's file_keys, which would copy them into a run
// the token controls (a review found it did); the sandboxes' stage asks the same.
func TestRunsTokenCannotRunOnStagedFiles(t *testing.T) {
	apptest.EachOf(t, []apptest.Backend{apptest.BlobBackends[0]}, func(t *testing.T, b apptest.Backend) {
		env := apptest.Start(t, apptest.Config(t, b))
		_, anna := env.User(t, "anna", "author")
		runsOnly := issue(t, env, anna.Token, "anna", `{"name":"r","scope":["runs"]}`).Secret
		stage(t, env, anna.Token, "files/secret.txt", "", "secret")
		// The runs token cannot read the file itself...
		if a := send(t, env, "GET", "/api/v1/files/files/secret.txt", runsOnly, "", nil); a.status != 403 {
			t.Fatalf("GET with a runs token: %d", a.status)
		}
		// ...but a run-sandbox of the author's own version (arbitrary code) gets it.
		vid := createWithSchema(t, env, anna.Token, "leak", "", false)
		a := postJSONRun(t, env, runsOnly, "/api/v1/editor/tool-versions/"+vid+"/run-sandbox", `{"file_keys": ["files/secret.txt"]}`)
		if a.status != 403 {
			_, files := runValue(t, a)
			t.Fatalf("a runs-scoped token ran on staged files %v (%d); want 403 token_scope", files, a.status)
		}
		if a.errCode() != "forbidden" || !strings.Contains(a.raw, "token_scope") {
			t.Fatalf("the refusal: %s", a.raw)
		}
		// With files in its scope, it may.
		both := issue(t, env, anna.Token, "anna", `{"name":"rf","scope":["runs","files"]}`).Secret
		if a := postJSONRun(t, env, both, "/api/v1/editor/tool-versions/"+vid+"/run-sandbox", `{"file_keys": ["files/secret.txt"]}`); a.status >= 400 {
			t.Fatalf("a runs+files token: %d %s", a.status, a.raw)
		}
	})
}
